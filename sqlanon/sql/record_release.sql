-- The catalog row of a release: written last, it commits the release (on PostgreSQL only
-- the view switch follows it, sqlanon.release.publish; on Spark what a release wrote
-- before it is undone without it, sqlanon.spark.session).
INSERT INTO sqlanon.releases (family, version, table_name, model, source, parameters,
                              rows_published, held_back, suppressed, groups, sum_of_errors,
                              source_rows, metrics, domain, seq)
VALUES ($1, $2, $3, $4, $5, CAST($6 AS {json_type}), $7, $8, $9, $10, CAST($11 AS {double_type}),
        $12, CAST($13 AS {json_type}), $14, $15)
