-- The private state of every record of this version: its group (-1: not in it), its
-- cell over every release of the domain (-1: no release has published it), status
-- 'published', 'suppressed' (published before, absent now) or 'held_back' (never
-- published yet), and the fingerprints the source read computed
-- (ke_read_source.sql).
INSERT INTO sqlanon.members (family, version, record_key, group_id, cell_id, status, row_hash,
                             value_hash)
SELECT $1, $2, CAST(a.record_key AS {text_type}),
       CASE WHEN a.group_id >= 0 THEN a.group_id END,
       CASE WHEN a.cell_id >= 0 THEN a.cell_id END,
       CASE WHEN a.group_id >= 0 THEN 'published'
            WHEN a.cell_id >= 0 THEN 'suppressed'
            ELSE 'held_back' END,
       a.row_hash,
       a.value_hash
FROM _sqlanon_members AS a
