-- sql/duckdb/write_members.sql when the release read the fingerprints with the source
-- rows (`row_hash`, same expression, same transaction): no join back to the source.
-- `record_key` is the key as read: BIGINT for an integer key (its text is the same as
-- the source column's), else the text itself.
INSERT INTO sqlanon.members (family, version, record_key, group_id, cell_id, status, row_hash)
SELECT $1, $2, CAST(a.record_key AS VARCHAR),
       CASE WHEN a.status = 0 THEN a.group_id END,
       CASE WHEN a.status = 0 THEN a.cell_id END,
       CASE a.status WHEN 0 THEN 'published' WHEN 1 THEN 'held_back' ELSE 'suppressed' END,
       a.row_hash
FROM _sqlanon_members AS a
