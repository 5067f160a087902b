-- How many records of each planned group (plan ids, _sqlanon_plan joined to the read on
-- {plan_match}) the family's last version showed in each of its groups (`prev_group`,
-- the published id): sqlanon/state/continued_rows.py lets a group continue the group
-- most of its records come from.
CREATE TEMP TABLE _sqlanon_overlap AS
SELECT p.group_id AS new_id, r.prev_group AS old_id, count(*) AS n
FROM _sqlanon_read AS r
JOIN _sqlanon_plan AS p ON {plan_match}
WHERE p.group_id >= 0 AND r.prev_group >= 0
GROUP BY p.group_id, r.prev_group
