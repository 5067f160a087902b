-- The SQL face of sqlanon on PostgreSQL: PL/Python functions whose bodies are one-line
-- calls into the sqlanon package. sqlanon.pg_install creates them (one transaction,
-- CREATE OR REPLACE), replacing each `# sqlanon: prologue` line with the code that puts
-- the installed package directory on sys.path (once per session).

-- Where this database's functions import sqlanon from, and what they import.
CREATE OR REPLACE FUNCTION sqlanon.python_info() RETURNS jsonb
LANGUAGE plpython3u STABLE AS $py$
# sqlanon: prologue
from sqlanon.backends.postgres import python_info
return python_info()
$py$;
