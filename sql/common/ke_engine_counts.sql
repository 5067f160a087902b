-- What the (k,e) planner reads instead of the rows: one entry per (cell of the domain's
-- latest release or -1, value) with its number of records (sqlanon/models/ke.py,
-- plan_in_cells with weights).
SELECT domain_cell, s, count(*) AS records
FROM _sqlanon_read
GROUP BY domain_cell, s
