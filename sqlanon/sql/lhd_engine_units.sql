-- What the lHD planner reads instead of the rows: one entry per unit (equal cell of the
-- domain's latest release and equal `{columns}`: quasi-identifiers, sensitive and
-- constrained attributes) with its number of records, in the order of its first key
-- (the row path reads rows in key order: both hand the planner the same units in the
-- same order; sqlanon/models/lhd_planner.py, plan_lhd with weights).
SELECT unit, domain_cell, {columns}, count(*) AS records, min(record_key) AS first_key
FROM _sqlanon_read
GROUP BY unit, domain_cell, {columns}
ORDER BY first_key
