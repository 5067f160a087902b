-- Every source row's key, its state in the family's last version and in the domain's
-- latest release, its fingerprints (all as in ke_read_source.sql), then the
-- columns the lHD release publishes (raw values; the model generalizes them) and those
-- the domain's cells constrain; `record_value`: the key as it is.
SELECT CAST(src.{key} AS text) AS record_key,
       src.{key} AS record_value,
       coalesce(m.status = 'published', false) AS published_before,
       m.record_key IS NOT NULL AS known,
       pg_catalog.hashtextextended(CAST(ROW({hashed}) AS text), 0) AS row_hash,
       CASE WHEN m.status IS DISTINCT FROM 'published' THEN false
            WHEN m.row_hash = pg_catalog.hashtextextended(CAST(ROW({hashed}) AS text), 0) THEN false
            ELSE m.row_hash <> CAST(CAST('x' || pg_catalog.substr(pg_catalog.md5(CAST(ROW({hashed}) AS text)), 1, 16) AS bit(64)) AS bigint)
       END AS changed,
       coalesce(CASE WHEN $5 = 1 THEN m.cell_id ELSE d.cell_id END, -1) AS domain_cell,
       pg_catalog.hashtextextended(CAST(ROW({value_hashed}) AS text), 0) AS value_hash,
       coalesce(CASE WHEN $5 = 1 THEN m.cell_id ELSE d.cell_id END IS NOT NULL
                AND CASE WHEN $5 = 1 THEN m.value_hash ELSE d.value_hash END <> pg_catalog.hashtextextended(CAST(ROW({old_hashed}) AS text), 0),
                false) AS value_changed,
       {columns}
FROM {source} AS src
LEFT JOIN sqlanon.members AS m
  ON m.family = $1 AND m.version = $2 AND m.record_key = CAST(src.{key} AS text)
LEFT JOIN sqlanon.members AS d
  ON d.family = $3 AND d.version = $4 AND d.record_key = CAST(src.{key} AS text)
