-- Table $1 (oid): its kind, and whether it is a partition or has a parent or a child.
SELECT c.relkind,
       c.relispartition OR EXISTS (
           SELECT FROM pg_catalog.pg_inherits AS i WHERE i.inhrelid = c.oid OR i.inhparent = c.oid)
FROM pg_catalog.pg_class AS c
WHERE c.oid = CAST($1 AS pg_catalog.oid)
