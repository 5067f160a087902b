-- An analyst export's catalog (sqlanon.duckdb.export): the allow-listed tables of
-- sqlanon.state.exports, in the export database {db}. Idempotent.
CREATE SCHEMA IF NOT EXISTS {db}.sqlanon;
CREATE TABLE IF NOT EXISTS {db}.sqlanon.export_info (
    name  VARCHAR PRIMARY KEY,
    value VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS {db}.sqlanon.releases (
    family         VARCHAR NOT NULL,
    version        INTEGER NOT NULL,
    table_name     VARCHAR NOT NULL,
    model          VARCHAR NOT NULL,
    source         VARCHAR NOT NULL,
    parameters     JSON NOT NULL,
    metrics        JSON,
    created_at     TIMESTAMP,
    rows_published BIGINT NOT NULL,
    groups         BIGINT NOT NULL,
    domain         VARCHAR,
    seq            INTEGER,
    PRIMARY KEY (family, version)
);
CREATE TABLE IF NOT EXISTS {db}.sqlanon.hierarchies (
    dataset   VARCHAR NOT NULL,
    attribute VARCHAR NOT NULL,
    value     VARCHAR NOT NULL,
    level     INTEGER NOT NULL,
    label     VARCHAR NOT NULL,
    PRIMARY KEY (dataset, attribute, value, level)
);
CREATE TABLE IF NOT EXISTS {db}.sqlanon.query_limits (
    name  VARCHAR PRIMARY KEY,
    value BIGINT NOT NULL
);
