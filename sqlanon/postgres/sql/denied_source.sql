-- Why a source missing from information_schema may still exist: information_schema
-- lists only relations the caller holds some privilege on. Per schema named like $1 and
-- per relation named like $2 in it (compared ignoring case; the caller picks the exact
-- matches): whether the caller may use the schema, and the caller's role. No more than
-- PostgreSQL itself says when such a name is read: "permission denied for schema s"
-- or "... for table t".
SELECT n.nspname AS schema_name, c.relname AS table_name,
       pg_catalog.has_schema_privilege(n.oid, 'USAGE') AS usable,
       CAST(current_user AS text) AS caller
FROM pg_catalog.pg_namespace AS n
LEFT JOIN pg_catalog.pg_class AS c
  ON c.relnamespace = n.oid AND c.relkind IN ('r', 'v', 'm', 'f', 'p')
 AND pg_catalog.lower(c.relname) = pg_catalog.lower($2)
WHERE pg_catalog.lower(n.nspname) = pg_catalog.lower($1)
