-- sqlanon/sql/stable_cell_ids_cells.sql in Spark SQL (see stable_cell_ids_apply.sql).
CREATE TEMP TABLE _sqlanon_cells AS
SELECT coalesce(c.cell_id, n.cell_id) AS cell_id, n.attribute, n.min_distinct, n.min_spread
FROM _sqlanon_cells AS n
LEFT JOIN _sqlanon_cell_ids AS c ON c.planned = n.cell_id
