-- sqlanon/sql/live_drop.sql in Spark SQL (no DELETE: the tables are written anew, as in
-- sqlanon/spark/sql/live_ghost.sql): forget records of _sqlanon_dropped (never published, gone
-- from the source) in every release of domain $1, their held-back rows and any link.
INSERT OVERWRITE sqlanon.member_spans
SELECT m.*
FROM sqlanon.member_spans AS m
LEFT JOIN _sqlanon_dropped AS d ON d.record_key = m.record_key
LEFT JOIN (SELECT DISTINCT family FROM sqlanon.releases WHERE domain = $1) AS f
  ON f.family = m.family
WHERE d.record_key IS NULL OR f.family IS NULL;
INSERT OVERWRITE sqlanon.links
SELECT l.*
FROM sqlanon.links AS l
LEFT JOIN _sqlanon_dropped AS d ON d.record_key = l.later
WHERE d.record_key IS NULL OR l.domain <> $1
