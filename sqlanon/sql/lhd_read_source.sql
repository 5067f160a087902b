-- Every source row's key, its state in the family's last version and in the domain's
-- latest release, its fingerprints (all as in ke_read_source.sql), then the
-- columns the lHD release publishes (raw values; the model generalizes them) and those
-- the domain's cells constrain; `record_value`: the key as it is.
SELECT CAST(src.{key} AS {text_type}) AS record_key,
       src.{key} AS record_value,
       coalesce(m.status = 'published', false) AS published_before,
       m.record_key IS NOT NULL AS known,
       {fingerprint}({hashed}) AS row_hash,
       coalesce(m.row_hash <> {fingerprint}({hashed}), false) AS changed,
       coalesce(CASE WHEN $5 = 1 THEN m.cell_id ELSE d.cell_id END, -1) AS domain_cell,
       {fingerprint}({value_hashed}) AS value_hash,
       coalesce(CASE WHEN $5 = 1 THEN m.cell_id ELSE d.cell_id END IS NOT NULL
                AND CASE WHEN $5 = 1 THEN m.value_hash ELSE d.value_hash END <> {fingerprint}({old_hashed}), false) AS value_changed,
       {columns}
FROM {source} AS src
LEFT JOIN sqlanon.members AS m
  ON m.family = $1 AND m.version = $2 AND m.record_key = CAST(src.{key} AS {text_type})
LEFT JOIN sqlanon.members AS d
  ON d.family = $3 AND d.version = $4 AND d.record_key = CAST(src.{key} AS {text_type})
