-- Every cell's requirement of this version under its stable id (stable_cell_ids.sql).
UPDATE _sqlanon_cells SET cell_id = c.cell_id
FROM _sqlanon_cell_ids AS c
WHERE _sqlanon_cells.cell_id = c.planned
