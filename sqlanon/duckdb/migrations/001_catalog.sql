-- The catalog: one row per published version, and the private state of every record.
CREATE TABLE IF NOT EXISTS sqlanon.releases (
    family         VARCHAR NOT NULL,
    version        INTEGER NOT NULL,
    table_name     VARCHAR NOT NULL,
    model          VARCHAR NOT NULL,
    source         VARCHAR NOT NULL,
    parameters     JSON NOT NULL,
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    rows_published BIGINT NOT NULL,
    held_back      BIGINT NOT NULL DEFAULT 0,
    suppressed     BIGINT NOT NULL DEFAULT 0,
    groups         BIGINT NOT NULL,
    sum_of_errors  DOUBLE,
    source_rows    BIGINT NOT NULL,
    metrics        JSON,
    PRIMARY KEY (family, version)
);

-- Private: never readable by analysts. One row per record per version.
CREATE TABLE IF NOT EXISTS sqlanon.members (
    family     VARCHAR NOT NULL,
    version    INTEGER NOT NULL,
    record_key VARCHAR NOT NULL,
    group_id   INTEGER,
    cell_id    BIGINT,
    status     VARCHAR NOT NULL CHECK (status IN ('published', 'held_back', 'suppressed')),
    row_hash   UBIGINT NOT NULL  -- hash() of the published columns: detects changed rows
);
