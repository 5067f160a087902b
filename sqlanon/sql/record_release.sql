-- The catalog row of a release: written last, it commits the release (on PostgreSQL only
-- the view switch follows it, sqlanon.release.publish).
INSERT INTO sqlanon.releases (family, version, table_name, model, source, parameters,
                              rows_published, held_back, suppressed, groups, sum_of_errors,
                              source_rows, metrics, domain, seq)
VALUES ($1, $2, $3, $4, $5, CAST($6 AS JSON), $7, $8, $9, $10, $11, $12, CAST($13 AS JSON),
        $14, $15)
