-- Records with a cell after the domain's latest release that are no longer in the source.
SELECT m.record_key FROM sqlanon.members AS m
WHERE m.family = $1 AND m.version = $2 AND m.cell_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM {source} AS src WHERE CAST(src.{key} AS {text_type}) = m.record_key)
ORDER BY m.record_key LIMIT 10
