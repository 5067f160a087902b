-- The change capture registered on table $1 (oid): its key column's number and how many
-- of its triggers (sqlanon.state.capture.TRIGGERS) exist, enabled; no row: none.
SELECT s.key_attnum,
       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_trigger AS t
        WHERE t.tgrelid = s.relid AND t.tgenabled <> 'D'
          AND t.tgname IN ('sqlanon_capture_delete', 'sqlanon_capture_update', 'sqlanon_capture_truncate')
          AND t.tgfoid = CAST('sqlanon.capture_trigger()' AS pg_catalog.regprocedure))
FROM sqlanon.capture_sources AS s
WHERE s.relid = CAST($1 AS pg_catalog.oid)
