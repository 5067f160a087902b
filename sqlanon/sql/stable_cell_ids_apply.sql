-- The records' cells of this version under their stable ids (stable_cell_ids.sql).
UPDATE _sqlanon_state SET cell_id = c.cell_id
FROM _sqlanon_cell_ids AS c
WHERE _sqlanon_state.cell_id = c.planned
