-- The ghosts of the domain's latest release ($1, $2) with their cell and, when the
-- family's last version ($3, $4) published them, their group there.
SELECT d.record_key, d.cell_id, coalesce(m.group_id, -1) AS prev_group,
       coalesce(m.status = 'published', false) AS published_before
FROM sqlanon.members AS d
LEFT JOIN sqlanon.members AS m
  ON m.family = $3 AND m.version = $4 AND m.record_key = d.record_key
WHERE d.family = $1 AND d.version = $2 AND d.ghost AND d.cell_id IS NOT NULL
ORDER BY d.record_key
