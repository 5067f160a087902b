-- A (k,e) release with ghosts (README, "Changing tables"): sqlanon/duckdb/sql/ke_engine_release.sql
-- over the rows and the ghosts (_sqlanon_ghost_read: NULL quasi-identifiers, ghost = true),
-- each keyed by its key as text or its ghost id; the same shuffle, the same order.
CREATE TABLE {release} AS
WITH rows_and_ghosts AS (
    SELECT CAST(r.record_value AS VARCHAR) AS rk, {quasi_r}, r.{sensitive_a}, {key_r},
           false AS ghost
    FROM _sqlanon_read AS r
    UNION ALL
    SELECT g.record_key, {quasi_n}, g.{sensitive_a}, {key_g}, true
    FROM _sqlanon_ghost_read AS g
    LEFT JOIN _sqlanon_read AS n ON false  -- NULL quasi-identifiers of the columns' types
), assigned AS (
    SELECT r.*, p.group_id, CAST('0x' || substr(sha256($1 || rk), 1, 16) AS UBIGINT) AS h
    FROM rows_and_ghosts AS r
    JOIN _sqlanon_plan AS p ON {plan_match}
    WHERE p.group_id >= 0
), runs AS (
    SELECT group_id, {sensitive_a} AS v, count(*) AS c
    FROM assigned
    GROUP BY group_id, {sensitive_a}
), ranks AS (
    SELECT group_id, v,
           sum(c) OVER (PARTITION BY group_id ORDER BY v
                        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - c + 1 AS lo
    FROM runs
), who AS (
    SELECT {quasi_a}, ghost, group_id, h,
           row_number() OVER (PARTITION BY group_id ORDER BY h, rk) AS i
    FROM assigned
)
SELECT {quasi_out}, who.group_id, ranks.v AS {sensitive}, who.ghost
FROM who
ASOF JOIN ranks ON ranks.group_id = who.group_id AND who.i >= ranks.lo
ORDER BY who.h, who.group_id, who.i
