-- Relations of the connection's own database only (information_schema lists every
-- attached DuckDB database's; PostgreSQL lists its own alone).
SELECT table_name FROM information_schema.tables
WHERE table_catalog = current_database() AND table_schema = $1 AND table_name = $2 AND table_type = 'BASE TABLE'
