-- The lHD release table from the plan (_sqlanon_plan: per (unit, seg) its class and the
-- labels its quasi-identifiers are published at) joined to the rows: the labels, the
-- exact sensitive values, the class. Rows come in `{order}`: SHA-256 of the per-release
-- secret $1 and the key, a uniformly random order (why: sqlanon/release/ke_engine.py,
-- shuffle_key), which tells nothing about keys or the source's order.
CREATE TABLE {release} {table_format} AS
SELECT {labels}, {sensitive}, p.group_id AS class_id
FROM _sqlanon_read AS r
JOIN _sqlanon_plan AS p ON {plan_match}
WHERE p.group_id >= 0
ORDER BY {order}
