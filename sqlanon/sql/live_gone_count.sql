-- How many records sqlanon/sql/live_gone.sql finds gone (appended by
-- sqlanon/release/lhd_engine.py): any sends an lHD release down the row path.
SELECT count(*) FROM (
