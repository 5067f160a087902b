-- The row path's read of an lHD release: lhd_read_source.sql (appended by
-- sqlanon/release/lhd_rows.py) in key order, the order the engine path's units follow.
SELECT * FROM (
