-- Each new group's published id: a kept group keeps its current id (its rows stay), any
-- other takes a fresh one above every id the family's rows hold, in the plan's order.
CREATE TEMP TABLE _sqlanon_group_ids AS
SELECT p.new_id, p.old_id AS final_id, true AS kept
FROM _sqlanon_pairs AS p
UNION ALL
SELECT g.group_id, CAST(h.highest + row_number() OVER (ORDER BY g.group_id) AS INTEGER), false
FROM _sqlanon_new_groups AS g
CROSS JOIN (SELECT coalesce(max(t.{group}), -1) AS highest FROM {rows} AS t) AS h
WHERE g.group_id NOT IN (SELECT new_id FROM _sqlanon_pairs)
