-- Drop the candidate pairs whose rows differ in `{cols}`: a new group is kept only if
-- its multiset of these tuples equals the current group's (called for each multiset of
-- its content; equal sizes, so one EXCEPT ALL suffices; NULLs compare equal there).
DELETE FROM _sqlanon_pairs
WHERE new_id IN (
    SELECT x.new_id FROM (
        SELECT p.new_id, {cols} FROM {staging} AS t
        JOIN _sqlanon_pairs AS p ON p.new_id = t.{group}
        EXCEPT ALL
        SELECT p.new_id, {cols} FROM {rows} AS t
        JOIN _sqlanon_pairs AS p ON p.old_id = t.{group}
    ) AS x
)
