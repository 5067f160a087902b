-- Each new group's published id: a kept group keeps its current id (its rows stay); any
-- other keeps the plan's id (so that its records' state changes only where their group
-- did), unless a kept group holds that id, in which case it takes a fresh one above every
-- id the family's rows (current and history) and the plan hold, and above {ceiling}, the
-- highest id of rows a retirement deleted (sqlanon.retirements; -1: none).
CREATE TEMP TABLE _sqlanon_group_ids AS
WITH free AS (
    SELECT g.group_id, g.group_id IN (SELECT old_id FROM _sqlanon_pairs) AS taken
    FROM _sqlanon_new_groups AS g
    WHERE g.group_id NOT IN (SELECT new_id FROM _sqlanon_pairs)
), highest AS (
    SELECT coalesce(max(a.g), -1) AS id
    FROM (SELECT t.{group} AS g FROM {rows} AS t
          UNION ALL SELECT t.{group} FROM {history} AS t
          UNION ALL SELECT group_id FROM _sqlanon_new_groups
          UNION ALL SELECT {ceiling}) AS a
)
SELECT p.new_id, p.old_id AS final_id, true AS kept
FROM _sqlanon_pairs AS p
UNION ALL
SELECT f.group_id,
       CASE WHEN f.taken
            THEN CAST(h.id + row_number() OVER (PARTITION BY f.taken ORDER BY f.group_id) AS INTEGER)
            ELSE f.group_id END,
       false
FROM free AS f
CROSS JOIN highest AS h
