-- Last statement of every extension script (install and upgrade, sqlanon.postgres.extension).
--
-- 1. sqlanon's PL/Python functions that this build's functions.sql no longer defines are
--    dropped (they would import an older directory), as `install-postgres URL` does.
-- 2. A release's bounds table, a family's rows or history table or a version's view that a
--    migration's data step (re)created while this script ran became an extension
--    member by accident: it is released from the extension again, so pg_dump dumps it
--    like every other release-created object. So is schema sqlanon_bounds (migration
--    010), where releases put those tables.
-- 3. Every catalog table but sqlanon.migrations (which the install script fills) is
--    marked with pg_extension_config_dump: pg_dump dumps its rows, the releases' state.
DO LANGUAGE plpython3u $py$
# sqlanon: prologue
_paths = repr(GD["sqlanon.python_path"])
for _row in plpy.execute(
    "SELECT pg_catalog.format('%I.%I(%s)', n.nspname, p.proname,"
    " pg_catalog.pg_get_function_identity_arguments(p.oid)) AS signature, p.prosrc"
    " FROM pg_catalog.pg_proc AS p"
    " JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace"
    " JOIN pg_catalog.pg_language AS l ON l.oid = p.prolang"
    " WHERE n.nspname = 'sqlanon' AND l.lanname = 'plpython3u'"
):
    if _paths not in _row["prosrc"]:
        plpy.execute("DROP FUNCTION " + _row["signature"])
_members = plpy.execute(
    "SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) AS name, c.relname, c.relkind"
    " FROM pg_catalog.pg_depend AS d"
    " JOIN pg_catalog.pg_class AS c ON c.oid = d.objid"
    " JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace"
    " WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass"
    " AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass"
    " AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'sqlanon')"
    " AND d.deptype = 'e' AND c.relkind IN ('r', 'v') ORDER BY 1"
)
_dump = plpy.prepare(
    "SELECT pg_catalog.pg_extension_config_dump($1::pg_catalog.regclass, '')", ["text"]
)
_bounds_schema = plpy.execute(
    "SELECT FROM pg_catalog.pg_depend AS d"
    " JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) d.objid"
    " WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass"
    " AND d.refobjid OPERATOR(pg_catalog.=)"
    " (SELECT oid FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'sqlanon')"
    " AND n.nspname OPERATOR(pg_catalog.=) 'sqlanon_bounds'"
    " AND d.deptype OPERATOR(pg_catalog.=) 'e'"
)
if _bounds_schema.nrows():
    plpy.execute("ALTER EXTENSION sqlanon DROP SCHEMA sqlanon_bounds")
for _row in _members:
    if _row["relkind"] == "v":
        if not _row["name"].startswith("sqlanon."):  # a version's view, not the catalog's
            plpy.execute("ALTER EXTENSION sqlanon DROP VIEW " + _row["name"])
    elif _row["relname"].endswith(("_bounds", "__rows", "__history")):
        plpy.execute("ALTER EXTENSION sqlanon DROP TABLE " + _row["name"])
    elif _row["relname"] != "migrations":
        plpy.execute(_dump, [_row["name"]])
$py$;
