-- Spark's form of sqlanon/sql/rows_history.sql: a family's closed rows {history}, append-only
-- parquet: the number of each row no longer current and the last version that showed
-- it. Empty at the first version.
CREATE TABLE {history} USING parquet AS
SELECT r.sqlanon_row, CAST(NULL AS INTEGER) AS sqlanon_last FROM {rows} AS r WHERE false
