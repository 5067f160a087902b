-- sqlanon/duckdb/sql/ke_engine_release.sql in Spark SQL, with a keyed order of its own
-- (sqlanon/release/engine_path.py, shuffle_key): each record gets h, the first 64 bits of
-- SHA-256 of the per-release secret $1 and its key (16
-- lowercase hex digits: they order as DuckDB's unsigned number does, without the 1.1 s
-- per 10^6 rows that conv() and a DECIMAL cast took); within a group the record of
-- rank i by (h, key) gets the group's i-th smallest value. Spark has no ASOF join: the
-- group's values are ranked too, by value, and the two sides joined on (group, rank). Both
-- windows are partitioned by group, so they run in parallel (expanding each run of
-- equal values into its ranks ran as one task: 31 s of a 10^7-row release). Equal
-- values are interchangeable, so this is the same pairing as DuckDB's, under its own h.
CREATE TABLE {release} USING parquet AS
WITH assigned AS (
    SELECT r.*, p.group_id,
           substr(sha2(concat($1, CAST(r.record_value AS STRING)), 256), 1, 16) AS h
    FROM _sqlanon_read AS r
    JOIN _sqlanon_plan AS p ON {plan_match}
    WHERE p.group_id >= 0
), vals AS (
    SELECT group_id, {sensitive_a} AS v,
           row_number() OVER (PARTITION BY group_id ORDER BY {sensitive_a}) AS i
    FROM assigned
), who AS (
    SELECT {quasi_a}, group_id, h,
           row_number() OVER (PARTITION BY group_id ORDER BY h, record_value) AS i
    FROM assigned
)
SELECT {quasi_out}, who.group_id, vals.v AS {sensitive}
FROM who
JOIN vals ON vals.group_id = who.group_id AND vals.i = who.i
ORDER BY who.h, who.group_id, who.i
