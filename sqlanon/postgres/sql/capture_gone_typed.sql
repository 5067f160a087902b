-- sqlanon/postgres/sql/capture_gone.sql for a key of a builtin type {key_type}: each
-- captured key is looked up in the source by its value too (an index on the key serves
-- it), its text compared all the same.
SELECT d.record_key, d.cell_id IS NOT NULL AS published
FROM sqlanon.members AS d
WHERE d.family = $1 AND d.version = $2 AND NOT coalesce(d.ghost, false)
  AND d.record_key IN (
      SELECT c.record_key FROM sqlanon.captured AS c
      WHERE c.relid = CAST($3 AS pg_catalog.oid)
        AND NOT pg_catalog.pg_visible_in_snapshot(c.xid, CAST($4 AS pg_catalog.pg_snapshot)))
  AND NOT EXISTS (SELECT FROM {source} AS src
                  WHERE src.{key} = CAST(d.record_key AS {key_type})
                    AND CAST(src.{key} AS pg_catalog.varchar) = d.record_key)
