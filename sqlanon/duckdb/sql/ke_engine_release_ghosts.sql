-- A (k,e) release with ghosts (README, "Changing tables"): sqlanon/duckdb/sql/ke_engine_release.sql
-- over the rows and the ghosts (_sqlanon_ghost_read: NULL quasi-identifiers, ghost = true),
-- each keyed by its key as text or its ghost id; the same shuffle, the same order.
CREATE TABLE {release} AS
WITH rows_and_ghosts AS (
    SELECT CAST(r.record_value AS VARCHAR) AS rk, {quasi_r}, {key_r}, false AS ghost
    FROM _sqlanon_read AS r
    UNION ALL
    SELECT g.record_key, {quasi_n}, {key_g}, true
    FROM _sqlanon_ghost_read AS g
    LEFT JOIN _sqlanon_read AS n ON false  -- NULL quasi-identifiers of the columns' types
), vals AS (
    SELECT group_id, value
    FROM (SELECT group_id, value, unnest(range(c))
          FROM (SELECT group_id, value, c FROM _sqlanon_runs ORDER BY group_id, value))
), who AS (
    SELECT {quasi_a}, r.ghost, p.group_id
    FROM rows_and_ghosts AS r
    JOIN _sqlanon_plan AS p ON {plan_match}
    WHERE p.group_id >= 0
    ORDER BY p.group_id,
             hash(xor(hash(xor(hash(r.rk), CAST('0x' || substr($1, 1, 16) AS UBIGINT))),
                      CAST('0x' || substr($1, 17, 16) AS UBIGINT))),
             r.rk
)
SELECT {quasi_out}, who.group_id,
       CASE WHEN vals.group_id = who.group_id THEN vals.value
            ELSE error('sqlanon: release rows and values out of step') END AS {sensitive},
       who.ghost
FROM who POSITIONAL JOIN vals
