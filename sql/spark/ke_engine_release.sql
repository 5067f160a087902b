-- sql/duckdb/ke_engine_release.sql in Spark SQL, with the same shuffle: each record
-- gets h, the first 64 bits of SHA-256 of the per-release secret $1 and its key (as an
-- unsigned number: DECIMAL(20, 0)); within a group the record of rank i by (h, key)
-- gets the group's i-th smallest value. Spark has no ASOF join: each run of equal
-- values is exploded into its ranks (one row per record, as many as the group has),
-- then joined on (group, rank), an equi-join. Same secret, same plan: the same table
-- as DuckDB's.
CREATE TABLE {release} USING parquet AS
WITH assigned AS (
    SELECT r.*, p.group_id,
           CAST(conv(substr(sha2(concat($1, CAST(r.record_value AS STRING)), 256), 1, 16), 16, 10)
                AS DECIMAL(20, 0)) AS h
    FROM _sqlanon_read AS r
    JOIN _sqlanon_plan AS p ON {plan_match}
    WHERE p.group_id >= 0
), runs AS (
    SELECT group_id, {sensitive_a} AS v, count(*) AS c
    FROM assigned
    GROUP BY group_id, {sensitive_a}
), ranks AS (
    SELECT group_id, v,
           sum(c) OVER (PARTITION BY group_id ORDER BY v
                        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - c + 1 AS lo, c
    FROM runs
), ranked AS (
    SELECT group_id, v, explode(sequence(lo, lo + c - 1)) AS i
    FROM ranks
), who AS (
    SELECT {quasi_a}, group_id, h,
           row_number() OVER (PARTITION BY group_id ORDER BY h, record_value) AS i
    FROM assigned
)
SELECT {quasi_out}, who.group_id, ranked.v AS {sensitive}
FROM who
JOIN ranked ON ranked.group_id = who.group_id AND ranked.i = who.i
ORDER BY who.h, who.group_id, who.i
