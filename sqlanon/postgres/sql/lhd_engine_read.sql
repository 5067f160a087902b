-- PostgreSQL's twin of sqlanon/duckdb/sql/lhd_engine_read.sql: `unit` hashes the text of the
-- row of the values the planner tells records apart by (`{entry}`); `seg` as there.
CREATE TEMP TABLE _sqlanon_read AS
SELECT u.*, least(pg_catalog.row_number() OVER (PARTITION BY u.unit ORDER BY u.record_key) - 1,
                  CAST($6 AS bigint)) AS seg
FROM (
SELECT r.*, pg_catalog.hashtextextended(CAST(ROW({entry}) AS text), 0) AS unit
FROM (
