-- Every source row with its state in the last version (-1 / false when never published),
-- its key as text and as it is (`record_value`: release.py reads integer keys so),
-- `row_hash`, the fingerprint of its published columns that sql/duckdb/write_members.sql
-- stores, and `changed`: a published record whose fingerprint differs from the stored one.
SELECT CAST(src.{key} AS VARCHAR) AS record_key,
       src.{key} AS record_value,
       CAST(src.{sensitive} AS DOUBLE) AS s,
       coalesce(m.group_id, -1) AS prev_group,
       coalesce(m.cell_id, -1) AS prev_cell,
       coalesce(m.status = 'published', false) AS published_before,
       hash({hashed}) AS row_hash,
       coalesce(m.row_hash <> hash({hashed}), false) AS changed
FROM {source} AS src
LEFT JOIN sqlanon.members AS m
  ON m.family = $1 AND m.version = $2 AND m.record_key = CAST(src.{key} AS VARCHAR)
