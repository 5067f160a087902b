-- Spark's form of sqlanon/sql/rows_current.sql: a family's rows table {rows}, append-only
-- parquet, starts with the rows of version {version} ({staging}: sqlanon/spark/sql/rows_staged.sql),
-- each with the version that first showed it and its row number (`sqlanon_row`, unique
-- in the family: what the closed rows name; never shown by a view).
CREATE TABLE {rows} USING parquet AS
SELECT t.*, CAST({version} AS INTEGER) AS sqlanon_first,
       monotonically_increasing_id() AS sqlanon_row
FROM {staging} AS t
