-- Every column of sqlanon.releases (JSON is text already; sqlanon/catalog.py appends the filter).
SELECT family, version, table_name, model, source, parameters, rows_published,
       held_back, suppressed, groups, sum_of_errors, source_rows, metrics,
       domain, seq
FROM sqlanon.releases
