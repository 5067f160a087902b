-- The rewriter's view of every release (sqlanon.intervals): names, columns, metrics.
SELECT family, version, table_name, model, CAST(parameters AS {text_type}),
    CAST(metrics AS {text_type})
FROM sqlanon.releases
