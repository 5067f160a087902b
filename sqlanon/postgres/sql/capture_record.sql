-- A release's capture mark (sqlanon.state.capture.record): release ($1, $2), table $3,
-- capture $4, the snapshot $5 taken before the release read the source, the key's type
-- $6 ($7), the table's file $8 and the migrations applied $9.
INSERT INTO sqlanon.capture_marks (family, version, relid, capture_id, snapshot, key_type,
                                   key_typmod, filenode, migrations)
VALUES ($1, $2, CAST($3 AS pg_catalog.oid), CAST($4 AS pg_catalog.xid8),
        CAST($5 AS pg_catalog.pg_snapshot), CAST($6 AS pg_catalog.oid), $7,
        CAST($8 AS pg_catalog.oid), $9)
