-- Every column of sqlanon.releases, JSON as text (sqlanon/state/catalog.py appends the filter).
SELECT family, version, table_name, model, source, CAST(parameters AS {text_type}), rows_published,
       held_back, suppressed, groups, sum_of_errors, source_rows, CAST(metrics AS {text_type}),
       domain, seq
FROM sqlanon.releases
