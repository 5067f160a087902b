-- sqlanon/sql/live_gone.sql over the captured keys: the records of release ($1, $2) gone
-- from the source among the keys that left table $3 since snapshot $4 (the release's
-- capture mark), each with whether a release of the domain published it.
SELECT d.record_key, d.cell_id IS NOT NULL AS published
FROM sqlanon.members AS d
WHERE d.family = $1 AND d.version = $2 AND NOT coalesce(d.ghost, false)
  AND d.record_key IN (
      SELECT c.record_key FROM sqlanon.captured AS c
      WHERE c.relid = CAST($3 AS pg_catalog.oid)
        AND NOT pg_catalog.pg_visible_in_snapshot(c.xid, CAST($4 AS pg_catalog.pg_snapshot)))
  AND NOT EXISTS (SELECT FROM {source} AS src
                  WHERE CAST(src.{key} AS pg_catalog.varchar) = d.record_key)
