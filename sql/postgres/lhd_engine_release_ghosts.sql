-- PostgreSQL's twin of sql/duckdb/lhd_engine_release_ghosts.sql (the domain's ghosts'
-- rows among the live ones, each row with its class's number of ghosts); rows in the
-- order of SHA-256 of the secret $1 and the key or ghost id.
CREATE TABLE {release} AS
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
ORDER BY sha256(convert_to($1 || x.k, 'UTF8'))
