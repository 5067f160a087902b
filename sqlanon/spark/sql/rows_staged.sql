-- The version a release wrote ({staging}) as sqlanon/state/spark_rows.py stores it: with
-- the published ids in `{group}` (_sqlanon_group_ids, when the family has current rows)
-- and the family's ghost column (`sqlanon_no_ghost` or `sqlanon_no_class_ghosts` when the
-- version has none); `{columns}` picks them, in the rows table's order.
CREATE TEMP TABLE _sqlanon_staged AS
SELECT {columns}
FROM (
    SELECT t.*, coalesce(m.final_id, t.{group}) AS sqlanon_final,
           false AS sqlanon_no_ghost, 0 AS sqlanon_no_class_ghosts
    FROM {staging} AS t
    LEFT JOIN {ids} AS m ON m.new_id = t.{group}
) AS x
