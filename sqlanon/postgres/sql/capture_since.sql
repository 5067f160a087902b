-- The capture mark of release ($1, $2), and whether the capture broke since (a TRUNCATE,
-- the key column dropped: a row without key its snapshot did not see).
SELECT m.relid, CAST(m.capture_id AS pg_catalog.text), CAST(m.snapshot AS pg_catalog.text),
       m.key_type, m.key_typmod, m.filenode, m.migrations,
       EXISTS (SELECT FROM sqlanon.captured AS c
               WHERE c.relid = m.relid AND c.record_key IS NULL
                 AND NOT pg_catalog.pg_visible_in_snapshot(c.xid, m.snapshot))
FROM sqlanon.capture_marks AS m
WHERE m.family = $1 AND m.version = $2
