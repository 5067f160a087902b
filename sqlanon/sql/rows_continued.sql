-- The groups of the new version that continue a current group (sqlanon/state/continued_rows.py):
-- a new group the version does not keep whole, and a current group it does not keep, that
-- are each other's largest share of records (_sqlanon_overlap; ties to the lower id), one
-- to one.
CREATE TEMP TABLE _sqlanon_continued AS
WITH o AS (
    SELECT new_id, old_id, n FROM _sqlanon_overlap
    WHERE new_id NOT IN (SELECT new_id FROM _sqlanon_pairs)
      AND old_id NOT IN (SELECT old_id FROM _sqlanon_pairs)
      AND old_id IN (SELECT group_id FROM _sqlanon_open_groups)
), ranked AS (
    SELECT new_id, old_id,
           row_number() OVER (PARTITION BY new_id ORDER BY n DESC, old_id) AS by_new,
           row_number() OVER (PARTITION BY old_id ORDER BY n DESC, new_id) AS by_old
    FROM o
)
SELECT new_id, old_id FROM ranked WHERE by_new = 1 AND by_old = 1
