-- Every source row's key and state in the family's last version, its fingerprint
-- `row_hash` and `changed` (both as in sql/postgres/ke_read_source.sql), then the
-- columns the lHD release publishes (raw values; the model generalizes them).
SELECT CAST(src.{key} AS text) AS record_key,
       coalesce(m.cell_id, -1) AS prev_cell,
       coalesce(m.status = 'published', false) AS published_before,
       hashtextextended(CAST(ROW({hashed}) AS text), 0) AS row_hash,
       CASE WHEN m.status IS DISTINCT FROM 'published' THEN false
            WHEN m.row_hash = hashtextextended(CAST(ROW({hashed}) AS text), 0) THEN false
            ELSE m.row_hash <> CAST(CAST('x' || substr(md5(CAST(ROW({hashed}) AS text)), 1, 16) AS bit(64)) AS bigint)
       END AS changed,
       {columns}
FROM {source} AS src
LEFT JOIN sqlanon.members AS m
  ON m.family = $1 AND m.version = $2 AND m.record_key = CAST(src.{key} AS text)
