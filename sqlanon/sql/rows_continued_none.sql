-- A path that does not count where its groups' records come from continues no group
-- (sqlanon/state/continued_rows.py): every group it does not keep whole is new.
CREATE TEMP TABLE _sqlanon_continued AS
SELECT new_id, old_id FROM _sqlanon_pairs WHERE 1 = 0
