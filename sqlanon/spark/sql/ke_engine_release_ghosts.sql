-- sqlanon/duckdb/sql/ke_engine_release_ghosts.sql in Spark SQL: sqlanon/spark/sql/ke_engine_release.sql
-- over the rows and the ghosts (_sqlanon_ghost_read: NULL quasi-identifiers, ghost =
-- true), each keyed by its key as text or its ghost id; the same shuffle, the same
-- order, the same pairing of ranks.
CREATE TABLE {release} USING parquet AS
WITH rows_and_ghosts AS (
    SELECT CAST(r.record_value AS STRING) AS rk, {quasi_r}, r.{sensitive_a}, {key_r},
           false AS ghost
    FROM _sqlanon_read AS r
    UNION ALL
    SELECT g.record_key, {quasi_n}, g.{sensitive_a}, {key_g}, true
    FROM _sqlanon_ghost_read AS g
    LEFT JOIN _sqlanon_read AS n ON false  -- NULL quasi-identifiers of the columns' types
), assigned AS (
    SELECT r.*, p.group_id,
           substr(sha2(concat($1, rk), 256), 1, 16) AS h
    FROM rows_and_ghosts AS r
    JOIN _sqlanon_plan AS p ON {plan_match}
    WHERE p.group_id >= 0
), vals AS (
    SELECT group_id, {sensitive_a} AS v,
           row_number() OVER (PARTITION BY group_id ORDER BY {sensitive_a}) AS i
    FROM assigned
), who AS (
    SELECT {quasi_a}, ghost, group_id, h,
           row_number() OVER (PARTITION BY group_id ORDER BY h, rk) AS i
    FROM assigned
)
SELECT {quasi_out}, who.group_id, vals.v AS {sensitive}, who.ghost
FROM who
JOIN vals ON vals.group_id = who.group_id AND vals.i = who.i
ORDER BY who.h, who.group_id, who.i
