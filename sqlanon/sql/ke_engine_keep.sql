-- Keep the value of attribute $2 (column `{column}` of _sqlanon_read) of the records
-- this release gives a cell: every one (`$3` true: an attribute the domain constrains
-- from now on) or those new to a cell (no cell before).
INSERT INTO sqlanon.kept_values (domain, record_key, attribute, value)
SELECT $1, CAST(r.record_value AS {text_type}), $2, CAST(r.{column} AS {text_type})
FROM _sqlanon_read AS r
JOIN _sqlanon_plan AS p ON {plan_match}
WHERE p.cell_id >= 0 AND ($3 OR r.domain_cell < 0)
