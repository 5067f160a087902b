-- Migration 013 in Spark SQL (sqlanon/duckdb/migrations/013_retirements.sql says why):
-- the retirements of a family's old versions, a parquet table written once per row.
CREATE TABLE IF NOT EXISTS sqlanon.retirements (
    family        STRING NOT NULL,
    served_from   INT NOT NULL,
    group_ceiling INT NOT NULL,
    retired_at    TIMESTAMP
) USING parquet
