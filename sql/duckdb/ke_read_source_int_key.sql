-- sql/duckdb/ke_read_source.sql for an integer key: the key arrives as it is (a BIGINT
-- column converts to and from text at a cost of about 0.1 s per 10^6 rows each way).
SELECT src.{key} AS record_key,
       CAST(src.{sensitive} AS DOUBLE) AS s,
       coalesce(m.group_id, -1) AS prev_group,
       coalesce(m.cell_id, -1) AS prev_cell,
       coalesce(m.status = 'published', false) AS published_before,
       hash({hashed}) AS row_hash,
       coalesce(m.row_hash <> hash({hashed}), false) AS changed
FROM {source} AS src
LEFT JOIN sqlanon.members AS m
  ON m.family = $1 AND m.version = $2 AND m.record_key = CAST(src.{key} AS VARCHAR)
