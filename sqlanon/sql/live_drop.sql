-- Forget records of _sqlanon_dropped (never published, gone from the source) in every
-- release of domain $1: their held-back rows and any link to them.
DELETE FROM sqlanon.member_spans
WHERE record_key IN (SELECT record_key FROM _sqlanon_dropped)
  AND family IN (SELECT family FROM sqlanon.releases WHERE domain = $1);
DELETE FROM sqlanon.links
WHERE domain = $1 AND later IN (SELECT record_key FROM _sqlanon_dropped)
