-- Every source row with its state in the last version (-1 / false when never published),
-- its key as text and as it is (`record_value`: release.py reads integer keys so),
-- and `row_hash`, the fingerprint of its published columns (quasi + sensitive) that
-- sql/postgres/write_members.sql stores: hashtextextended of the row as text, a bigint.
-- `changed`: a record the last version published whose fingerprint differs. Releases
-- before hashtextextended stored the first 64 bits of md5 of the same text; md5 is
-- computed only for the records whose stored fingerprint is not the new one, so such a
-- record counts as changed only if it matches neither (a false match: 2^-63).
SELECT CAST(src.{key} AS text) AS record_key,
       src.{key} AS record_value,
       CAST(src.{sensitive} AS double precision) AS s,
       coalesce(m.group_id, -1) AS prev_group,
       coalesce(m.cell_id, -1) AS prev_cell,
       coalesce(m.status = 'published', false) AS published_before,
       hashtextextended(CAST(ROW({hashed}) AS text), 0) AS row_hash,
       CASE WHEN m.status IS DISTINCT FROM 'published' THEN false
            WHEN m.row_hash = hashtextextended(CAST(ROW({hashed}) AS text), 0) THEN false
            ELSE m.row_hash <> CAST(CAST('x' || substr(md5(CAST(ROW({hashed}) AS text)), 1, 16) AS bit(64)) AS bigint)
       END AS changed
FROM {source} AS src
LEFT JOIN sqlanon.members AS m
  ON m.family = $1 AND m.version = $2 AND m.record_key = CAST(src.{key} AS text)
