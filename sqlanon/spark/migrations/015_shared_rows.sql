-- Migration 014 in Spark SQL: a family's versions share their rows (issue 27,
-- sqlanon/state/spark_rows.py). Each version's view shows the columns it published; they
-- are recorded here (a JSON list per family and version), so that a new application on
-- the same warehouse (Spark's in-memory catalog forgets views) makes the views again.
-- Families released before keep their version tables; their rows start at their next
-- version.
CREATE TABLE IF NOT EXISTS sqlanon.release_columns (
    family  STRING NOT NULL,
    version INT NOT NULL,
    columns STRING NOT NULL
) USING parquet
