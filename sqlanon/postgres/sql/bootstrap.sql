-- Applied before every migration run (sqlanon.state.migrations.migrate): the migrations ledger.
CREATE SCHEMA IF NOT EXISTS sqlanon;
-- Where releases put their bounds tables (migration 010 says why not in sqlanon).
CREATE SCHEMA IF NOT EXISTS sqlanon_bounds;
CREATE TABLE IF NOT EXISTS sqlanon.migrations (
    name       text PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
