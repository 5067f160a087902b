-- The release table {staging} written again from _sqlanon_staged (rows_staged.sql) with
-- the ids the release shows, for the private state's writes that read it (the bounds).
CREATE TABLE {staging} USING parquet AS
SELECT {columns} FROM _sqlanon_staged
