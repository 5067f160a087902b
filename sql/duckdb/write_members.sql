-- The private state of every record of this version, fingerprinted from the source.
INSERT INTO sqlanon.members (family, version, record_key, group_id, cell_id, status, row_hash)
SELECT $1, $2, CAST(src.{key} AS VARCHAR),
       CASE WHEN a.status = 0 THEN a.group_id END,
       CASE WHEN a.status = 0 THEN a.cell_id END,
       CASE a.status WHEN 0 THEN 'published' WHEN 1 THEN 'held_back' ELSE 'suppressed' END,
       hash({hashed})
FROM _sqlanon_members AS a
JOIN {source} AS src ON src.{key} = a.record_key
