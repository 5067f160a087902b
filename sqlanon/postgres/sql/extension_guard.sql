-- First statement of the extension's install script (sqlanon.postgres.extension): a database
-- that `sqlanon install-postgres URL` installed already holds the catalog as plain
-- objects, which CREATE EXTENSION cannot take over; say so instead of failing on the
-- first CREATE TABLE.
DO $guard$
BEGIN
    IF pg_catalog.to_regclass('sqlanon.migrations') IS NOT NULL THEN
        RAISE EXCEPTION 'sqlanon is already installed in this database, without CREATE EXTENSION (by `sqlanon install-postgres URL`)'
            USING HINT = 'keep installing and upgrading it with `sqlanon install-postgres URL`; CREATE EXTENSION sqlanon is for databases that do not have sqlanon yet';
    END IF;
END
$guard$;
