-- The rewriter's view of every release (sqlanon.intervals). Analysts may not read
-- sqlanon.releases: the SECURITY DEFINER function release_catalog() shows them only the
-- names and columns of each release, its number of ghost rows, the quasi columns it
-- published NULLs of and whether its owner retired it (sqlanon.retire).
SELECT family, version, table_name, model,
    CAST(pg_catalog.jsonb_build_object('quasi', quasi, 'sensitive', sensitive,
        'schema', schema_name, 'bounds_schema', 'sqlanon_bounds') AS pg_catalog.text)
        AS parameters,
    CAST(pg_catalog.jsonb_build_object('ghosts', ghosts, 'null_quasi', null_quasi)
        AS pg_catalog.text) AS metrics,
    retired
FROM sqlanon.release_catalog()
