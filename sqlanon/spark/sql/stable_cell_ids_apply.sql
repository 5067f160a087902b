-- sqlanon/sql/stable_cell_ids_apply.sql in Spark SQL (no UPDATE: the temporary table
-- is made anew from itself, sqlanon/spark/session.py).
CREATE TEMP TABLE _sqlanon_state AS
SELECT n.record_key, n.group_id, coalesce(c.cell_id, n.cell_id) AS cell_id, n.status,
       n.row_hash, n.value_hash, n.ghost
FROM _sqlanon_state AS n
LEFT JOIN _sqlanon_cell_ids AS c ON c.planned = n.cell_id
