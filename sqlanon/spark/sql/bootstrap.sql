CREATE DATABASE IF NOT EXISTS sqlanon;
CREATE DATABASE IF NOT EXISTS sqlanon_work;
CREATE TABLE IF NOT EXISTS sqlanon.migrations (
    name       STRING NOT NULL,
    applied_at TIMESTAMP DEFAULT current_timestamp()
) USING parquet;
-- What each writing transaction may have to undo (sqlanon/spark/session.py): Spark
-- tables are not transactional, so the catalog row is the commit point.
CREATE TABLE IF NOT EXISTS sqlanon.pending (
    txid   STRING NOT NULL,
    kind   STRING NOT NULL,
    detail STRING NOT NULL
) USING parquet;
