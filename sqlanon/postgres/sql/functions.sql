-- The SQL face of sqlanon on PostgreSQL: PL/Python functions whose bodies are one-line
-- calls into the sqlanon package. sqlanon.postgres.install creates them (one transaction,
-- CREATE OR REPLACE), replacing each `# sqlanon: prologue` line with the code that puts
-- the installed package directory on sys.path (once per session), then applies
-- sqlanon/postgres/sql/grants.sql.
--
-- Same names and arguments as DuckDB's sqlanon_* macros (sqlanon/duckdb/sql/functions.sql), in
-- schema sqlanon and with `name => value`. Every function runs with the CALLER's rights
-- (SECURITY INVOKER) except sqlanon.release_catalog() and sqlanon.release_hierarchies(),
-- the two SECURITY DEFINER functions (plain SQL, fixed search path), and the change-capture
-- triggers' sqlanon.capture_trigger() (PL/pgSQL, fixed search path, owned by the NOLOGIN
-- role sqlanon_capture, which may only add rows to sqlanon.captured).
--
-- Errors. Each public function is PL/pgSQL around a PL/Python one (`sqlanon._<name>`):
-- the Python side (sqlanon.postgres.server._reported) reports every failure as one
-- line with a SQLSTATE (server.SQLSTATES: 22023 bad argument, 42P01 / 42703 unknown
-- table / column, 42702 ambiguous unquoted name, 22000 infeasible, 55000 unsafe,
-- 55P03 lock timeout, 40001 retry the transaction, 0A000 unsupported query, 54000 query
-- too large, XX000 a bug; SQL errors such as 42501 or 57014 keep their own), and the
-- wrapper raises it again without PL/Python's "plpy.Error: " prefix and traceback. The
-- one CONTEXT line left names the wrapper (PL/pgSQL adds it to every RAISE). The
-- PL/Python functions that write run with client_min_messages = warning: no NOTICE
-- (DROP ... IF EXISTS, ...) reaches the caller.
--
-- Search paths (CVE-2018-1058). A release creates <family>_v<N> and the view <family> in
-- the caller's current_schema() and resolves an unqualified source there (dbt points it
-- at the model's schema with SET LOCAL search_path), but it never looks a name up in
-- the caller's path: whoever may create in a schema of that path could plant a function,
-- operator or type that the release, run by a superuser or another owner, would call
-- with their rights. So each public function is a PL/pgSQL wrapper without SET (it must
-- read pg_catalog.current_schema() of the caller) that names everything it calls with
-- its schema and uses no operator, around a PL/Python function with a fixed
-- `SET search_path = pg_catalog, pg_temp`: there functions and operators come from
-- pg_catalog alone (pg_temp is never searched for them), the SQL names its functions
-- pg_catalog.f all the same (sqlanon.sqltext.pg_qualified, tests/test_search_path.py),
-- and the caller's schema is written into every table name. The wrappers pass it as
-- pg_catalog.text (current_schema() is a `name`, which an overload taking `name` would
-- match better), and nobody but the installing superuser may create in schema sqlanon
-- (grants.sql), so no overload can be planted next to these functions. The DO blocks
-- run in extension scripts, whose search path is sqlanon: they write operators
-- OPERATOR(pg_catalog.=).

-- Where this database's functions import sqlanon from, and what they import.
CREATE OR REPLACE FUNCTION sqlanon.python_info() RETURNS jsonb
LANGUAGE plpython3u STABLE SET search_path = pg_catalog, pg_temp AS $py$
# sqlanon: prologue
from sqlanon.postgres.session import python_info
return python_info()
$py$;

-- Releases ---------------------------------------------------------------------------

-- Before domains (sqlanon 0.x) the release functions had no `domain` argument: drop
-- those signatures, which CREATE OR REPLACE would keep as overloads.
DROP FUNCTION IF EXISTS sqlanon.release_ke(text, text, text, text, text[], bigint,
    double precision, text, bigint);
DROP FUNCTION IF EXISTS sqlanon._release_ke(text, text, text, text, text, text[], bigint,
    double precision, text, bigint);
DROP FUNCTION IF EXISTS sqlanon.release_lhd(text, text, text, text[], text[], bigint, text,
    double precision, bigint);
DROP FUNCTION IF EXISTS sqlanon._release_lhd(text, text, text, text, text[], text[], bigint,
    text, double precision, bigint);
-- Earlier versions took a `seed`, which made a release's row order and shuffle
-- reproducible by anyone who guessed it (issue 23): those signatures go too.
DROP FUNCTION IF EXISTS sqlanon.release_ke(text, text, text, text, text[], bigint,
    double precision, text, bigint, text);
DROP FUNCTION IF EXISTS sqlanon._release_ke(text, text, text, text, text, text[], bigint,
    double precision, text, bigint, text);
DROP FUNCTION IF EXISTS sqlanon.release_lhd(text, text, text, text[], text[], bigint, text,
    double precision, bigint, text);
DROP FUNCTION IF EXISTS sqlanon._release_lhd(text, text, text, text, text[], text[], bigint,
    text, double precision, bigint, text);
-- Before dry runs (issue 26) they had no `dry_run` argument: those signatures go, the new
-- ones take it last with DEFAULT false, so every call of the old ones still works.
DROP FUNCTION IF EXISTS sqlanon.release_ke(text, text, text, text, text[], bigint,
    double precision, text, text);
DROP FUNCTION IF EXISTS sqlanon._release_ke(text, text, text, text, text, text[], bigint,
    double precision, text, text);
DROP FUNCTION IF EXISTS sqlanon.release_lhd(text, text, text, text[], text[], bigint, text,
    double precision, text);
DROP FUNCTION IF EXISTS sqlanon._release_lhd(text, text, text, text, text[], text[], bigint,
    text, double precision, text);
-- Before global recoding and lHD policies (issue 26) release_lhd had neither argument.
DROP FUNCTION IF EXISTS sqlanon.release_lhd(text, text, text, text[], text[], bigint, text,
    double precision, text, boolean);
DROP FUNCTION IF EXISTS sqlanon._release_lhd(text, text, text, text, text[], text[], bigint,
    text, double precision, text, boolean);

-- Before `dataset` (issue 28) they ended with `dry_run` (release_lhd with `recoding`):
-- those signatures go, the new ones take `dataset` last with DEFAULT NULL.
DROP FUNCTION IF EXISTS sqlanon.release_ke(text, text, text, text, text[], bigint,
    double precision, text, text, boolean);
DROP FUNCTION IF EXISTS sqlanon._release_ke(text, text, text, text, text, text[], bigint,
    double precision, text, text, boolean);
DROP FUNCTION IF EXISTS sqlanon.release_lhd(text, text, text, text[], text[], bigint, text,
    double precision, text, boolean, text);
DROP FUNCTION IF EXISTS sqlanon._release_lhd(text, text, text, text, text[], text[], bigint,
    text, double precision, text, boolean, text);

-- Before lHD policies (issue 26) release_lhd ended with `dataset`: that signature goes,
-- the new one takes `policy` last with DEFAULT 'publish'.
DROP FUNCTION IF EXISTS sqlanon.release_lhd(text, text, text, text[], text[], bigint, text,
    double precision, text, boolean, text, text);
DROP FUNCTION IF EXISTS sqlanon._release_lhd(text, text, text, text, text[], text[], bigint,
    text, double precision, text, boolean, text, text);

CREATE OR REPLACE FUNCTION sqlanon._release_ke(schema text, source text, family text,
        key text, sensitive text, quasi text[], k bigint, e double precision, policy text,
        domain text, dry_run boolean DEFAULT false, dataset text DEFAULT NULL) RETURNS jsonb
LANGUAGE plpython3u VOLATILE SET search_path = pg_catalog, pg_temp SET client_min_messages = warning
AS $py$
# sqlanon: prologue
from sqlanon.postgres import server
return server.server_release_ke(plpy, schema, source, family, key, sensitive, quasi, k, e, policy, domain, dry_run, dataset)
$py$;

CREATE OR REPLACE FUNCTION sqlanon.release_ke(source text, family text,
        key text DEFAULT NULL, sensitive text DEFAULT NULL, quasi text[] DEFAULT '{}',
        k bigint DEFAULT 5, e double precision DEFAULT 0, policy text DEFAULT 'auto',
        domain text DEFAULT NULL, dry_run boolean DEFAULT false, dataset text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    failure text;
    state text;
BEGIN
    RETURN sqlanon._release_ke(CAST(pg_catalog.current_schema() AS pg_catalog.text), source,
        family, key, sensitive, quasi, k, e, policy, domain, dry_run, dataset);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;

CREATE OR REPLACE FUNCTION sqlanon._release_lhd(schema text, source text, family text,
        key text, quasi text[], sensitive text[], l bigint, algorithm text,
        max_suppression double precision, domain text, dry_run boolean DEFAULT false,
        recoding text DEFAULT 'local', dataset text DEFAULT NULL,
        policy text DEFAULT 'publish')
RETURNS jsonb
LANGUAGE plpython3u VOLATILE SET search_path = pg_catalog, pg_temp SET client_min_messages = warning
AS $py$
# sqlanon: prologue
from sqlanon.postgres import server
return server.server_release_lhd(plpy, schema, source, family, key, quasi, sensitive, l, algorithm, max_suppression, domain, dry_run, recoding, dataset, policy)
$py$;

CREATE OR REPLACE FUNCTION sqlanon.release_lhd(source text, family text,
        key text DEFAULT NULL, quasi text[] DEFAULT '{}', sensitive text[] DEFAULT '{}',
        l bigint DEFAULT 2, algorithm text DEFAULT 'auto',
        max_suppression double precision DEFAULT 0.05, domain text DEFAULT NULL,
        dry_run boolean DEFAULT false, recoding text DEFAULT 'local',
        dataset text DEFAULT NULL, policy text DEFAULT 'publish')
RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    failure text;
    state text;
BEGIN
    RETURN sqlanon._release_lhd(CAST(pg_catalog.current_schema() AS pg_catalog.text), source,
        family, key, quasi, sensitive, l, algorithm, max_suppression, domain, dry_run,
        recoding, dataset, policy);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;

-- Hierarchies (lHD). `folder` is a directory on the SERVER's file system, read by the
-- server's OS user: only the data owner role may call this. NULL: the hierarchies
-- bundled with sqlanon (dataset 'adult').
CREATE OR REPLACE FUNCTION sqlanon._load_hierarchies(dataset text, folder text) RETURNS jsonb
LANGUAGE plpython3u VOLATILE SET search_path = pg_catalog, pg_temp SET client_min_messages = warning
AS $py$
# sqlanon: prologue
from sqlanon.postgres import server
return server.server_call(plpy, "load_hierarchies", dataset, folder)
$py$;

CREATE OR REPLACE FUNCTION sqlanon.load_hierarchies(dataset text, folder text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    failure text;
    state text;
BEGIN
    RETURN sqlanon._load_hierarchies(dataset, folder);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;

CREATE OR REPLACE FUNCTION sqlanon._hierarchy_widths(dataset text, attribute text,
        widths double precision[]) RETURNS jsonb
LANGUAGE plpython3u VOLATILE SET search_path = pg_catalog, pg_temp SET client_min_messages = warning
AS $py$
# sqlanon: prologue
from sqlanon.postgres import server
return server.server_call(plpy, "hierarchy_widths", dataset, attribute, widths)
$py$;

CREATE OR REPLACE FUNCTION sqlanon.hierarchy_widths(dataset text, attribute text,
        widths double precision[]) RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    failure text;
    state text;
BEGIN
    RETURN sqlanon._hierarchy_widths(dataset, attribute, widths);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;

-- The audit reads the private state and the source: the data owner's tool. It audits
-- the family's domain (every release of the people behind its source, every family);
-- sqlanon.audit(family, true) adds the exposed keys.
DROP FUNCTION IF EXISTS sqlanon._audit(text, text);  -- before the records flag
CREATE OR REPLACE FUNCTION sqlanon._audit(schema text, family text, records boolean)
RETURNS jsonb
LANGUAGE plpython3u VOLATILE SET search_path = pg_catalog, pg_temp SET client_min_messages = warning
AS $py$
# sqlanon: prologue
from sqlanon.postgres import server
return server.server_call(plpy, "audit", family, bool(records), schema=schema)
$py$;

CREATE OR REPLACE FUNCTION sqlanon.audit(family text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    failure text;
    state text;
BEGIN
    RETURN sqlanon._audit(CAST(pg_catalog.current_schema() AS pg_catalog.text), family, false);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;

CREATE OR REPLACE FUNCTION sqlanon.audit(family text, records boolean) RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    failure text;
    state text;
BEGIN
    RETURN sqlanon._audit(CAST(pg_catalog.current_schema() AS pg_catalog.text), family, records);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;

-- The data owner's erasure: the deletions from `source` (released, the one source of
-- its domain) reach sqlanon's state now, without publishing a version: a published
-- record gone from it becomes a ghost (its key replaced everywhere in schema sqlanon),
-- a never-published one is forgotten. An unqualified source is the caller's
-- current_schema()'s.
CREATE OR REPLACE FUNCTION sqlanon._erase(schema text, source text) RETURNS jsonb
LANGUAGE plpython3u VOLATILE SET search_path = pg_catalog, pg_temp SET client_min_messages = warning
AS $py$
# sqlanon: prologue
from sqlanon.postgres import server
return server.server_call(plpy, "erase", source, schema=schema)
$py$;

CREATE OR REPLACE FUNCTION sqlanon.erase(source text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    failure text;
    state text;
BEGIN
    RETURN sqlanon._erase(CAST(pg_catalog.current_schema() AS pg_catalog.text), source);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;

-- Retention: the family's versions but its newest `keep` are no longer served (their
-- views and the rows no served version needs go); the private state and catalog rows
-- stay. The family's owner only (a member of the role owning its rows); the schema is
-- the caller's, where the family's views are looked up when the catalog names none.
CREATE OR REPLACE FUNCTION sqlanon._retire(schema text, family text, keep bigint) RETURNS jsonb
LANGUAGE plpython3u VOLATILE SET search_path = pg_catalog, pg_temp SET client_min_messages = warning
AS $py$
# sqlanon: prologue
from sqlanon.postgres import server
return server.server_call(plpy, "retire", family, keep, schema=schema)
$py$;

CREATE OR REPLACE FUNCTION sqlanon.retire(family text, keep bigint) RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    failure text;
    state text;
BEGIN
    RETURN sqlanon._retire(CAST(pg_catalog.current_schema() AS pg_catalog.text), family, keep);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;

-- Change capture (issue 27) ----------------------------------------------------------------
--
-- sqlanon.capture_changes(source) puts three statement-level AFTER triggers on a source
-- table (DELETE and UPDATE with their transition tables, TRUNCATE); each runs
-- sqlanon.capture_trigger(), which records the keys that left the table in
-- sqlanon.captured, so that a later release finds the deleted records among them
-- (sqlanon.state.capture). sqlanon.stop_capture(source) drops them. Both are the table
-- owner's (sqlanon.state.capture checks it), like sqlanon.retire is the family's owner's.
--
-- The trigger function runs with its owner's rights, never the writer's: SECURITY DEFINER,
-- owned by the NOLOGIN role sqlanon_capture (grants.sql), which may only read
-- sqlanon.capture_sources and add rows to sqlanon.captured. A writer needs no right on
-- schema sqlanon; a column type whose conversion to JSON runs the table owner's code
-- runs it with those rights only. Nobody calls it directly (PostgreSQL calls a trigger
-- function only as a trigger), EXECUTE on it (needed to create a trigger with it) is the
-- owners' alone, and on a table capture_changes did not register it records nothing:
-- every row it adds is a key that left a captured table (a release checks each against
-- the source anyway). A key is recorded as its cast to text writes it when a statement
-- touched many rows, as JSON writes it when a few (static SQL: the cast would need a
-- dynamic EXECUTE, planned at every call); the release reads either back through the
-- key's type (sqlanon/postgres/sql/capture_gone_keys.sql).
CREATE OR REPLACE FUNCTION sqlanon.capture_trigger() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    key_name name;
BEGIN
    SELECT a.attname INTO key_name
    FROM sqlanon.capture_sources AS s
    LEFT JOIN pg_catalog.pg_attribute AS a
      ON a.attrelid = s.relid AND a.attnum = s.key_attnum AND NOT a.attisdropped
    WHERE s.relid = TG_RELID;
    IF NOT FOUND THEN
        RETURN NULL;  -- a table capture_changes did not register
    END IF;
    IF TG_OP = 'TRUNCATE' OR key_name IS NULL THEN
        -- every key may have left (or the key column is gone): no key, a full pass next
        INSERT INTO sqlanon.captured (relid, record_key) VALUES (TG_RELID, NULL);
    ELSIF EXISTS (SELECT FROM sqlanon_old OFFSET 10) THEN
        -- Many rows: the key's own cast to text, in SQL planned at each statement (~0.1 ms)
        IF TG_OP = 'DELETE' THEN
            EXECUTE pg_catalog.format(
                'INSERT INTO sqlanon.captured (relid, record_key) '
                'SELECT $1, CAST(o.%1$I AS pg_catalog.varchar) FROM sqlanon_old AS o '
                'WHERE o.%1$I IS NOT NULL', key_name)
            USING TG_RELID;
        ELSE  -- an UPDATE: only the keys no new row has (a changed value keeps its key)
            EXECUTE pg_catalog.format(
                'INSERT INTO sqlanon.captured (relid, record_key) SELECT $1, gone.k FROM ('
                'SELECT CAST(o.%1$I AS pg_catalog.varchar) FROM sqlanon_old AS o '
                'WHERE o.%1$I IS NOT NULL EXCEPT '
                'SELECT CAST(n.%1$I AS pg_catalog.varchar) FROM sqlanon_new AS n) AS gone (k)',
                key_name)
            USING TG_RELID;
        END IF;
    ELSIF TG_OP = 'DELETE' THEN
        -- A few rows: SQL planned once per session, the key taken by name from each row
        -- as jsonb (~10 us a row), in the text JSON writes
        INSERT INTO sqlanon.captured (relid, record_key)
        SELECT TG_RELID, gone.k
        FROM (SELECT pg_catalog.jsonb_extract_path_text(pg_catalog.to_jsonb(o), key_name)
              FROM sqlanon_old AS o) AS gone (k)
        WHERE gone.k IS NOT NULL;
    ELSE
        INSERT INTO sqlanon.captured (relid, record_key)
        SELECT TG_RELID, gone.k
        FROM (SELECT pg_catalog.jsonb_extract_path_text(pg_catalog.to_jsonb(o), key_name)
              FROM sqlanon_old AS o
              EXCEPT
              SELECT pg_catalog.jsonb_extract_path_text(pg_catalog.to_jsonb(n), key_name)
              FROM sqlanon_new AS n) AS gone (k)
        WHERE gone.k IS NOT NULL;
    END IF;
    RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION sqlanon._capture_changes(schema text, source text, key text)
RETURNS jsonb
LANGUAGE plpython3u VOLATILE SET search_path = pg_catalog, pg_temp SET client_min_messages = warning
AS $py$
# sqlanon: prologue
from sqlanon.postgres import server
return server.server_call(plpy, "capture_changes", source, key, schema=schema)
$py$;

CREATE OR REPLACE FUNCTION sqlanon.capture_changes(source text, key text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    failure text;
    state text;
BEGIN
    RETURN sqlanon._capture_changes(CAST(pg_catalog.current_schema() AS pg_catalog.text),
        source, key);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;

CREATE OR REPLACE FUNCTION sqlanon._stop_capture(schema text, source text) RETURNS jsonb
LANGUAGE plpython3u VOLATILE SET search_path = pg_catalog, pg_temp SET client_min_messages = warning
AS $py$
# sqlanon: prologue
from sqlanon.postgres import server
return server.server_call(plpy, "stop_capture", source, schema=schema)
$py$;

CREATE OR REPLACE FUNCTION sqlanon.stop_capture(source text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    failure text;
    state text;
BEGIN
    RETURN sqlanon._stop_capture(CAST(pg_catalog.current_schema() AS pg_catalog.text), source);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;

-- Interval answers (analysts) ------------------------------------------------------------

-- What the rewriter needs to know about every release, and nothing more (no k, e,
-- policy, counts or member state): the one SECURITY DEFINER function, so that
-- analysts need no access to sqlanon.releases. `ghosts` is the number of ghost rows
-- (deleted records kept as members of their group or class), which the release table
-- shows anyway (its ghost / class_ghosts column). `null_quasi` lists the quasi columns
-- an lHD release published NULL values of (as NULL labels, or hidden in '*'), so the
-- rewriter reads '*' there as possibly NULL: quasi-identifier facts, not sensitive ones.
-- `schema_name` is the schema the release's tables are in, so that the rewriter names
-- them whatever the analyst's search path (recorded by the release; for releases made
-- before, the first schema with a table of that name).
-- `retired`: the owner no longer serves the version (sqlanon.retire), so the rewriter
-- refuses a query naming it with a message saying so.
-- Before ghosts the function had no `ghosts` column, before NULL quasi values no
-- `null_quasi`, before schemas no `schema_name`, before retention no `retired`; CREATE
-- OR REPLACE cannot change the result type, so an older version is dropped first
-- (grants.sql grants it again).
DO $do$
BEGIN
    IF EXISTS (
        SELECT FROM pg_catalog.pg_proc AS p
        JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
        WHERE n.nspname OPERATOR(pg_catalog.=) 'sqlanon'
          AND p.proname OPERATOR(pg_catalog.=) 'release_catalog'
          AND NOT ('retired' OPERATOR(pg_catalog.=) ANY (p.proargnames))
    ) THEN
        DROP FUNCTION sqlanon.release_catalog();
    END IF;
END
$do$;
CREATE OR REPLACE FUNCTION sqlanon.release_catalog()
RETURNS TABLE (family text, version integer, table_name text, model text, quasi jsonb,
               sensitive jsonb, ghosts integer, null_quasi jsonb, schema_name text,
               retired boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $sql$
SELECT r.family, r.version, r.table_name, r.model, r.parameters -> 'quasi',
       r.parameters -> 'sensitive', COALESCE(CAST(r.metrics ->> 'ghosts' AS integer), 0),
       COALESCE(r.metrics -> 'null_quasi', CAST('[]' AS jsonb)),
       COALESCE(r.parameters ->> 'schema', (
           SELECT n.nspname FROM pg_catalog.pg_class AS c
           JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
           WHERE c.relname = r.table_name AND c.relkind IN ('r', 'p', 'v', 'm')
           ORDER BY n.nspname LIMIT 1)),
       r.version < COALESCE((SELECT pg_catalog.max(t.served_from) FROM sqlanon.retirements AS t
                             WHERE t.family = r.family), 1)
FROM sqlanon.releases AS r ORDER BY r.family, r.version
$sql$;

-- The public generalization metadata of every lHD release, what the rewriter needs to
-- know what a published label may stand for: per release table and quasi column, the
-- rows (value, level, label) of its ARX hierarchy, or the widths spec of its numeric
-- one (widths NULL / value, level, label NULL). Nothing else: no members, no l, k, e or
-- other parameters, no source data; hierarchies of columns no release publishes as
-- quasi columns, and of (k,e) releases, stay hidden. SECURITY DEFINER so analysts need
-- no access to sqlanon.releases / sqlanon.hierarchies. Matching as in
-- sqlanon.release_lhd: dataset = the release's dataset (before releases recorded it: the
-- source's table name without schema), attribute ~ column ignoring case and '-' vs '_'.
CREATE OR REPLACE FUNCTION sqlanon.release_hierarchies()
RETURNS TABLE (table_name text, quasi text, value text, level integer, label text,
               widths jsonb)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $sql$
WITH q AS (
    SELECT r.table_name, c.quasi,
           COALESCE(r.parameters ->> 'dataset',  -- (syntax, not a function)
               pg_catalog.regexp_replace(r.parameters ->> 'source', '^.*[.]', '')) AS dataset
    FROM sqlanon.releases AS r
    CROSS JOIN LATERAL pg_catalog.jsonb_array_elements_text(
        CASE pg_catalog.jsonb_typeof(r.parameters -> 'quasi')
            WHEN 'array' THEN r.parameters -> 'quasi'
            WHEN 'string' THEN pg_catalog.jsonb_build_array(r.parameters -> 'quasi')
            ELSE '[]'::jsonb
        END) AS c (quasi)
    WHERE r.model = 'lhd'
)
SELECT q.table_name, q.quasi, h.value, h.level, h.label, NULL::jsonb
FROM q JOIN sqlanon.hierarchies AS h
    ON h.dataset = q.dataset
   AND pg_catalog.replace(pg_catalog.lower(h.attribute), '-', '_') = pg_catalog.replace(pg_catalog.lower(q.quasi), '-', '_')
UNION ALL
SELECT q.table_name, q.quasi, NULL, NULL, NULL, w.widths
FROM q JOIN sqlanon.hierarchy_widths AS w
    ON w.dataset = q.dataset
   AND pg_catalog.replace(pg_catalog.lower(w.attribute), '-', '_') = pg_catalog.replace(pg_catalog.lower(q.quasi), '-', '_')
ORDER BY 1, 2, 4, 3
$sql$;

-- The interval SQL of an analyst's aggregate query, for `dialect` (any sqlglot dialect).
-- The PL/Python side of rewrite, interval_sql, interval and interval_columns.
CREATE OR REPLACE FUNCTION sqlanon._rewrite(sql text, dialect text) RETURNS text
LANGUAGE plpython3u STABLE SET search_path = pg_catalog, pg_temp AS $py$
# sqlanon: prologue
from sqlanon.postgres import server
return server.server_rewrite(plpy, sql, dialect)
$py$;

CREATE OR REPLACE FUNCTION sqlanon.rewrite(sql text, dialect text DEFAULT 'postgres')
RETURNS text
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    failure text;
    state text;
BEGIN
    RETURN sqlanon._rewrite(sql, dialect);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;

-- The interval SQL for this server: inspect it, or EXECUTE it in PL/pgSQL under
-- SET search_path = pg_catalog, pg_temp (its operators are bare; sqlanon.interval does so).
CREATE OR REPLACE FUNCTION sqlanon.interval_sql(sql text) RETURNS text
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    failure text;
    state text;
BEGIN
    RETURN sqlanon._rewrite(sql, 'postgres');
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;

-- The answer as real columns, like dblink: the caller names them in a column definition
-- list, which sqlanon.interval_columns(sql) writes out (names and exact types):
--   SELECT sqlanon.interval_columns('SELECT sex, SUM(capital_loss) FROM adult_ke GROUP BY sex');
--     -> sex text, sum_low numeric, sum_high numeric, sum_est numeric
--   SELECT * FROM sqlanon.interval('SELECT sex, SUM(capital_loss) FROM adult_ke GROUP BY sex')
--     AS t(sex text, sum_low numeric, sum_high numeric, sum_est numeric);
-- The interval SQL runs with the caller's rights, in the query's order, under the pinned
-- search path: the rewriter names each release table with its schema.
-- Before this, interval returned SETOF jsonb (now sqlanon.interval_json); CREATE OR
-- REPLACE cannot change the result type, so that version is dropped first.
DO $do$
BEGIN
    IF EXISTS (
        SELECT FROM pg_catalog.pg_proc AS p
        JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
        WHERE n.nspname OPERATOR(pg_catalog.=) 'sqlanon'
          AND p.proname OPERATOR(pg_catalog.=) 'interval'
          AND p.prorettype OPERATOR(pg_catalog.=) 'pg_catalog.jsonb'::pg_catalog.regtype
    ) THEN
        DROP FUNCTION sqlanon.interval(text);
    END IF;
END
$do$;
CREATE OR REPLACE FUNCTION sqlanon.interval(sql text) RETURNS SETOF record
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    failure text;
    state text;
    detail text;
BEGIN
    RETURN QUERY EXECUTE sqlanon._rewrite(sql, 'postgres');
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE,
        detail = PG_EXCEPTION_DETAIL;
    IF state = '42804' THEN  -- the column definition list does not fit the answer
        failure := pg_catalog.concat(failure, ': ', detail, ' sqlanon.interval_columns(sql) ',
            'gives the column definition list: ',
            sqlanon._interval_columns(sql));
    END IF;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;

CREATE OR REPLACE FUNCTION sqlanon._interval_columns(sql text) RETURNS text
LANGUAGE plpython3u STABLE SET search_path = pg_catalog, pg_temp AS $py$
# sqlanon: prologue
from sqlanon.postgres import server
return server.server_interval_columns(plpy, sql)
$py$;

-- The column definition list of sqlanon.interval(sql): "name type, ..." in order.
CREATE OR REPLACE FUNCTION sqlanon.interval_columns(sql text) RETURNS text
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    failure text;
    state text;
BEGIN
    RETURN sqlanon._interval_columns(sql);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;

-- The answer as one jsonb object per output row, in the query's order, with
-- <name>_low, <name>_high and <name>_est per aggregate: no column list to write.
--   SELECT * FROM sqlanon.interval_json('SELECT sex, SUM(capital_loss) FROM adult_ke GROUP BY sex');
CREATE OR REPLACE FUNCTION sqlanon._interval_json(sql text) RETURNS SETOF jsonb
LANGUAGE plpython3u STABLE SET search_path = pg_catalog, pg_temp AS $py$
# sqlanon: prologue
from sqlanon.postgres import server
return server.server_interval(plpy, sql)
$py$;

CREATE OR REPLACE FUNCTION sqlanon.interval_json(sql text) RETURNS SETOF jsonb
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    failure text;
    state text;
BEGIN
    RETURN QUERY SELECT * FROM sqlanon._interval_json(sql);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING ERRCODE = state,
        MESSAGE = pg_catalog.regexp_replace(failure, '^plpy\.Error: ', '');
END
$fn$;
