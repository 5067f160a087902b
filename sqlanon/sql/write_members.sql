-- The private state of every record of this version into _sqlanon_state (stored by
-- write_member_spans.sql): its group (-1: not in it), its cell over every release of
-- the domain (-1: no release has published it), status 'published', 'suppressed'
-- (published before, absent now) or 'held_back' (never published yet), and the
-- fingerprints the source read computed (ke_read_source.sql).
CREATE TEMP TABLE _sqlanon_state AS
SELECT CAST(a.record_key AS {text_type}) AS record_key,
       CASE WHEN a.group_id >= 0 THEN a.group_id END AS group_id,
       CASE WHEN a.cell_id >= 0 THEN a.cell_id END AS cell_id,
       CASE WHEN a.group_id >= 0 THEN 'published'
            WHEN a.cell_id >= 0 THEN 'suppressed'
            ELSE 'held_back' END AS status,
       a.row_hash,
       a.value_hash,
       false AS ghost
FROM _sqlanon_members AS a
