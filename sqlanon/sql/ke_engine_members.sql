-- The private state of every record of this version (as sqlanon/sql/write_members.sql
-- makes it), from the plan joined to the rows: group (NULL: not in it), cell over
-- every release of the domain (NULL: none published it), status, fingerprints.
CREATE TEMP TABLE _sqlanon_state AS
SELECT CAST(r.record_value AS {text_type}) AS record_key,
       CASE WHEN p.group_id >= 0 THEN p.group_id END AS group_id,
       CASE WHEN p.cell_id >= 0 THEN p.cell_id END AS cell_id,
       CASE WHEN p.group_id >= 0 THEN 'published'
            WHEN p.cell_id >= 0 THEN 'suppressed'
            ELSE 'held_back' END AS status,
       r.row_hash,
       r.value_hash,
       false AS ghost
FROM _sqlanon_read AS r
JOIN _sqlanon_plan AS p ON {plan_match}
