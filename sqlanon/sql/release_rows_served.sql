-- The rewriter's view of every release (sqlanon.intervals) in a catalog without
-- retirements (an analyst's export, which holds served versions only).
SELECT family, version, table_name, model, CAST(parameters AS {text_type}),
    CAST(metrics AS {text_type}), false AS retired
FROM sqlanon.releases
