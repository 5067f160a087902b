-- PostgreSQL's twin of sql/duckdb/lhd_engine_release.sql (which says why the order is
-- sound): rows in the order of SHA-256 of the per-release secret $1 and the key.
CREATE TABLE {release} AS
SELECT {labels}, {sensitive}, p.group_id AS class_id
FROM _sqlanon_read AS r
JOIN _sqlanon_plan AS p ON {plan_match}
WHERE p.group_id >= 0
ORDER BY sha256(convert_to($1 || r.record_key, 'UTF8'))
