-- Each ghost's group (-1: absent) and cell after this release, from the plan, as
-- sqlanon/sql/write_ghost_members.sql stores them.
CREATE TEMP TABLE _sqlanon_ghost_members AS
SELECT g.record_key, p.group_id, p.cell_id
FROM _sqlanon_ghost_read AS g
JOIN _sqlanon_plan AS p ON {plan_match_g}
