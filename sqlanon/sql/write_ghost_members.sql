-- The private state of every ghost in this version (see write_members.sql): no key, no
-- fingerprint; the ghost id, its group (-1: absent) and its cell.
INSERT INTO _sqlanon_state (record_key, group_id, cell_id, status, row_hash, value_hash, ghost)
SELECT g.record_key,
       CASE WHEN g.group_id >= 0 THEN g.group_id END,
       g.cell_id,
       CASE WHEN g.group_id >= 0 THEN 'published' ELSE 'suppressed' END,
       0, NULL, true
FROM _sqlanon_ghost_members AS g
