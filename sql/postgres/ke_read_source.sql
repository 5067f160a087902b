-- Every source row with its state in the last version (-1 / false when never published).
-- `changed`: a published record whose quasi or sensitive values differ from what was
-- published (same fingerprint as sql/postgres/write_members.sql).
SELECT CAST(src.{key} AS text) AS record_key,
       CAST(src.{sensitive} AS double precision) AS s,
       coalesce(m.group_id, -1) AS prev_group,
       coalesce(m.cell_id, -1) AS prev_cell,
       coalesce(m.status = 'published', false) AS published_before,
       coalesce(m.row_hash <> CAST(CAST('x' || substr(md5(CAST(ROW({hashed}) AS text)), 1, 16) AS bit(64)) AS bigint), false) AS changed
FROM {source} AS src
LEFT JOIN sqlanon.members AS m
  ON m.family = $1 AND m.version = $2 AND m.record_key = CAST(src.{key} AS text)
