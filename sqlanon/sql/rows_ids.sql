-- Each new group's published id: a kept group keeps its current id (its rows stay), any
-- other takes a fresh one above every id the family's rows (current and history) hold, in the plan's order.
CREATE TEMP TABLE _sqlanon_group_ids AS
SELECT p.new_id, p.old_id AS final_id, true AS kept
FROM _sqlanon_pairs AS p
UNION ALL
SELECT g.group_id, CAST(h.highest + row_number() OVER (ORDER BY g.group_id) AS INTEGER), false
FROM _sqlanon_new_groups AS g
CROSS JOIN (
    SELECT coalesce(max(a.g), -1) AS highest
    FROM (SELECT t.{group} AS g FROM {rows} AS t UNION ALL SELECT t.{group} FROM {history} AS t) AS a
) AS h
WHERE g.group_id NOT IN (SELECT new_id FROM _sqlanon_pairs)
