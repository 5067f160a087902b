-- Drop the candidate pairs whose rows differ: a new group is kept only if its multiset
-- of `{who_t}` tuples and its multiset of `{what_t}` tuples equal the current group's
-- (equal sizes, so one EXCEPT ALL each way suffices; NULLs compare equal there).
DELETE FROM _sqlanon_pairs
WHERE new_id IN (
    SELECT x.new_id FROM (
        SELECT p.new_id, {who_t} FROM {staging} AS t
        JOIN _sqlanon_pairs AS p ON p.new_id = t.{group}
        EXCEPT ALL
        SELECT p.new_id, {who_t} FROM {rows} AS t
        JOIN _sqlanon_pairs AS p ON p.old_id = t.{group}
    ) AS x
    UNION ALL
    SELECT y.new_id FROM (
        SELECT p.new_id, {what_t} FROM {staging} AS t
        JOIN _sqlanon_pairs AS p ON p.new_id = t.{group}
        EXCEPT ALL
        SELECT p.new_id, {what_t} FROM {rows} AS t
        JOIN _sqlanon_pairs AS p ON p.old_id = t.{group}
    ) AS y
)
