-- The catalog: one row per published version, and the private state of every record.
-- (sqlanon.migrations itself is created by sqlanon/postgres/sql/bootstrap.sql.)
CREATE TABLE sqlanon.releases (
    family         text NOT NULL,
    version        integer NOT NULL,
    table_name     text NOT NULL,
    model          text NOT NULL CHECK (model IN ('ke', 'lhd')),
    source         text NOT NULL,
    parameters     jsonb NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT pg_catalog.now(),
    rows_published bigint NOT NULL,
    held_back      bigint NOT NULL DEFAULT 0,
    suppressed     bigint NOT NULL DEFAULT 0,
    groups         bigint NOT NULL,
    sum_of_errors  double precision,
    source_rows    bigint NOT NULL,
    metrics        jsonb,
    PRIMARY KEY (family, version)
);

-- Private: never readable by analysts. One row per record per version.
CREATE TABLE sqlanon.members (
    family     text NOT NULL,
    version    integer NOT NULL,
    record_key text NOT NULL,
    group_id   integer,
    cell_id    bigint,
    status     text NOT NULL CHECK (status IN ('published', 'held_back', 'suppressed')),
    row_hash   bigint NOT NULL  -- first 64 bits of md5 of the published columns
);
CREATE INDEX members_family_version ON sqlanon.members (family, version, record_key);
