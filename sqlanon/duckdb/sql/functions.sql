-- The SQL face of sqlanon on DuckDB: macros give the `name := value` call style over
-- the positional Python UDFs registered by sqlanon.duckdb.register.register().
-- dry_run := true: plan as the release would, write nothing, return what it would return.
-- dataset := 'adult': what the source is a copy, view or model of (default: its table's
-- name); lHD looks its hierarchies up under it, and a new domain is named after it.
CREATE OR REPLACE TEMP MACRO sqlanon_release_ke(source, family, key := NULL, sensitive := NULL,
        quasi := [], k := 5, e := 0, policy := 'auto', domain := NULL, dry_run := false,
        dataset := NULL) AS
    _sqlanon_release_ke(source, family, key, sensitive, quasi, k, e, policy, domain, dry_run,
                        dataset);
CREATE OR REPLACE TEMP MACRO sqlanon_release_lhd(source, family, key := NULL, quasi := [],
        sensitive := [], l := 2, algorithm := 'auto', max_suppression := 0.05,
        domain := NULL, dry_run := false, recoding := 'local', dataset := NULL,
        policy := 'publish') AS
    _sqlanon_release_lhd(source, family, key, quasi, sensitive, l, algorithm, max_suppression,
                         domain, dry_run, recoding, dataset, policy);
-- The data owner's erasure: deletions from the source reach the state now, unpublished.
CREATE OR REPLACE TEMP MACRO sqlanon_erase(source) AS _sqlanon_erase(source);
-- Retention: serve only the family's newest `keep` versions (the private state stays).
CREATE OR REPLACE TEMP MACRO sqlanon_retire(family, keep := NULL) AS _sqlanon_retire(family, keep);
-- folder := NULL: the hierarchies bundled with sqlanon (dataset 'adult')
CREATE OR REPLACE TEMP MACRO sqlanon_load_hierarchies(dataset, folder := NULL) AS
    _sqlanon_load_hierarchies(dataset, folder);
CREATE OR REPLACE TEMP MACRO sqlanon_hierarchy_widths(dataset, attribute, widths) AS
    _sqlanon_hierarchy_widths(dataset, attribute, widths);
-- The audit of the family's domain; records := true adds the exposed keys (owner only).
CREATE OR REPLACE TEMP MACRO sqlanon_audit(family, records := false) AS
    _sqlanon_audit(family, records);
-- The analyst hand-off: the releases of a family or domain, nothing private, in a new
-- DuckDB file (format := 'parquet': a folder); again to the same path adds new versions.
CREATE OR REPLACE TEMP MACRO sqlanon_export(name, path, format := 'duckdb') AS
    _sqlanon_export(name, path, format);
-- SELECT * FROM query(sqlanon_interval('SELECT sex, SUM(x) FROM fam GROUP BY sex'))
CREATE OR REPLACE TEMP MACRO sqlanon_interval(sql) AS _sqlanon_interval(sql);
CREATE OR REPLACE TEMP MACRO sqlanon_rewrite(sql, dialect := 'duckdb') AS _sqlanon_rewrite(sql, dialect);
-- The data owner's bounds on analyst queries (sqlanon.query_limits); NULL: the default.
CREATE OR REPLACE TEMP MACRO sqlanon_set_limit(name, value) AS _sqlanon_set_limit(name, value);
