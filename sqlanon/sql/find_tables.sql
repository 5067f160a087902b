SELECT table_schema, table_name FROM information_schema.tables
WHERE lower(table_schema) = lower($1) AND lower(table_name) = lower($2)
ORDER BY table_schema, table_name
