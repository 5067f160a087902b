-- sqlanon/sql/ke_engine_runs.sql over the rows and the ghosts (_sqlanon_ghost_read: each
-- constrained attribute, the sensitive one among them, in its column's own type).
CREATE TEMP TABLE _sqlanon_runs AS
SELECT group_id, value, count(*) AS c
FROM (SELECT p.group_id, r.{sensitive_a} AS value
      FROM _sqlanon_read AS r
      JOIN _sqlanon_plan AS p ON {plan_match}
      WHERE p.group_id >= 0
      UNION ALL
      SELECT p.group_id, g.{sensitive_a}
      FROM _sqlanon_ghost_read AS g
      JOIN _sqlanon_plan AS p ON {plan_match_g}
      WHERE p.group_id >= 0) AS published
GROUP BY group_id, value
