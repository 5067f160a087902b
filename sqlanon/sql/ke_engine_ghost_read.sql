-- The domain's ghosts (_sqlanon_ghost_ids: id, cell, published by the family's last
-- version, chain key) with their kept values: the sensitive value as the planner
-- compares it (s) and each constrained attribute in its column's own type, under the
-- names _sqlanon_read gives them (`{attributes}`).
CREATE TEMP TABLE _sqlanon_ghost_read AS
SELECT g.record_key, g.domain_cell, g.published_before, g.chain_key,
       CAST(v.{sensitive} AS {double_type}) AS s, {attributes}
FROM _sqlanon_ghost_ids AS g
JOIN _sqlanon_ghost_values AS v ON v.record_key = g.record_key
