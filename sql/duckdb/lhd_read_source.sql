-- Every source row's key and state in the family's last version, its fingerprint
-- `row_hash` and `changed` (both as in sql/duckdb/ke_read_source.sql), then the columns
-- the lHD release publishes (raw values; the model generalizes them).
SELECT CAST(src.{key} AS VARCHAR) AS record_key,
       coalesce(m.cell_id, -1) AS prev_cell,
       coalesce(m.status = 'published', false) AS published_before,
       hash({hashed}) AS row_hash,
       coalesce(m.row_hash <> hash({hashed}), false) AS changed,
       {columns}
FROM {source} AS src
LEFT JOIN sqlanon.members AS m
  ON m.family = $1 AND m.version = $2 AND m.record_key = CAST(src.{key} AS VARCHAR)
