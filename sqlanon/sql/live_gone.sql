-- Records of the domain's latest release ($1, $2) that are gone from the source: each
-- key, and whether a release of the domain published it (it has a cell: it becomes a
-- ghost) or never did (its rows are dropped).
SELECT d.record_key, d.cell_id IS NOT NULL AS published
FROM sqlanon.members AS d
WHERE d.family = $1 AND d.version = $2 AND NOT coalesce(d.ghost, false)
  AND NOT EXISTS (SELECT 1 FROM {source} AS src WHERE CAST(src.{key} AS {text_type}) = d.record_key)
