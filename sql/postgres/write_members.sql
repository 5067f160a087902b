-- The private state of every record of this version, fingerprinted from the source.
-- Rows go in in the order of the members index (family, version, record_key): inserting
-- them in random key order costs more than twice as long at 10^6 rows (index page misses).
INSERT INTO sqlanon.members (family, version, record_key, group_id, cell_id, status, row_hash)
SELECT $1, $2, CAST(src.{key} AS text),
       CASE WHEN a.status = 0 THEN a.group_id END,
       CASE WHEN a.status = 0 THEN a.cell_id END,
       CASE a.status WHEN 0 THEN 'published' WHEN 1 THEN 'held_back' ELSE 'suppressed' END,
       CAST(CAST('x' || substr(md5(CAST(ROW({hashed}) AS text)), 1, 16) AS bit(64)) AS bigint)
FROM _sqlanon_members AS a
JOIN {source} AS src ON src.{key} = a.record_key
ORDER BY 3
