-- The private state of every record of this version (as sqlanon/sql/write_members.sql
-- writes it), from the plan joined to the rows: group (NULL: not in it), cell over
-- every release of the domain (NULL: none published it), status, fingerprints.
INSERT INTO sqlanon.members (family, version, record_key, group_id, cell_id, status, row_hash,
                             value_hash)
SELECT $1, $2, CAST(r.record_value AS {text_type}),
       CASE WHEN p.group_id >= 0 THEN p.group_id END,
       CASE WHEN p.cell_id >= 0 THEN p.cell_id END,
       CASE WHEN p.group_id >= 0 THEN 'published'
            WHEN p.cell_id >= 0 THEN 'suppressed'
            ELSE 'held_back' END,
       r.row_hash,
       r.value_hash
FROM _sqlanon_read AS r
JOIN _sqlanon_plan AS p ON {plan_match}
