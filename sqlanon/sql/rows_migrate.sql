-- Migration 012: version {version} of a family released before rows were shared joins
-- its rows table as it is (valid at that version only, until rows_migrated.sql).
INSERT INTO {rows} ({columns}, sqlanon_first, sqlanon_last)
SELECT {columns}, {version}, {version} FROM {staging}
