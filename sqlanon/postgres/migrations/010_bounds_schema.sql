-- The (k,e) bounds tables move out of schema sqlanon into schema sqlanon_bounds. A
-- release creates its bounds table as the data owner, so owners had CREATE on sqlanon:
-- any of them could then plant in it an overload of sqlanon's own functions (an exact
-- match for a call such as sqlanon.release_ke(..., k => 5) with integer literals) that
-- a superuser's or another owner's call would run with their rights. sqlanon_bounds
-- holds only bounds tables: no search path names it and no call looks into it, so
-- owners may create there (grants.sql) and nowhere in sqlanon. The data step,
-- sqlanon.state.bounds.move_bounds_tables, moves the existing ones, grants and all.
-- The schema is created only when missing (a restore makes it before CREATE EXTENSION
-- runs, and an extension script may not take over an existing schema), and the
-- extension lets go of it (extension_finish.sql): releases' tables live there, and
-- DROP EXTENSION leaves them. No `;` ends a line inside the block: the URL install
-- splits migrations at those (sqltext.statements).
DO $create$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_namespace
                   WHERE nspname OPERATOR(pg_catalog.=) 'sqlanon_bounds')
    THEN CREATE SCHEMA sqlanon_bounds; END IF; END
$create$
