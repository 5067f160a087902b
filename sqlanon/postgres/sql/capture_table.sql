-- Relation $1 (schema-qualified, quoted) if it is a table: its oid, its owner, and
-- whether the current user is (a member of) that owner.
SELECT c.oid, pg_catalog.pg_get_userbyid(c.relowner),
       pg_catalog.pg_has_role(c.relowner, 'MEMBER')
FROM pg_catalog.pg_class AS c
WHERE c.oid = pg_catalog.to_regclass($1) AND c.relkind IN ('r', 'p')
