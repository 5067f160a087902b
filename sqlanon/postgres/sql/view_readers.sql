-- The other server processes of this database holding a lock on view $1 (its quoted,
-- schema-qualified name), and their roles: the open transactions a release's
-- view switch waits for. pg_stat_activity shows any user these two columns, never
-- another role's query.
SELECT DISTINCT l.pid, a.usename
FROM pg_catalog.pg_locks AS l
JOIN pg_catalog.pg_stat_activity AS a ON a.pid = l.pid
WHERE l.locktype = 'relation'
  AND l.granted
  AND l.relation = pg_catalog.to_regclass($1)
  AND l.database = (SELECT d.oid FROM pg_catalog.pg_database AS d
                    WHERE d.datname = pg_catalog.current_database())
  AND l.pid <> pg_catalog.pg_backend_pid()
ORDER BY l.pid
