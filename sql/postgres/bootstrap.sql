-- Applied before every migration run (sqlanon.catalog.migrate): the migrations ledger.
CREATE SCHEMA IF NOT EXISTS sqlanon;
CREATE TABLE IF NOT EXISTS sqlanon.migrations (
    name       text PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
