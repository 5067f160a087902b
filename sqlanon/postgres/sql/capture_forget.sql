-- The entries captured from table $1 that the latest release ($2[i], $3[i]) of every
-- domain of the table has read past: visible in its mark's snapshot of capture $4 (a
-- domain whose latest release has no such mark takes the full pass next anyway).
DELETE FROM sqlanon.captured AS c
WHERE c.relid = CAST($1 AS pg_catalog.oid)
  AND NOT EXISTS (
      SELECT FROM ROWS FROM (pg_catalog.unnest(CAST($2 AS pg_catalog.text[])),
                             pg_catalog.unnest(CAST($3 AS pg_catalog.int4[]))) AS l (family, version)
      JOIN sqlanon.capture_marks AS m ON m.family = l.family AND m.version = l.version
      WHERE m.relid = c.relid AND m.capture_id = CAST($4 AS pg_catalog.xid8)
        AND NOT pg_catalog.pg_visible_in_snapshot(c.xid, m.snapshot))
