-- The catalog row of a release: written last, it commits the release
-- (sqlanon/backends/spark.py: what a release wrote before it is undone without it).
INSERT INTO sqlanon.releases (family, version, table_name, model, source, parameters,
                              rows_published, held_back, suppressed, groups, sum_of_errors,
                              source_rows, metrics, domain, seq)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, CAST($11 AS DOUBLE), $12, $13, $14, $15)
