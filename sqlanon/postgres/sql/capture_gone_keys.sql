-- The keys that left table $1 since snapshot $2 (a release's capture mark) and are not in
-- the source now. A key was captured as its cast to text or JSON writes it: read back
-- through the key's type {key_type} (a builtin one), it is the text CAST(key AS varchar)
-- gives, as in
-- sqlanon.members; the probe by value lets an index on the key serve.
SELECT DISTINCT g.record_key
FROM (SELECT CAST(CAST(c.record_key AS {key_type}) AS pg_catalog.varchar) AS record_key
      FROM sqlanon.captured AS c
      WHERE c.relid = CAST($1 AS pg_catalog.oid) AND c.record_key IS NOT NULL
        AND NOT pg_catalog.pg_visible_in_snapshot(c.xid, CAST($2 AS pg_catalog.pg_snapshot)))
     AS g
WHERE NOT EXISTS (SELECT FROM {source} AS src
                  WHERE src.{key} = CAST(g.record_key AS {key_type})
                    AND CAST(src.{key} AS pg_catalog.varchar) = g.record_key)
