SELECT table_name FROM information_schema.tables
WHERE table_schema = $1 AND table_name = $2 AND table_type = 'BASE TABLE'
