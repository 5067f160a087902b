-- sqlanon.postgres.install asks the server's PL/Python which Python it runs and what it reads
-- in an install marker (a path on the server's file system). Session-local.
CREATE OR REPLACE FUNCTION pg_temp.sqlanon_install_probe(marker text) RETURNS text
LANGUAGE plpython3u AS $py$
import json, sys
found, error = None, None
if marker is not None:
    try:
        with open(marker) as f:
            found = json.load(f)
    except (OSError, ValueError) as exc:
        error = str(exc)
return json.dumps({"python": "%d.%d" % sys.version_info[:2], "marker": found, "error": error})
$py$;
