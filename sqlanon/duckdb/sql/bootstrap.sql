CREATE SCHEMA IF NOT EXISTS sqlanon;
CREATE TABLE IF NOT EXISTS sqlanon.migrations (
    name       VARCHAR PRIMARY KEY,
    applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp
);
