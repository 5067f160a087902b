-- Every row of a published table, read through the owner's connection for an export
-- (sqlanon.duckdb.export, from an engine other than DuckDB).
SELECT {columns} FROM {relation}
