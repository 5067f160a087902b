"""The PostgreSQL mechanism against the real test server: install_postgres, the PL/Python
session (inside real plpython3u functions importing the installed package) and the
psycopg session."""

from __future__ import annotations

import json
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
import sqlglot

from sqlanon import sqltext
from sqlanon.errors import ConcurrentReleaseError, ConfigError
from sqlanon.postgres import install
from sqlanon.postgres.install import PostgresInstall, install_postgres, with_prologue
from sqlanon.postgres.session import PsycopgSession

pytestmark = pytest.mark.postgres


@pytest.fixture
def installed(pg_db: str, pg_python_root: Path) -> PostgresInstall:
    return install_postgres(pg_db, python_root=pg_python_root)


def run_in_server(conn: Any, installed: PostgresInstall, body: str) -> Any:
    """Run ``body`` (Python defining ``run(s)``, ``s`` a PlpySession) inside the server
    as a PL/Python function of this database; returns what ``run`` returned."""
    source = (
        "# sqlanon: prologue\n"
        "import json\n"
        "from sqlanon.postgres.session import PlpySession\n"
        + textwrap.dedent(body)
        + "\nreturn json.dumps(run(PlpySession(plpy)))\n"
    )
    conn.execute(
        with_prologue(
            "CREATE OR REPLACE FUNCTION public.t_run() RETURNS text LANGUAGE plpython3u"
            f" AS $py$\n{source}$py$",
            installed.python_dir,
            installed.deps_dir,
        )
    )
    return json.loads(conn.execute("SELECT public.t_run()").fetchone()[0])


def python_info(conn: Any) -> dict[str, Any]:
    return dict(conn.execute("SELECT sqlanon.python_info()").fetchone()[0])


# --- install_postgres --------------------------------------------------------------------


def test_install_twice_applies_migrations_once(pg_db: str, pg_python_root: Path) -> None:
    first = install_postgres(pg_db, python_root=pg_python_root)
    second = install_postgres(pg_db, python_root=pg_python_root)
    every = [name for name, _ in sqltext.migrations("postgres")]
    assert first.migrations == every and every[0] == "001_catalog"
    assert second.migrations == []
    assert second.built is False
    assert (second.python_dir, second.deps_dir) == (first.python_dir, first.deps_dir)
    with psycopg.connect(pg_db) as conn:
        applied = conn.execute("SELECT name FROM sqlanon.migrations ORDER BY name").fetchall()
        assert applied == [(name,) for name in every]
        info = python_info(conn)
    assert info["python_dir"] == str(first.python_dir)
    assert (info["numpy"], info["sqlglot"]) == (np.__version__, sqlglot.__version__)


def test_catalog_columns_follow_the_architecture(installed: PostgresInstall, pg_db: str) -> None:
    with psycopg.connect(pg_db) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = 'sqlanon' ORDER BY table_name, ordinal_position"
        ).fetchall()
    columns: dict[str, list[tuple[str, str]]] = {}
    for table, column, data_type in rows:
        columns.setdefault(table, []).append((column, data_type))
    assert columns["migrations"] == [
        ("name", "text"),
        ("applied_at", "timestamp with time zone"),
    ]
    assert [c for c, _ in columns["releases"]] == [
        "family", "version", "table_name", "model", "source", "parameters", "created_at",
        "rows_published", "held_back", "suppressed", "groups", "sum_of_errors",
        "source_rows", "metrics", "domain", "seq",
    ]  # fmt: skip
    assert dict(columns["releases"])["parameters"] == "jsonb"
    assert dict(columns["releases"])["sum_of_errors"] == "double precision"
    assert columns["members"] == [
        ("family", "text"),
        ("version", "integer"),
        ("record_key", "text"),
        ("group_id", "integer"),
        ("cell_id", "bigint"),
        ("status", "text"),
        ("row_hash", "bigint"),
        ("value_hash", "bigint"),
        ("ghost", "boolean"),
    ]
    assert [c for c, _ in columns["cells"]] == [
        "family", "version", "cell_id", "attribute", "min_distinct", "min_spread",
    ]  # fmt: skip


def test_upgrade_moves_functions_and_running_sessions_to_the_new_directory(
    installed: PostgresInstall,
    pg_db: str,
    pg_python_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with psycopg.connect(pg_db, autocommit=True) as conn:
        assert python_info(conn)["python_dir"] == str(installed.python_dir)
        # A function an older functions.sql defined and the new one does not.
        conn.execute(
            with_prologue(
                "CREATE FUNCTION sqlanon.retired() RETURNS int LANGUAGE plpython3u AS $py$\n"
                "# sqlanon: prologue\nreturn 1\n$py$",
                installed.python_dir,
                installed.deps_dir,
            )
        )
        monkeypatch.setattr(install, "sqlanon_version", lambda: "0.1.0+upgrade")
        upgraded = install_postgres(pg_db, python_root=pg_python_root)

        assert upgraded.python_dir.name.startswith("0.1.0+upgrade-")
        assert upgraded.deps_dir == installed.deps_dir  # same numpy/sqlglot: reused
        assert (installed.python_dir / install.MARKER).is_file()  # old one left alone
        # The same session, which imported sqlanon from the old directory, now uses the new.
        assert python_info(conn)["python_dir"] == str(upgraded.python_dir)
        retired = conn.execute("SELECT to_regproc('sqlanon.retired')").fetchone()[0]
        assert retired is None


def test_directory_the_server_cannot_read_is_refused(pg_db: str, tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(ConfigError, match="server cannot read .*--server-side"):
        install_postgres(pg_db, python_root=private / "python")


def test_install_needs_a_superuser(pg_db: str, pg_python_root: Path) -> None:
    role = "sqlanon_t_plain"
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute(f"DROP ROLE IF EXISTS {role}")
        conn.execute(f"CREATE ROLE {role} LOGIN")
    try:
        plain = psycopg.conninfo.make_conninfo(pg_db, user=role)
        with pytest.raises(ConfigError, match="needs a superuser.*'sqlanon_t_plain'"):
            install_postgres(plain, python_root=pg_python_root)
    finally:
        with psycopg.connect(pg_db, autocommit=True) as conn:
            conn.execute(f"DROP ROLE {role}")


# --- PlpySession, inside the server --------------------------------------------------------


def test_plpy_queries_with_inferred_and_given_types(
    pg_conn: Any, installed: PostgresInstall
) -> None:
    out = run_in_server(
        pg_conn,
        installed,
        """
        import numpy as np
        def run(s):
            s.execute("CREATE TABLE t (id integer, x double precision, name text, ok boolean)")
            s.execute(
                "INSERT INTO t VALUES ($1, $2, $3, $4), ($5, $6, $7, $8), (3, 0.5, 'c', false)",
                [1, 1.5, "a", True, np.int64(2), None, None, None],
            )
            arrays = s.query_arrays("SELECT id, x, name, ok, id * 2 AS twice FROM t ORDER BY id")
            return {
                "rows": s.query("SELECT id, name FROM t WHERE id = ANY($1) ORDER BY id", [[1, 3]]),
                "dicts": s.query_dicts("SELECT name FROM t WHERE x > $1", [1.0]),
                "given": s.query("SELECT $1 || '%'", ["50"], types=["text"]),
                "dtypes": {k: str(v.dtype) for k, v in arrays.items()},
                "x": [None if np.isnan(v) else v for v in arrays["x"].tolist()],
                "name": arrays["name"].tolist(),
                "quoted": [s.quote_ident('we"ird'), s.quote_ident("plain")],
            }
        """,
    )
    assert out["rows"] == [[1, "a"], [3, "c"]]
    assert out["dicts"] == [{"name": "a"}]
    assert out["given"] == [["50%"]]
    assert out["dtypes"] == {
        "id": "int64",
        "x": "float64",
        "name": "object",
        "ok": "object",  # a NULL among the booleans
        "twice": "int64",
    }
    assert out["x"] == [1.5, None, 0.5]
    assert out["name"] == ["a", None, "c"]
    assert out["quoted"] == ['"we""ird"', '"plain"']


def test_plpy_load_temp_round_trips_numpy_columns(pg_conn: Any, installed: PostgresInstall) -> None:
    pg_conn.execute("CREATE TABLE public._sqlanon_assign (keep integer)")
    out = run_in_server(
        pg_conn,
        installed,
        """
        import numpy as np
        def run(s):
            types = {"record_key": "VARCHAR", "group_id": "INTEGER", "ord": "BIGINT",
                     "s": "DOUBLE"}
            s.load_temp("_sqlanon_assign", {
                "record_key": np.array(["x", "y"], dtype=object),
                "group_id": np.array([0, 0]),
                "ord": np.array([1, 2]),
                "s": np.array([0.0, 0.0]),
            }, types)
            s.load_temp("_sqlanon_assign", {  # replaces the first one
                "record_key": np.array(["k1", 'k"2', None], dtype=object),
                "group_id": np.array([3, 1, 2], dtype=np.int64),
                "ord": np.array([2**40, 0, -1], dtype=np.int64),
                "s": np.array([1.25, np.nan, -3.0]),
            }, types)
            got = s.query_arrays("SELECT * FROM pg_temp._sqlanon_assign ORDER BY group_id")
            return {k: [str(v.dtype), [None if x != x else x for x in v.tolist()]]
                    for k, v in got.items()}
        """,
    )
    assert out == {
        "record_key": ["object", ['k"2', None, "k1"]],
        "group_id": ["int64", [1, 2, 3]],
        "ord": ["int64", [0, -1, 2**40]],
        "s": ["float64", [None, -3.0, 1.25]],
    }
    # The permanent table of the same name was neither dropped nor written.
    assert pg_conn.execute("SELECT count(*) FROM public._sqlanon_assign").fetchone() == (0,)


def test_plpy_transaction_rolls_back_only_the_failed_block(
    pg_conn: Any, installed: PostgresInstall
) -> None:
    pg_conn.execute("CREATE TABLE t (v text)")
    body = """
        def run(s):
            s.execute("INSERT INTO t VALUES ('before')")
            try:
                with s.transaction():
                    s.execute("INSERT INTO t VALUES ('python error')")
                    raise RuntimeError("boom")
            except RuntimeError:
                pass
            try:
                with s.transaction():
                    s.execute("INSERT INTO t VALUES ('sql error')")
                    s.execute("SELECT 1 / 0")
            except plpy.SPIError as exc:
                caught = type(exc).__name__
            with s.transaction():
                s.execute("INSERT INTO t VALUES ('committed block')")
            return caught
        """
    assert run_in_server(pg_conn, installed, body) == "DivisionByZero"
    assert pg_conn.execute("SELECT v FROM t ORDER BY v").fetchall() == [
        ("before",),
        ("committed block",),
    ]
    # The caller's transaction decides the rest: rolled back, nothing stays.
    pg_conn.execute("TRUNCATE t")
    with pytest.raises(psycopg.errors.RaiseException):
        with pg_conn.transaction():
            pg_conn.execute("SELECT public.t_run()")
            pg_conn.execute("DO $$ BEGIN RAISE 'caller gives up'; END $$")
    assert pg_conn.execute("SELECT count(*) FROM t").fetchone() == (0,)


def test_plpy_lock_family_waits_for_the_holder(
    pg_conn: Any, pg_db: str, installed: PostgresInstall
) -> None:
    body = """
        import time
        from sqlanon.errors import ConcurrentReleaseError
        def run(s):
            started = time.monotonic()
            try:
                with s.transaction():
                    s.lock_family("fam")
                    return ["locked", time.monotonic() - started]
            except ConcurrentReleaseError:
                return ["concurrent", time.monotonic() - started]
        """
    with psycopg.connect(pg_db, autocommit=True) as holder:
        holding = PsycopgSession(holder)
        with holding.transaction():
            holding.lock_family("fam")
            pg_conn.execute("SET lock_timeout = '300ms'")
            outcome, waited = run_in_server(pg_conn, installed, body)
            assert outcome == "concurrent"
            assert waited >= 0.25
        outcome, waited = run_in_server(pg_conn, installed, body)
        assert outcome == "locked"


# --- PsycopgSession, in the client --------------------------------------------------------


def test_psycopg_queries_use_dollar_placeholders(pg_conn: Any) -> None:
    s = PsycopgSession(pg_conn)
    s.execute("CREATE TABLE t (id integer, x double precision, name text, ok boolean)")
    s.execute(
        "INSERT INTO t VALUES ($1, $2, $3, $4), ($5, $6, $7, $8)",
        [1, 1.5, "50%", True, 2, None, None, False],
    )
    assert s.query("SELECT $1::int + $1::int, 'a%b' LIKE $2", [20, "a%"]) == [(40, True)]
    assert s.query("SELECT id FROM t WHERE name LIKE '%\\%'") == [(1,)]
    assert s.query_dicts("SELECT id, name FROM t WHERE id = $1", [2]) == [{"id": 2, "name": None}]
    arrays = s.query_arrays("SELECT id, x, name, ok, x > 1 AS big FROM t ORDER BY id")
    assert {k: v.dtype.kind for k, v in arrays.items()} == {
        "id": "i",
        "x": "f",
        "name": "O",
        "ok": "b",
        "big": "O",
    }
    assert np.isnan(arrays["x"][1]) and arrays["name"].tolist() == ["50%", None]
    empty = s.query_arrays("SELECT id, name FROM t WHERE false")
    assert (empty["id"].dtype, len(empty["id"]), len(empty["name"])) == (np.int64, 0, 0)
    assert [s.quote_ident('we"ird'), s.quote_ident("plain")] == ['"we""ird"', '"plain"']


def test_psycopg_load_temp_copies_every_row(pg_conn: Any) -> None:
    s = PsycopgSession(pg_conn)
    n = 20_000
    keys = np.array([f"k{i}" for i in range(n)], dtype=object)
    keys[7] = None
    values = np.linspace(0, 1, n)
    values[3] = np.nan
    types = {"record_key": "VARCHAR", "group_id": "INTEGER", "s": "DOUBLE", "status": "TEXT"}
    columns = {
        "record_key": keys,
        "group_id": np.arange(n) % 7,
        "s": values,
        "status": np.array(["published"] * n),
    }
    with s.transaction():
        s.load_temp("_sqlanon_members", columns, types)
        s.load_temp("_sqlanon_members", columns, types)  # replaces, does not append
        got = s.query_arrays("SELECT * FROM _sqlanon_members ORDER BY group_id, s")
        assert s.query("SELECT count(*), count(record_key) FROM _sqlanon_members") == [(n, n - 1)]
    order = np.lexsort((values, columns["group_id"]))
    assert got["group_id"].tolist() == columns["group_id"][order].tolist()
    assert np.array_equal(got["s"], values[order], equal_nan=True)
    assert set(got["status"]) == {"published"}


def test_psycopg_transaction_commits_or_rolls_back(pg_conn: Any) -> None:
    s = PsycopgSession(pg_conn)
    s.execute("CREATE TABLE t (v text)")
    with s.transaction():
        s.execute("INSERT INTO public.t VALUES ($1)", ["kept"])
    with pytest.raises(RuntimeError):
        with s.transaction():
            s.execute("INSERT INTO public.t VALUES ($1)", ["lost"])
            raise RuntimeError("boom")
    with s.transaction():
        s.execute("INSERT INTO public.t VALUES ($1)", ["outer"])
        with pytest.raises(psycopg.errors.DivisionByZero):
            with s.transaction():  # nested: a savepoint
                s.execute("INSERT INTO public.t VALUES ($1)", ["inner"])
                s.execute("SELECT 1 / 0")
    assert s.query("SELECT v FROM t ORDER BY v") == [("kept",), ("outer",)]
    # Inside a transaction the search path is pinned (names are qualified there); the
    # caller's comes back after it, also after an error.
    assert s.query("SHOW search_path") == [('"$user", public',)]
    with s.transaction():
        assert s.query("SHOW search_path") == [("pg_catalog, pg_temp",)]
        assert s.schema == "public"
        with pytest.raises(psycopg.errors.UndefinedTable):
            with s.transaction():
                s.execute("SELECT v FROM t")


def test_psycopg_lock_family_waits_for_the_holder(pg_conn: Any, pg_db: str) -> None:
    holder, waiter = PsycopgSession(pg_conn), None
    with psycopg.connect(pg_db, autocommit=True) as other:
        waiter = PsycopgSession(other)
        with holder.transaction():
            holder.lock_family("fam")
            with waiter.transaction():
                waiter.lock_family("another family")  # not blocked
            other.execute("SET lock_timeout = '300ms'")
            started = time.monotonic()
            with pytest.raises(ConcurrentReleaseError, match="'fam'"):
                with waiter.transaction():
                    waiter.lock_family("fam")
            assert time.monotonic() - started >= 0.25
            other.execute("SET lock_timeout = 0")

            # Without a timeout the waiter blocks until the holder's transaction ends.
            acquired = threading.Event()

            def wait_for_lock() -> None:
                with waiter.transaction():
                    waiter.lock_family("fam")
                    acquired.set()

            thread = threading.Thread(target=wait_for_lock)
            thread.start()
            assert not acquired.wait(0.5)
        thread.join(10)
        assert acquired.is_set()


def test_psycopg_lock_family_outside_a_transaction_is_a_bug(pg_conn: Any) -> None:
    with pytest.raises(RuntimeError, match="open transaction"):
        PsycopgSession(pg_conn).lock_family("fam")
