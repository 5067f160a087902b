-- A (k,e) release with ghosts (README, "Changing tables"): sqlanon/postgres/sql/ke_engine_release.sql
-- over the rows and the ghosts (_sqlanon_ghost_read: NULL quasi-identifiers, ghost = true),
-- each keyed by its key as text or its ghost id; the same shuffle, the same order.
CREATE TABLE {release} AS
WITH rows_and_ghosts AS (
    SELECT CAST(r.record_value AS text) AS rk, {quasi_r}, r.{sensitive_a}, {key_r},
           false AS ghost
    FROM _sqlanon_read AS r
    UNION ALL
    SELECT g.record_key, {quasi_n}, g.{sensitive_a}, {key_g}, true
    FROM _sqlanon_ghost_read AS g
    LEFT JOIN _sqlanon_read AS n ON false  -- NULL quasi-identifiers of the columns' types
), assigned AS (
    SELECT r.*, p.group_id, pg_catalog.substr(pg_catalog.sha256(pg_catalog.convert_to($1 || rk, 'UTF8')), 1, 8) AS h
    FROM rows_and_ghosts AS r
    JOIN _sqlanon_plan AS p ON {plan_match}
    WHERE p.group_id >= 0
), runs AS (
    SELECT group_id, {sensitive_a} AS v, pg_catalog.count(*) AS c
    FROM assigned
    GROUP BY group_id, {sensitive_a}
), ranks AS (
    SELECT group_id, v, pg_catalog.generate_series(lo, lo + c - 1) AS i
    FROM (SELECT group_id, v, c,
                 CAST(pg_catalog.sum(c) OVER (PARTITION BY group_id ORDER BY v
                                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - c + 1
                      AS bigint) AS lo
          FROM runs) AS x
), who AS (
    SELECT {quasi_a}, ghost, group_id, h,
           pg_catalog.row_number() OVER (PARTITION BY group_id ORDER BY h, rk) AS i
    FROM assigned
)
SELECT {quasi_out}, who.group_id, ranks.v AS {sensitive}, who.ghost
FROM who
JOIN ranks ON ranks.group_id = who.group_id AND ranks.i = who.i
ORDER BY who.h, who.group_id, who.i
