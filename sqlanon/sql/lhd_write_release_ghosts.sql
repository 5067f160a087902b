-- An lHD release with ghosts (README, "Changing tables"): every row shows its class's
-- labels and its own sensitive values, the ghosts' kept values (_sqlanon_ghost_values)
-- among the source's, indistinguishable; each row also shows its class's number of
-- ghosts (class_ghosts), nothing that tells which rows they are.
CREATE TABLE {release} {table_format} AS
SELECT {labels}, {sensitive}, a.class_id, a.class_ghosts
FROM _sqlanon_lhd AS a
JOIN (SELECT CAST(src.{key} AS {text_type}) AS record_key, {source_values} FROM {source} AS src
      UNION ALL
      SELECT g.record_key, {ghost_values} FROM _sqlanon_ghost_values AS g) AS v
  ON v.record_key = a.record_key
ORDER BY a.ord
