-- Spark's form of sqlanon/sql/rows_unequal.sql (no DELETE: the pairs made again without
-- those whose rows differ in `{cols}`).
CREATE TEMP TABLE _sqlanon_pairs AS
SELECT * FROM _sqlanon_pairs
WHERE new_id NOT IN (
    SELECT x.new_id FROM (
        SELECT p.new_id, {cols} FROM {staging} AS t
        JOIN _sqlanon_pairs AS p ON p.new_id = t.{group}
        EXCEPT ALL
        SELECT p.new_id, {cols} FROM {rows} AS t
        JOIN _sqlanon_pairs AS p ON p.old_id = t.{group}
    ) AS x
)
