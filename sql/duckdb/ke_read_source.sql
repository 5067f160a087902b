-- Every source row with its state in the last version (-1 / false when never published).
-- `changed`: a published record whose quasi or sensitive values differ from what was
-- published (same fingerprint as sql/duckdb/write_members.sql). `row_hash`: that
-- fingerprint now, stored by sql/duckdb/write_members_hashed.sql (no second scan).
SELECT CAST(src.{key} AS VARCHAR) AS record_key,
       CAST(src.{sensitive} AS DOUBLE) AS s,
       coalesce(m.group_id, -1) AS prev_group,
       coalesce(m.cell_id, -1) AS prev_cell,
       coalesce(m.status = 'published', false) AS published_before,
       coalesce(m.row_hash <> hash({hashed}), false) AS changed,
       hash({hashed}) AS row_hash
FROM {source} AS src
LEFT JOIN sqlanon.members AS m
  ON m.family = $1 AND m.version = $2 AND m.record_key = CAST(src.{key} AS VARCHAR)
