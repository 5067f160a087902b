-- The values this release publishes, per group: one row per (group, value) with its
-- number of records, in the sensitive column's own type (`{sensitive_a}` of the read), for
-- values the plan's entries cannot give exactly (they hold the value as a double):
-- DECIMAL, floats, large integers. The release table pairs records with them
-- (sqlanon/duckdb/sql/ke_engine_release.sql) and the bounds table is built from them
-- (sqlanon/sql/ke_bounds_from_runs_sums.sql), neither scanning the rows again.
CREATE TEMP TABLE _sqlanon_runs AS
SELECT p.group_id, r.{sensitive_a} AS value, count(*) AS c
FROM _sqlanon_read AS r
JOIN _sqlanon_plan AS p ON {plan_match}
WHERE p.group_id >= 0
GROUP BY p.group_id, r.{sensitive_a}
