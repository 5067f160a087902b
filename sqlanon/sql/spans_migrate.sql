-- Migration 012: the bounds of version {version} of a family released before rows were
-- shared join its bounds table as they are (valid at that version only, until
-- spans_migrated.sql).
INSERT INTO {rows} ({columns}, sqlanon_first, sqlanon_last)
SELECT {columns}, {version}, {version} FROM {staging}
