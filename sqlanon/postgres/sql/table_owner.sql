-- The role owning relation $1 (schema-qualified, quoted).
SELECT pg_catalog.pg_get_userbyid(c.relowner)
FROM pg_catalog.pg_class AS c
WHERE c.oid = pg_catalog.to_regclass($1)
