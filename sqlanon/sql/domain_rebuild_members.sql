-- Migration 005: each record's cell over its whole domain (_sqlanon_cells_of), and the
-- status that follows from it, for one release made before domains. It runs on the
-- catalog as migration 005 leaves it: sqlanon.members is a table until migration 011
-- collapses it into spans (later writers: write_member_spans.sql).
UPDATE sqlanon.members AS m
SET cell_id = CASE WHEN c.cell_id >= 0 THEN c.cell_id END,
    status = CASE WHEN m.group_id IS NOT NULL THEN 'published'
                  WHEN c.cell_id >= 0 THEN 'suppressed'
                  ELSE 'held_back' END
FROM _sqlanon_cells_of AS c
WHERE m.family = $1 AND m.version = $2 AND m.record_key = c.record_key
