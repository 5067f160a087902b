-- The private state of every record of this version (group_id -1: not published, status
-- $3), with the fingerprint the source read computed (sql/<dialect>/ke_read_source.sql).
INSERT INTO sqlanon.members (family, version, record_key, group_id, cell_id, status, row_hash)
SELECT $1, $2, CAST(a.record_key AS VARCHAR),
       CASE WHEN a.group_id >= 0 THEN a.group_id END,
       CASE WHEN a.group_id >= 0 THEN a.cell_id END,
       CASE WHEN a.group_id >= 0 THEN 'published' ELSE $3 END,
       a.row_hash
FROM _sqlanon_members AS a
