-- Version $2 of family $1 joins the versions the private state has (sqlanon.members and
-- sqlanon.cells read their spans as of it from now on, before its catalog row exists).
INSERT INTO sqlanon.state_versions (family, version)
SELECT $1, $2
WHERE NOT EXISTS (SELECT 1 FROM sqlanon.state_versions WHERE family = $1 AND version = $2)
