-- Every source row (with `{columns}`: other attributes the domain's cells constrain,
-- read only when the chain rule needs them) with its key as text and as it is (`record_value`: release.py reads
-- integer keys so), its state in the family's last version (m: $1, $2; -1 / false when
-- never published) and in the domain's latest release (d: $3, $4; m itself when $5 = 1,
-- the family made it: one join less): its cell, -1 when no
-- release of the domain published it. `row_hash` fingerprints its published columns,
-- `value_hash` the attributes the domain's cells constrain after this release (both
-- stored by sqlanon/sql/write_members.sql); `changed` / `value_changed`: the stored
-- fingerprint differs (`{old_hashed}`: over the attributes constrained before). A
-- fingerprint is {fingerprint}, a 64-bit hash of the values, compared only with ones this
-- engine stored (PostgreSQL's own ke_read_source.sql hashes the row's text).
SELECT CAST(src.{key} AS {text_type}) AS record_key,
       src.{key} AS record_value,
       CAST(src.{sensitive} AS DOUBLE) AS s,
       coalesce(m.group_id, -1) AS prev_group,
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
