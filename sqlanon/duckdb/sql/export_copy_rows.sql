-- A published table of another engine, loaded into a temporary table, copied into the
-- export database {db}; $1 is its number of rows (an empty table was loaded as one row
-- of NULLs, to keep the columns' types).
CREATE TABLE {db}.{target} AS SELECT * FROM "_sqlanon_export_rows" LIMIT $1
