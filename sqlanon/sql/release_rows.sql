-- The rewriter's view of every release (sqlanon.intervals): names, columns, metrics, and
-- whether its owner retired it (sqlanon.retire: versions below the family's served_from).
SELECT r.family, r.version, r.table_name, r.model, CAST(r.parameters AS {text_type}),
    CAST(r.metrics AS {text_type}), r.version < coalesce(t.served_from, 1) AS retired
FROM sqlanon.releases AS r
LEFT JOIN (SELECT family, max(served_from) AS served_from FROM sqlanon.retirements
           GROUP BY family) AS t ON t.family = r.family
