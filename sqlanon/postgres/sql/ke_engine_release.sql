-- The release table (PostgreSQL's twin of sqlanon/duckdb/sql/ke_engine_release.sql; why
-- this shuffle is sound: sqlanon/release/engine_path.py, shuffle_key): h here is the
-- first 64 bits of SHA-256 of the per-release secret $1 and the key (bytea: its bytes order as DuckDB's unsigned integer does);
-- within a group the record of rank i by h gets the group's i-th smallest value (each run of equal values expanded to its ranks: PostgreSQL has no
-- ASOF join); rows come in the order of h.
CREATE TABLE {release} AS
WITH assigned AS (
    SELECT r.*, p.group_id,
           pg_catalog.substr(pg_catalog.sha256(pg_catalog.convert_to($1 || CAST(r.record_value AS text), 'UTF8')), 1, 8) AS h
    FROM _sqlanon_read AS r
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
    SELECT {quasi_a}, group_id, h,
           pg_catalog.row_number() OVER (PARTITION BY group_id ORDER BY h, record_value) AS i
    FROM assigned
)
SELECT {quasi_out}, who.group_id, ranks.v AS {sensitive}
FROM who
JOIN ranks ON ranks.group_id = who.group_id AND ranks.i = who.i
ORDER BY who.h, who.group_id, who.i
