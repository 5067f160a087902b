-- Each new group's published id: a kept group keeps its current id (its rows stay), a
-- continued one the id of the group it continues (_sqlanon_continued: the rows it shares
-- with it stay); any other keeps the plan's id (so that its records' state changes only
-- where their group did), unless a kept or continued group holds that id, in which case
-- it takes a fresh one above every id the family's rows (current and history) and the
-- plan hold, and above {ceiling}, the highest id of rows a retirement deleted
-- (sqlanon.retirements; -1: none).
CREATE TEMP TABLE _sqlanon_group_ids AS
WITH free AS (
    SELECT g.group_id, c.old_id AS continues,
           c.old_id IS NULL
           AND (g.group_id IN (SELECT old_id FROM _sqlanon_pairs)
                OR g.group_id IN (SELECT old_id FROM _sqlanon_continued)) AS taken
    FROM _sqlanon_new_groups AS g
    LEFT JOIN _sqlanon_continued AS c ON c.new_id = g.group_id
    WHERE g.group_id NOT IN (SELECT new_id FROM _sqlanon_pairs)
), highest AS (
    SELECT coalesce(max(a.g), -1) AS id
    FROM (SELECT t.{group} AS g FROM {rows} AS t
          UNION ALL SELECT t.{group} FROM {history} AS t
          UNION ALL SELECT group_id FROM _sqlanon_new_groups
          UNION ALL SELECT {ceiling}) AS a
)
SELECT p.new_id, p.old_id AS final_id, true AS kept, false AS continued
FROM _sqlanon_pairs AS p
UNION ALL
SELECT f.group_id,
       CASE WHEN f.continues IS NOT NULL THEN f.continues
            WHEN f.taken
            THEN CAST(h.id + row_number() OVER (PARTITION BY f.taken ORDER BY f.group_id) AS INTEGER)
            ELSE f.group_id END,
       false,
       f.continues IS NOT NULL
FROM free AS f
CROSS JOIN highest AS h
