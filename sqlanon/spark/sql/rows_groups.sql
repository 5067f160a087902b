-- Spark's form of sqlanon/duckdb/sql/rows_groups.sql: each group's size and two
-- order-free fingerprints, summed as DECIMAL(38, 0) (a sum of 64-bit hashes overflows a
-- BIGINT, an error under ANSI mode). A match is only a candidate: rows_unequal.sql.
CREATE TEMP TABLE _sqlanon_new_groups AS
SELECT t.{group} AS group_id, count(*) AS n,
       sum(CAST(xxhash64({who_t}) AS DECIMAL(38, 0))) AS who,
       sum(CAST(xxhash64({what_t}) AS DECIMAL(38, 0))) AS what
FROM {staging} AS t
GROUP BY t.{group};
CREATE TEMP TABLE _sqlanon_open_groups AS
SELECT t.{group} AS group_id, count(*) AS n,
       sum(CAST(xxhash64({who_t}) AS DECIMAL(38, 0))) AS who,
       sum(CAST(xxhash64({what_t}) AS DECIMAL(38, 0))) AS what
FROM {rows} AS t
GROUP BY t.{group}
