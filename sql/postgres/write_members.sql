-- The private state of every record of this version, with the fingerprint the source
-- read computed (sql/postgres/ke_read_source.sql).
INSERT INTO sqlanon.members (family, version, record_key, group_id, cell_id, status, row_hash)
SELECT $1, $2, CAST(a.record_key AS text),
       CASE WHEN a.status = 0 THEN a.group_id END,
       CASE WHEN a.status = 0 THEN a.cell_id END,
       CASE a.status WHEN 0 THEN 'published' WHEN 1 THEN 'held_back' ELSE 'suppressed' END,
       a.row_hash
FROM _sqlanon_members AS a
