-- What stops the audit, per release and attribute read (_sqlanon_audit): published
-- records whose required value was not found (how many, the least key, whether all
-- are ghosts) and keys read more than once (the source's key is not unique any more).
SELECT position, attribute,
       sum(CASE WHEN required AND NOT found THEN 1 ELSE 0 END) AS lost,
       min(CASE WHEN required AND NOT found THEN record_key END) AS example,
       min(CASE WHEN required AND NOT found AND NOT ghost THEN 0 ELSE 1 END) AS only_ghosts,
       count(*) - count(DISTINCT record_key) AS repeated
FROM _sqlanon_audit
GROUP BY position, attribute
HAVING sum(CASE WHEN required AND NOT found THEN 1 ELSE 0 END) > 0
    OR count(*) > count(DISTINCT record_key)
ORDER BY position, attribute
