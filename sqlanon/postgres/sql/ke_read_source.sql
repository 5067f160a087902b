-- Every source row (with `{columns}`: other attributes the domain's cells constrain,
-- read only when the chain rule needs them) with its key as text and as it is (`record_value`: release.py reads
-- integer keys so), its state in the family's last version (m: $1, $2; -1 / false when
-- never published) and in the domain's latest release (d: $3, $4; m itself when $5 = 1,
-- the family made it: one join less): its cell, -1 when no
-- release of the domain published it. `row_hash` fingerprints its published columns
-- (quasi + sensitive), `value_hash` the attributes the domain's cells constrain after
-- this release, both hashtextextended of the row as text, a bigint (stored by
-- sqlanon/sql/write_members.sql). `changed` / `value_changed`: the stored fingerprint
-- differs (`{old_hashed}`: the attributes constrained before). Releases before
-- hashtextextended stored the first 64 bits of md5 of the same text; md5 is computed
-- only for the records whose stored fingerprint is not the new one, so such a record
-- counts as changed only if it matches neither (a false match: 2^-63).
SELECT CAST(src.{key} AS text) AS record_key,
       src.{key} AS record_value,
       CAST(src.{sensitive} AS double precision) AS s,
       coalesce(m.group_id, -1) AS prev_group,
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
