-- Migration 012: an older version {version} of a family released before rows were
-- shared joins its history as it is (shown at that version only).
INSERT INTO {history} ({columns}, sqlanon_first, sqlanon_last)
SELECT {columns}, {version}, {version} FROM {staging}
