-- Every source row with its state in the last version (NULLs when never seen).
SELECT CAST(src.{key} AS text) AS record_key,
       CAST(src.{sensitive} AS double precision) AS s,
       md5(CAST(ROW({hashed}) AS text)) AS row_hash,
       coalesce(m.group_id, -1) AS prev_group,
       coalesce(m.cell_id, -1) AS prev_cell,
       coalesce(m.status, 'new') AS prev_status,
       coalesce(m.row_hash, '') AS prev_hash
FROM {source} AS src
LEFT JOIN sqlanon.members AS m
  ON m.family = $1 AND m.version = $2 AND m.record_key = CAST(src.{key} AS text)
