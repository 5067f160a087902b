-- The bounds tables releases made in schema sqlanon before migration 010.
SELECT c.relname
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = 'sqlanon' AND c.relkind = 'r' AND c.relname LIKE '%\_bounds'
ORDER BY c.relname
