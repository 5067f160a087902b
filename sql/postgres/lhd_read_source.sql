-- Every source row's key, hash and state in the family's last version, then the
-- columns the lHD release publishes (raw values; the model generalizes them).
SELECT CAST(src.{key} AS text) AS record_key,
       md5(CAST(ROW({hashed}) AS text)) AS row_hash,
       coalesce(m.cell_id, -1) AS prev_cell,
       coalesce(m.status, 'new') AS prev_status,
       coalesce(m.row_hash, '') AS prev_hash,
       {columns}
FROM {source} AS src
LEFT JOIN sqlanon.members AS m
  ON m.family = $1 AND m.version = $2 AND m.record_key = CAST(src.{key} AS text)
