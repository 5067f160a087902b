-- sqlanon/duckdb/sql/lhd_read_source.sql in Spark SQL (xxhash64 fingerprints, as in
-- sqlanon/spark/sql/ke_read_source.sql; STRING for VARCHAR).
SELECT CAST(src.{key} AS STRING) AS record_key,
       coalesce(m.status = 'published', false) AS published_before,
       m.record_key IS NOT NULL AS known,
       xxhash64({hashed}) AS row_hash,
       coalesce(m.row_hash <> xxhash64({hashed}), false) AS changed,
       coalesce(CASE WHEN $5 = 1 THEN m.cell_id ELSE d.cell_id END, -1) AS domain_cell,
       xxhash64({value_hashed}) AS value_hash,
       coalesce(CASE WHEN $5 = 1 THEN m.cell_id ELSE d.cell_id END IS NOT NULL
                AND CASE WHEN $5 = 1 THEN m.value_hash ELSE d.value_hash END <> xxhash64({old_hashed}), false) AS value_changed,
       {columns}
FROM {source} AS src
LEFT JOIN sqlanon.members AS m
  ON m.family = $1 AND m.version = $2 AND m.record_key = CAST(src.{key} AS STRING)
LEFT JOIN sqlanon.members AS d
  ON d.family = $3 AND d.version = $4 AND d.record_key = CAST(src.{key} AS STRING)
