-- Spark's form of sqlanon/sql/rows_remap.sql (no UPDATE): temporary table {table} made
-- again with the published ids in `{group}` (`{columns}`: its columns in order, the
-- group's as `sqlanon_final`).
CREATE TEMP TABLE {table} AS
SELECT {columns}
FROM (
    SELECT t.*, coalesce(m.final_id, t.{group}) AS sqlanon_final
    FROM {table} AS t
    LEFT JOIN _sqlanon_group_ids AS m ON m.new_id = t.{group}
) AS x
