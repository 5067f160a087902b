-- The published records of one version and their class (group) id (owner only).
SELECT record_key, group_id FROM sqlanon.members
WHERE family = $1 AND version = $2 AND status = 'published'
