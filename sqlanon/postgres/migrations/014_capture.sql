-- Change capture (issue 27, opt-in: sqlanon.capture_changes): statement-level triggers on
-- a source record the keys that left it (DELETE, an UPDATE of the key; TRUNCATE as one
-- row with no key), so that a later release finds its deleted records among those keys
-- instead of an anti-join of the members state against the whole source.
--
-- capture_sources: one row per captured table (its oid; the key column by number, so a
-- rename keeps it); capture_id is the xid of the transaction that turned it on, so that
-- turning it off and on again is another capture.
CREATE TABLE sqlanon.capture_sources (
    relid      oid PRIMARY KEY,
    source     text NOT NULL,
    key_attnum smallint NOT NULL,
    capture_id xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id(),
    started_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
-- The keys that left each captured table, and the writer's transaction (its top-level
-- xid: the row becomes visible exactly when the change does). record_key NULL: every key
-- may have left (TRUNCATE, the key column dropped): a release falls back to the full pass.
CREATE TABLE sqlanon.captured (
    relid      oid NOT NULL,
    xid        xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id(),
    record_key text
);
-- Per release made while its source was captured: the capture in force and the snapshot
-- taken before the release read the source (changes it did not see are the entries whose
-- xid is not visible in it), the key column's type and the table's file then (a rewrite:
-- ALTER TABLE ... TYPE, TRUNCATE, VACUUM FULL, CLUSTER changes it), and the migrations
-- applied.
CREATE TABLE sqlanon.capture_marks (
    family     text NOT NULL,
    version    integer NOT NULL,
    relid      oid NOT NULL,
    capture_id xid8 NOT NULL,
    snapshot   pg_snapshot NOT NULL,
    key_type   oid NOT NULL,
    key_typmod integer NOT NULL,
    filenode   oid NOT NULL,
    migrations integer NOT NULL,
    PRIMARY KEY (family, version)
)
