-- sqlanon/sql/live_ghost.sql in Spark SQL: Spark tables take no UPDATE, so each table is
-- written anew (INSERT OVERWRITE: sqlanon/spark/session.py moves the old files aside
-- and brings them back on an undo). The records of _sqlanon_ghosting (record_key ->
-- ghost_id) become ghosts in every release of domain $1: the key replaced everywhere
-- in the catalog, the fingerprints dropped; kept values and chain links follow the id.
INSERT OVERWRITE sqlanon.member_spans
SELECT m.family,
       CASE WHEN f.family IS NOT NULL AND g.ghost_id IS NOT NULL THEN g.ghost_id
            ELSE m.record_key END,
       m.first_version, m.last_version, m.group_id, m.cell_id, m.status,
       CASE WHEN f.family IS NOT NULL AND g.ghost_id IS NOT NULL THEN 0 ELSE m.row_hash END,
       CASE WHEN f.family IS NOT NULL AND g.ghost_id IS NOT NULL THEN NULL
            ELSE m.value_hash END,
       CASE WHEN f.family IS NOT NULL AND g.ghost_id IS NOT NULL THEN true ELSE m.ghost END
FROM sqlanon.member_spans AS m
LEFT JOIN _sqlanon_ghosting AS g ON g.record_key = m.record_key
LEFT JOIN (SELECT DISTINCT family FROM sqlanon.releases WHERE domain = $1) AS f
  ON f.family = m.family;
INSERT OVERWRITE sqlanon.kept_values
SELECT k.domain,
       CASE WHEN k.domain = $1 AND g.ghost_id IS NOT NULL THEN g.ghost_id
            ELSE k.record_key END,
       k.attribute, k.value
FROM sqlanon.kept_values AS k
LEFT JOIN _sqlanon_ghosting AS g ON g.record_key = k.record_key;
INSERT OVERWRITE sqlanon.links
SELECT l.domain, l.earlier,
       CASE WHEN l.domain = $1 AND g.ghost_id IS NOT NULL THEN g.ghost_id ELSE l.later END
FROM sqlanon.links AS l
LEFT JOIN _sqlanon_ghosting AS g ON g.record_key = l.later;
INSERT INTO sqlanon.links (domain, earlier, later)
SELECT $1, g.ghost_id, g.record_key FROM _sqlanon_ghosting AS g WHERE g.changed
