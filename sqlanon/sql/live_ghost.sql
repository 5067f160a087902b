-- Turn the records of _sqlanon_ghosting (record_key -> ghost_id) into ghosts in every
-- release of domain $1: the key is replaced everywhere in the catalog, the
-- fingerprints of its columns are dropped; kept values and chain links follow the id.
-- The members' spans and kept values are inserted again under the ghost id and the
-- key's rows deleted, not updated in place: on DuckDB an UPDATE spread over a table
-- rewrites each column it sets in every row group it touches at the next checkpoint
-- (keys and fingerprints of nearly the whole table, for a few hundred ghosts), leaving
-- the old blocks free in the file; a DELETE only marks its rows. A ghost id is fresh
-- (deletions.new_ghost_id), never a key being ghosted, so the DELETE spares the copies.
INSERT INTO sqlanon.member_spans (family, record_key, first_version, last_version, group_id,
                                  cell_id, status, row_hash, value_hash, ghost)
SELECT s.family, g.ghost_id, s.first_version, s.last_version, s.group_id, s.cell_id,
       s.status, 0, NULL, true
FROM sqlanon.member_spans AS s
JOIN _sqlanon_ghosting AS g ON g.record_key = s.record_key
WHERE s.family IN (SELECT family FROM sqlanon.releases WHERE domain = $1);
DELETE FROM sqlanon.member_spans
WHERE record_key IN (SELECT record_key FROM _sqlanon_ghosting)
  AND family IN (SELECT family FROM sqlanon.releases WHERE domain = $1);
INSERT INTO sqlanon.kept_values (domain, record_key, attribute, value)
SELECT v.domain, g.ghost_id, v.attribute, v.value
FROM sqlanon.kept_values AS v
JOIN _sqlanon_ghosting AS g ON g.record_key = v.record_key
WHERE v.domain = $1;
DELETE FROM sqlanon.kept_values
WHERE domain = $1 AND record_key IN (SELECT record_key FROM _sqlanon_ghosting);
UPDATE sqlanon.links SET later = g.ghost_id
FROM _sqlanon_ghosting AS g
WHERE sqlanon.links.domain = $1 AND sqlanon.links.later = g.record_key;
INSERT INTO sqlanon.links (domain, earlier, later)
SELECT $1, g.ghost_id, g.record_key FROM _sqlanon_ghosting AS g WHERE g.changed
