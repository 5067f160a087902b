-- The records one release published, the group each was published in, and its true
-- value of one source column now (owner only). found is false for a published record
-- the source no longer holds. Ordered by key, so that one release's reads of several
-- columns line up.
SELECT m.record_key, m.group_id, src.{key} IS NOT NULL AS found, src.{column} AS value
FROM sqlanon.members AS m
LEFT JOIN {source} AS src ON CAST(src.{key} AS VARCHAR) = m.record_key
WHERE m.family = $1 AND m.version = $2 AND m.status = 'published'
ORDER BY m.record_key
