-- sqlanon/sql/live_gone.sql over the captured keys: the records of release ($1, $2) among
-- the keys of _sqlanon_capture_gone (captured since and gone: capture_gone_keys.sql),
-- each with whether a release of the domain published it.
SELECT d.record_key, d.cell_id IS NOT NULL AS published
FROM sqlanon.members AS d
JOIN _sqlanon_capture_gone AS g ON g.record_key = d.record_key
WHERE d.family = $1 AND d.version = $2 AND NOT coalesce(d.ghost, false)
