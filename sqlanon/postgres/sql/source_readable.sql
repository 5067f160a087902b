-- Whether the caller may read the table `$1`.`$2` (no row: it is gone). A domain is
-- inferred, joined or named in a message only from sources the caller may read.
SELECT pg_catalog.has_table_privilege(c.oid, 'SELECT')
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = $2
