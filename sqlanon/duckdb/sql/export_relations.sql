-- Every table and view of an export database ($1: its name), to check against the
-- allow-list (sqlanon.state.exports) and to find the versions it holds.
SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = $1
UNION ALL
SELECT schema_name, view_name FROM duckdb_views() WHERE database_name = $1 AND NOT internal
