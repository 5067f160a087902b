-- Roles and privileges, applied by sqlanon.postgres.install after functions.sql (idempotent).
--
--   sqlanon_owner    runs releases, erasures, retirements, audits and hierarchy loads. It also needs, granted
--                    by the database's administrator: SELECT on every source it releases
--                    and CREATE on the schema the families go to (the caller's
--                    current_schema()). Grant it to the data owner's login role(s).
--   sqlanon_analyst  asks interval queries: EXECUTE on interval / interval_columns /
--                    interval_json / interval_sql / rewrite (and their _ PL/Python halves)
--                    and the catalog functions release_catalog / release_hierarchies
--                    only, and SELECT on each release table, family view and bounds
--                    table, granted by the release that creates them, and SELECT on
--                    sqlanon.query_limits (the owner's bounds on queries). Nothing else:
--                    no source, no sqlanon.members (nor its spans), no sqlanon.releases,
--                    no hierarchy tables
--                    (lHD releases' hierarchies only through release_hierarchies).
--   sqlanon_capture  owns sqlanon.capture_trigger() (SECURITY DEFINER), the function of
--                    the change-capture triggers (issue 27): it may read
--                    sqlanon.capture_sources and add rows to sqlanon.captured, nothing
--                    else. Grant it to nobody.
--
-- Roles belong to the cluster, not the database: another database's install may create
-- them at the same moment, hence the duplicate_object handler.
DO $roles$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'sqlanon_owner') THEN
        CREATE ROLE sqlanon_owner NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'sqlanon_analyst') THEN
        CREATE ROLE sqlanon_analyst NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'sqlanon_capture') THEN
        CREATE ROLE sqlanon_capture NOLOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$roles$;

-- Nobody but the installing superuser creates anything in schema sqlanon: an owner who
-- could would plant overloads of its functions (migration 010). The per-release bounds
-- tables go to sqlanon_bounds, which no search path or call looks into.
REVOKE ALL ON SCHEMA sqlanon FROM PUBLIC;
REVOKE CREATE ON SCHEMA sqlanon FROM sqlanon_owner;
GRANT USAGE ON SCHEMA sqlanon TO sqlanon_owner, sqlanon_analyst;
REVOKE ALL ON SCHEMA sqlanon_bounds FROM PUBLIC;
GRANT USAGE ON SCHEMA sqlanon_bounds TO sqlanon_owner, sqlanon_analyst;
GRANT CREATE ON SCHEMA sqlanon_bounds TO sqlanon_owner;

REVOKE ALL ON ALL TABLES IN SCHEMA sqlanon FROM PUBLIC;
GRANT SELECT, INSERT, DELETE ON sqlanon.releases, sqlanon.member_spans, sqlanon.cell_spans,
    sqlanon.state_versions, sqlanon.kept_values, sqlanon.links,
    sqlanon.hierarchies, sqlanon.hierarchy_widths TO sqlanon_owner;
GRANT UPDATE ON sqlanon.hierarchies, sqlanon.hierarchy_widths, sqlanon.member_spans,
    sqlanon.cell_spans, sqlanon.kept_values, sqlanon.links TO sqlanon_owner;
-- Retirements (migration 013): written once, never changed.
GRANT SELECT, INSERT ON sqlanon.retirements TO sqlanon_owner;
-- The state as of each version (migration 011): views over the spans, read only.
GRANT SELECT ON sqlanon.members, sqlanon.cells TO sqlanon_owner;
-- Change capture (migration 014): the owners turn it on and off and releases read and
-- prune what it captured; the trigger function's role only adds what leaves a table.
GRANT SELECT, INSERT, DELETE ON sqlanon.capture_sources, sqlanon.capture_marks TO sqlanon_owner;
GRANT SELECT, DELETE ON sqlanon.captured TO sqlanon_owner;
-- (a capture mark records how many migrations were applied: one since, a full pass)
GRANT SELECT ON sqlanon.migrations TO sqlanon_owner;
GRANT USAGE ON SCHEMA sqlanon TO sqlanon_capture;
GRANT SELECT ON sqlanon.capture_sources TO sqlanon_capture;
GRANT INSERT ON sqlanon.captured TO sqlanon_capture;
ALTER FUNCTION sqlanon.capture_trigger() OWNER TO sqlanon_capture;
-- The bounds on analyst queries: the owner sets them, analysts' rewrites read them.
GRANT SELECT, INSERT, UPDATE, DELETE ON sqlanon.query_limits TO sqlanon_owner;
GRANT SELECT ON sqlanon.query_limits TO sqlanon_analyst;

REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA sqlanon FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    sqlanon.release_ke(text, text, text, text, text[], bigint, double precision, text, text,
                       boolean, text),
    sqlanon._release_ke(text, text, text, text, text, text[], bigint, double precision, text,
                        text, boolean, text),
    sqlanon.release_lhd(text, text, text, text[], text[], bigint, text, double precision, text,
                        boolean, text, text, text),
    sqlanon._release_lhd(text, text, text, text, text[], text[], bigint, text,
                         double precision, text, boolean, text, text, text),
    sqlanon.load_hierarchies(text, text),
    sqlanon._load_hierarchies(text, text),
    sqlanon.hierarchy_widths(text, text, double precision[]),
    sqlanon._hierarchy_widths(text, text, double precision[]),
    sqlanon.audit(text),
    sqlanon.audit(text, boolean),
    sqlanon._audit(text, text, boolean),
    sqlanon.erase(text),
    sqlanon._erase(text, text),
    sqlanon.retire(text, bigint),
    sqlanon._retire(text, text, bigint),
    sqlanon.capture_changes(text, text),
    sqlanon._capture_changes(text, text, text),
    sqlanon.stop_capture(text),
    sqlanon._stop_capture(text, text),
    sqlanon.capture_trigger(),
    sqlanon.python_info()
TO sqlanon_owner;
GRANT EXECUTE ON FUNCTION
    sqlanon.interval(text),
    sqlanon.interval_columns(text),
    sqlanon._interval_columns(text),
    sqlanon.interval_json(text),
    sqlanon._interval_json(text),
    sqlanon.interval_sql(text),
    sqlanon.rewrite(text, text),
    sqlanon._rewrite(text, text),
    sqlanon.release_catalog(),
    sqlanon.release_hierarchies()
TO sqlanon_analyst, sqlanon_owner;
