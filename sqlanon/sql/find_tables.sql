-- Relations of the connection's own database only (information_schema lists every
-- attached DuckDB database's; PostgreSQL lists its own alone).
SELECT table_schema, table_name FROM information_schema.tables
WHERE table_catalog = current_database()
  AND lower(table_schema) = lower($1) AND lower(table_name) = lower($2)
ORDER BY table_schema, table_name
