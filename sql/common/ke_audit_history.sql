-- The published records of one version with their true sensitive value (owner only).
SELECT m.record_key, m.group_id, CAST(src.{sensitive} AS DOUBLE PRECISION) AS s
FROM sqlanon.members AS m
JOIN {source} AS src ON CAST(src.{key} AS VARCHAR) = m.record_key
WHERE m.family = $1 AND m.version = $2 AND m.status = 'published'
