-- Turn the records of _sqlanon_ghosting (record_key -> ghost_id) into ghosts in every
-- release of domain $1: the key is replaced everywhere in the catalog, the
-- fingerprints of its columns are dropped; kept values and chain links follow the id.
UPDATE sqlanon.member_spans SET record_key = g.ghost_id, ghost = true, row_hash = 0, value_hash = NULL
FROM _sqlanon_ghosting AS g
WHERE sqlanon.member_spans.record_key = g.record_key
  AND sqlanon.member_spans.family IN (SELECT family FROM sqlanon.releases WHERE domain = $1);
UPDATE sqlanon.kept_values SET record_key = g.ghost_id
FROM _sqlanon_ghosting AS g
WHERE sqlanon.kept_values.domain = $1 AND sqlanon.kept_values.record_key = g.record_key;
UPDATE sqlanon.links SET later = g.ghost_id
FROM _sqlanon_ghosting AS g
WHERE sqlanon.links.domain = $1 AND sqlanon.links.later = g.record_key;
INSERT INTO sqlanon.links (domain, earlier, later)
SELECT $1, g.ghost_id, g.record_key FROM _sqlanon_ghosting AS g WHERE g.changed
