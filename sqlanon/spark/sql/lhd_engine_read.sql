-- Spark's twin of sqlanon/duckdb/sql/lhd_engine_read.sql: `unit` is xxhash64 of the
-- values the planner tells records apart by (`{entry}`; each with whether it is NULL,
-- as Spark's hash skips a NULL and (NULL, 'a') would hash as ('a', NULL)); `seg` as
-- there. The planner reads one row per unit (sqlanon/sql/lhd_engine_units.sql), which
-- also proves no two distinct units share a hash.
CREATE TEMP TABLE _sqlanon_read AS
SELECT u.*, least(row_number() OVER (PARTITION BY u.unit ORDER BY u.record_key) - 1,
                  CAST($6 AS BIGINT)) AS seg
FROM (
SELECT r.*, xxhash64({entry}) AS unit
FROM (
