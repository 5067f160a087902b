-- The columns of a published table and their types, for an export's copy of it.
-- Relations of the connection's own database only (information_schema lists every
-- attached DuckDB database's; PostgreSQL lists its own alone).
SELECT column_name, data_type, numeric_precision, numeric_scale
FROM information_schema.columns
WHERE table_catalog = current_database() AND table_schema = $1 AND table_name = $2
ORDER BY ordinal_position
