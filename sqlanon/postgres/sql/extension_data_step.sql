-- A migration's data step (sqlanon.state.migrations.run_data_step) inside an extension upgrade
-- script, run by the new sqlanon build. {step} is the migration's name, checked by
-- sqlanon.postgres.extension, as a double-quoted Python string literal. An extension script
-- runs with search_path = sqlanon; the step looks for release tables in the session's
-- own schema (as `sqlanon install-postgres URL` runs it), so the path is reset to the
-- session's default for the step, then put back.
DO LANGUAGE plpython3u $py$
# sqlanon: prologue
from sqlanon.state import migrations
from sqlanon.postgres.session import PlpySession

_set = plpy.prepare("SELECT pg_catalog.set_config('search_path', $1, true)", ["text"])
_script_path = plpy.execute("SELECT pg_catalog.current_setting('search_path') AS p")[0]["p"]
_reset = plpy.execute(
    "SELECT reset_val FROM pg_catalog.pg_settings WHERE name = 'search_path'"
)[0]["reset_val"]
plpy.execute(_set, [_reset])
migrations.run_data_step(PlpySession(plpy), {step})
plpy.execute(_set, [_script_path])
$py$;
