-- A family's view in an export: its newest version (a view of an attached database
-- reads the tables of that database).
CREATE OR REPLACE VIEW {db}.{view} AS SELECT * FROM {table}
