-- Migration 007's data step: keep the value of attribute $4 of every record of domain
-- $1 that its latest release ($2, $3) left with a cell, from the source as it is now
-- (the values those releases published, unless the source changed since).
INSERT INTO sqlanon.kept_values (domain, record_key, attribute, value)
SELECT $1, d.record_key, $4, CAST(src.{column} AS {text_type})
FROM sqlanon.members AS d
JOIN {source} AS src ON CAST(src.{key} AS {text_type}) = d.record_key
WHERE d.family = $2 AND d.version = $3 AND d.cell_id IS NOT NULL
