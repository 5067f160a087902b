-- The columns of view $1.$2 of the connection's own database, in order (an attached
-- database may hold a relation of the same schema and name: information_schema lists
-- every database's).
SELECT column_name FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = $1 AND table_name = $2
ORDER BY column_index
