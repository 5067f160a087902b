-- sqlanon/sql/lhd_engine_release.sql with the domain's ghosts (README, "Changing
-- tables"): the ghosts' rows (_sqlanon_ghost_members: class and labels; their kept
-- values in _sqlanon_ghost_values) among the live ones, indistinguishable; every row
-- also shows its class's number of ghosts (class_ghosts), nothing that tells which rows
-- they are. Rows in `{order}`: SHA-256 of the secret $1 and the key or ghost id.
CREATE TABLE {release} {table_format} AS
SELECT {shown}, x.class_id, x.class_ghosts
FROM (
    SELECT {labels}, {sensitive}, p.group_id AS class_id, p.class_ghosts, r.record_key AS k
    FROM _sqlanon_read AS r
    JOIN _sqlanon_plan AS p ON {plan_match}
    WHERE p.group_id >= 0
    UNION ALL
    SELECT {ghost_labels}, {ghost_sensitive}, m.group_id, m.class_ghosts, m.record_key
    FROM _sqlanon_ghost_members AS m
    JOIN _sqlanon_ghost_values AS g ON g.record_key = m.record_key
    WHERE m.group_id >= 0
) AS x
ORDER BY {order}
