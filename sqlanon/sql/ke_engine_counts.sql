-- What the (k,e) planner reads instead of the rows: one entry per distinct `{entry}`
-- (the cell of the domain's latest release or -1, the value; with chains also every
-- constrained attribute and the incarnation's own key) with its number of records
-- (sqlanon/models/ke_incremental.py, plan_in_cells with weights).
SELECT {entry}, count(*) AS records
FROM _sqlanon_read
GROUP BY {entry}
