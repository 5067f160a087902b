-- The domain's ghosts (_sqlanon_ghost_ids: id, cell, published by the family's last
-- version) with their kept value of the sensitive column, as the planner compares it
-- (s) and in the column's own type (`{alias}`, as _sqlanon_read carries it).
CREATE TEMP TABLE _sqlanon_ghost_read AS
SELECT g.record_key, g.domain_cell, g.published_before,
       CAST(v.{sensitive} AS DOUBLE PRECISION) AS s, v.{sensitive} AS {alias}
FROM _sqlanon_ghost_ids AS g
JOIN _sqlanon_ghost_values AS v ON v.record_key = g.record_key
