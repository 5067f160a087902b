-- The change capture in force on relation $1 (schema-qualified, quoted) keyed by column
-- $2, with a snapshot taken now (sqlanon.state.capture.mark); no row when there is none:
-- not registered, a trigger missing or disabled, the key column not the registered one,
-- or the table no longer plain (a partition, a parent or a child: their writes would not
-- fire its statement triggers). type_name: the key's type when it is a builtin one whose
-- JSON text reads back as the value (not an array, whose JSON is no array literal, nor
-- json, which to_jsonb rewrites): a release reads the captured keys back through it.
SELECT s.relid, CAST(s.capture_id AS pg_catalog.text) AS capture_id,
       CAST(pg_catalog.pg_current_snapshot() AS pg_catalog.text) AS snapshot,
       a.atttypid AS key_type, a.atttypmod AS key_typmod,
       pg_catalog.pg_relation_filenode(s.relid) AS filenode,
       (SELECT pg_catalog.count(*) FROM sqlanon.migrations) AS migrations,
       CASE WHEN y.typnamespace = CAST('pg_catalog' AS pg_catalog.regnamespace)
                 AND y.typtype = 'b' AND y.typcategory <> 'A' AND y.typname <> 'json'
            THEN CAST(y.typname AS pg_catalog.text) END AS type_name
FROM sqlanon.capture_sources AS s
JOIN pg_catalog.pg_class AS c ON c.oid = s.relid
JOIN pg_catalog.pg_attribute AS a
  ON a.attrelid = s.relid AND a.attnum = s.key_attnum AND NOT a.attisdropped
JOIN pg_catalog.pg_type AS y ON y.oid = a.atttypid
WHERE s.relid = pg_catalog.to_regclass($1) AND a.attname = $2
  AND c.relkind = 'r' AND NOT c.relispartition
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits AS i
                  WHERE i.inhrelid = s.relid OR i.inhparent = s.relid)
  AND (SELECT pg_catalog.count(*) FROM pg_catalog.pg_trigger AS t
       WHERE t.tgrelid = s.relid AND t.tgenabled <> 'D'
         AND t.tgname IN ('sqlanon_capture_delete', 'sqlanon_capture_update', 'sqlanon_capture_truncate')
         AND t.tgfoid = CAST('sqlanon.capture_trigger()' AS pg_catalog.regprocedure)) = 3
