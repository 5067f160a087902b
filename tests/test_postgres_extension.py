"""sqlanon as a PostgreSQL extension on the real test server: CREATE EXTENSION, an
upgrade from the previous version by ALTER EXTENSION UPDATE, pg_dump / pg_restore of
a database holding releases, DROP EXTENSION, and the refusals between the extension
and the URL install.

The extension files go into the server's real extension directory (tests run as root);
each test names the version it creates, so another placement in between cannot change
what it tests."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import errors, sql
from psycopg.conninfo import make_conninfo

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.postgres import install
from sqlanon.postgres.extension import PlacedExtension, place_extension, server_extension_dir
from sqlanon.postgres.install import install_postgres, install_python_dir

# These tests place files in the server-wide extension directory: scripts/test runs each
# test file on one xdist worker (--dist loadfile), so they run one after another.
pytestmark = pytest.mark.postgres

ADD_PEOPLE = (
    "INSERT INTO people SELECT i, 20 + mod(i * 7, 50), CASE mod(i, 3) WHEN 0 THEN 'F' ELSE 'M'"
    " END, mod(i * 37, 60) * 10 FROM generate_series(%s::int, %s::int) AS i"
)
RELEASE_KE = (
    "SELECT sqlanon.release_ke('people', 'people_ke', key => 'id', sensitive => 'salary',"
    " quasi => ARRAY['age', 'sex'], k => 4, e => 10)"
)
RELEASE_LHD = (
    "SELECT sqlanon.release_lhd('people', 'people_lhd', key => 'id', quasi => ARRAY['age'],"
    " sensitive => ARRAY['salary'], l => 2)"
)
QUERY = "SELECT sex, SUM(salary) AS total, COUNT(*) AS n FROM people_ke GROUP BY sex"
CATALOG = {
    "sqlanon.cell_spans", "sqlanon.hierarchies", "sqlanon.hierarchy_widths",
    "sqlanon.kept_values", "sqlanon.links", "sqlanon.member_spans", "sqlanon.query_limits",
    "sqlanon.retirements",
    "sqlanon.releases", "sqlanon.state_versions",
    "sqlanon.capture_sources", "sqlanon.captured", "sqlanon.capture_marks",
}  # fmt: skip


def server_python(conn: Any) -> str:
    conn.execute("CREATE EXTENSION IF NOT EXISTS plpython3u")
    conn.execute(
        "CREATE FUNCTION pg_temp.python_xy() RETURNS text LANGUAGE plpython3u AS"
        " 'import sys\nreturn \"%d.%d\" % sys.version_info[:2]'"
    )
    return str(conn.execute("SELECT pg_temp.python_xy()").fetchone()[0])


@pytest.fixture
def placed(pg_url: str, pg_python_root: Path) -> PlacedExtension:
    """This build's extension, placed in the server's extension directory."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        python = server_python(conn)
    return place_extension(install_python_dir(pg_python_root, python_version=python))


def create_extension(conn: Any, version: str) -> None:
    conn.execute(
        sql.SQL("CREATE EXTENSION sqlanon VERSION {} CASCADE").format(sql.Literal(version))
    )


def one(conn: Any, query: str, params: Any = None) -> Any:
    return conn.execute(query, params).fetchone()[0]


def release_history(conn: Any) -> None:
    """(k,e) twice (the second with a ghost: a published row deleted) and lHD once."""
    conn.execute("CREATE TABLE people (id integer, age integer, sex text, salary integer)")
    conn.execute(ADD_PEOPLE, [1, 60])
    assert one(conn, RELEASE_KE)["version"] == 1
    conn.execute("DELETE FROM people WHERE id = 5")
    conn.execute(ADD_PEOPLE, [61, 80])
    second = one(conn, RELEASE_KE)
    assert second["version"] == 2 and second["ghosts"] >= 1
    one(conn, "SELECT sqlanon.hierarchy_widths('people', 'age', '{10,20}')")
    assert one(conn, RELEASE_LHD)["version"] == 1


def state(conn: Any) -> dict[str, list[str]]:
    """Every row of every table and view in schemas sqlanon and public (as sorted text),
    but the migrations ledger, whose applied_at is when a database got the migration,
    and the families' rows, history and bounds tables (their versions' views are read)."""
    tables = conn.execute(
        "SELECT table_schema, table_name FROM information_schema.tables"
        " WHERE table_schema IN ('sqlanon', 'sqlanon_bounds', 'public')"
        " AND table_name <> 'migrations' AND table_name NOT LIKE '%\\_\\_rows'"
        " AND table_name NOT LIKE '%\\_\\_bounds' AND table_name NOT LIKE '%\\_\\_history'"
        " ORDER BY 1, 2"
    ).fetchall()
    return {
        f"{schema}.{table}": sorted(
            str(r[0])
            for r in conn.execute(
                sql.SQL("SELECT t::text FROM {}.{} AS t").format(
                    sql.Identifier(schema), sql.Identifier(table)
                )
            )
        )
        for schema, table in tables
    }


def groups(conn: Any, table: str) -> dict[Any, tuple[list[Any], list[Any]]]:
    """Per group of a (k,e) release of people: its (age, sex) rows and its salaries."""
    found: dict[Any, tuple[list[Any], list[Any]]] = {}
    for age, sex, group, salary in conn.execute(
        sql.SQL("SELECT age, sex, group_id, salary FROM {}").format(sql.Identifier(table))
    ).fetchall():
        found.setdefault(group, ([], []))[0].append((age, sex))
        found[group][1].append(salary)
    return {g: (sorted(q, key=str), sorted(v)) for g, (q, v) in found.items()}


def members_of_extension(conn: Any) -> set[str]:
    return {
        r[0]
        for r in conn.execute(
            "SELECT pg_describe_object(classid, objid, objsubid) FROM pg_depend"
            " WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'"
            " AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'sqlanon')"
        )
    }


def intervals(conn: Any) -> list[Any]:
    return [r[0] for r in conn.execute("SELECT * FROM sqlanon.interval_json(%s)", [QUERY])]


def test_create_extension_then_release_query_and_drop(
    pg_conn: Any, pg_db: str, pg_python_root: Path, placed: PlacedExtension
) -> None:
    create_extension(pg_conn, placed.version)
    assert pg_conn.execute(
        "SELECT extname, extversion FROM pg_extension WHERE extname LIKE 'pl%' OR"
        " extname = 'sqlanon' ORDER BY 1"
    ).fetchall() == [("plpgsql", "1.0"), ("plpython3u", "1.0"), ("sqlanon", placed.version)]
    config = one(
        pg_conn, "SELECT extconfig::regclass[]::text[] FROM pg_extension WHERE extname = 'sqlanon'"
    )
    assert set(config) == CATALOG  # pg_dump dumps their rows
    ledger = pg_conn.execute("SELECT name FROM sqlanon.migrations ORDER BY 1").fetchall()
    assert ledger == [(name,) for name, _ in sqltext.migrations("postgres")]
    info = one(pg_conn, "SELECT sqlanon.python_info()")
    assert Path(info["python_dir"]).parent == pg_python_root.resolve()

    release_history(pg_conn)
    members = members_of_extension(pg_conn)
    assert "table sqlanon.releases" in members and 'function sqlanon."interval"(text)' in members
    assert not any("people" in m for m in members)  # release-created objects are not members
    answers = intervals(pg_conn)
    assert {a["sex"] for a in answers} == {"F", "M"}
    assert all(a["total_low"] <= a["total_high"] and a["n"] > 0 for a in answers)

    with pytest.raises(ConfigError, match=r"extension \(version .*ALTER EXTENSION sqlanon UPDATE"):
        install_postgres(pg_db, python_root=pg_python_root)

    # DROP EXTENSION drops the catalog (every release's private state) and the functions;
    # what releases created, the roles and the schema stay.
    pg_conn.execute("DROP EXTENSION sqlanon")
    left = pg_conn.execute(
        "SELECT to_regclass('sqlanon.releases'), to_regclass('sqlanon.migrations'),"
        " to_regclass('sqlanon_bounds.people_ke_v2_bounds')::text, to_regclass('people_ke')::text,"
        " to_regclass('people_lhd_v1')::text, to_regproc('sqlanon.interval'),"
        " (SELECT count(*) FROM pg_roles WHERE rolname IN ('sqlanon_owner', 'sqlanon_analyst'))"
    ).fetchone()
    assert left == (
        None,
        None,
        "sqlanon_bounds.people_ke_v2_bounds",
        "people_ke",
        "people_lhd_v1",
        None,
        2,
    )


def test_create_extension_refuses_a_database_installed_by_url(
    pg_conn: Any, pg_db: str, pg_python_root: Path, placed: PlacedExtension
) -> None:
    install_postgres(pg_db, python_root=pg_python_root)
    with pytest.raises(errors.RaiseException, match="already installed.*install-postgres URL"):
        create_extension(pg_conn, placed.version)
    assert one(pg_conn, "SELECT count(*) FROM sqlanon.migrations") == len(
        sqltext.migrations("postgres")
    )


def test_alter_extension_update_from_the_previous_version_keeps_the_releases(
    pg_url: str, pg_conn: Any, pg_python_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The previous version: an older sqlanon (its own directory) whose catalog lacked
    # migrations 003 and 012, with data steps (003 rebuilds every (k,e) bounds table;
    # 012 moves every version into its family's rows), and whose releases wrote a table
    # per version.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        python = server_python(conn)
    every = [name for name, _ in sqltext.migrations("postgres")]
    with monkeypatch.context() as patch:
        patch.setattr(install, "sqlanon_version", lambda: "0.0.9")
        previous_dir = install_python_dir(pg_python_root, python_version=python)
        code = previous_dir / "sqlanon" / "state" / "release_rows.py"
        text, replaced = re.subn(
            r"^SHARED = frozenset\(.*\)$", "SHARED = frozenset()", code.read_text(), flags=re.M
        )
        assert replaced == 1  # the layout before 012: a table per version
        code.write_text(text)
        previous = place_extension(
            previous_dir,
            migrations=[n for n in every if n not in ("003_ke_bounds_runs", "012_shared_rows")],
        )
    create_extension(pg_conn, previous.version)
    release_history(pg_conn)
    before = state(pg_conn)
    bounds_oid = one(pg_conn, "SELECT 'sqlanon_bounds.people_ke_v2_bounds'::regclass::oid")
    assert one(pg_conn, "SELECT sqlanon.python_info()")["python_dir"] == str(previous_dir)

    current = place_extension(install_python_dir(pg_python_root, python_version=python))
    assert current.upgrade_from == previous.version
    script = current.directory / f"sqlanon--{previous.version}--{current.version}.sql"
    assert "migrations.run_data_step" in script.read_text()
    pg_conn.execute(
        sql.SQL("ALTER EXTENSION sqlanon UPDATE TO {}").format(sql.Literal(current.version))
    )

    assert one(pg_conn, "SELECT extversion FROM pg_extension WHERE extname = 'sqlanon'") == (
        current.version
    )
    ledger = pg_conn.execute("SELECT name FROM sqlanon.migrations ORDER BY 1").fetchall()
    assert ledger == [(name,) for name in every]
    # The data step ran (a new bounds table), in the release's schema, and left it out
    # of the extension and readable by analysts; every row is as it was.
    assert one(pg_conn, "SELECT 'sqlanon_bounds.people_ke_v2_bounds'::regclass::oid") != bounds_oid
    assert not any("people" in m for m in members_of_extension(pg_conn))
    assert one(
        pg_conn,
        "SELECT has_table_privilege('sqlanon_analyst', 'sqlanon_bounds.people_ke_v2_bounds', 'SELECT')",
    )
    assert state(pg_conn) == before
    info = one(pg_conn, "SELECT sqlanon.python_info()")
    assert info["python_dir"] != str(previous_dir)
    assert Path(info["python_dir"]).name == install.python_dir_name(python)
    pg_conn.execute(ADD_PEOPLE, [81, 90])
    assert one(pg_conn, RELEASE_KE)["version"] == 3
    assert len(intervals(pg_conn)) == 2


def pg_binary(name: str) -> str:
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    return str(found[-1]) if found else str(shutil.which(name))


def test_pg_dump_and_restore_keep_the_releases_and_their_state(
    pg_url: str, pg_db: str, pg_conn: Any, placed: PlacedExtension, tmp_path: Path
) -> None:
    create_extension(pg_conn, placed.version)
    release_history(pg_conn)
    dump = tmp_path / "releases.dump"
    subprocess.run([pg_binary("pg_dump"), "-Fc", "-f", str(dump), "-d", pg_db], check=True)  # noqa: S603

    name = psycopg.conninfo.conninfo_to_dict(pg_db)["dbname"] + "_r"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    target = make_conninfo(pg_url, dbname=name)
    try:
        # The dump says CREATE EXTENSION sqlanon without a version: the server's default,
        # which is this build's as long as no other placement came in between.
        assert server_extension_dir() == placed.directory
        place_extension(Path(one(pg_conn, "SELECT sqlanon.python_info()")["python_dir"]))
        subprocess.run(  # noqa: S603
            [pg_binary("pg_restore"), "--exit-on-error", "-d", target, str(dump)], check=True
        )
        with psycopg.connect(target, autocommit=True) as copy:
            assert one(copy, "SELECT extversion FROM pg_extension WHERE extname = 'sqlanon'") == (
                placed.version
            )
            assert state(copy) == state(pg_conn)
            assert intervals(copy) == intervals(pg_conn)
            assert one(copy, "SELECT sqlanon.audit('people_ke')") == one(
                pg_conn, "SELECT sqlanon.audit('people_ke')"
            )
            granted = one(
                copy,
                "SELECT has_table_privilege('sqlanon_analyst', 'sqlanon_bounds.people_ke_v2_bounds',"
                " 'SELECT') AND has_table_privilege('sqlanon_analyst', 'people_lhd', 'SELECT')"
                " AND NOT has_table_privilege('sqlanon_analyst', 'sqlanon.members', 'SELECT')"
                " AND has_schema_privilege('sqlanon_analyst', 'sqlanon', 'USAGE')"
                " AND NOT has_schema_privilege('public', 'sqlanon', 'USAGE')",
            )
            assert granted
            # The next release sees the same history on both sides: the same version.
            for conn in (pg_conn, copy):
                conn.execute(ADD_PEOPLE, [81, 95])
            after = [one(conn, RELEASE_KE) for conn in (pg_conn, copy)]
            assert after[0]["version"] == after[1]["version"] == 3
            assert after[0] == after[1]
            mine, theirs = state(pg_conn), state(copy)
            assert mine.pop("sqlanon.releases") != theirs.pop("sqlanon.releases")  # created_at
            # Each side drew version 3's shuffle: the same groups, not the same record
            # showing each value (nor the fingerprints of what each record shows).
            for side in (mine, theirs):
                for name in ("public.people_ke_v3", "public.people_ke", "sqlanon.members"):
                    del side[name]
                del side["sqlanon.member_spans"]
            assert mine == theirs
            assert groups(pg_conn, "people_ke_v3") == groups(copy, "people_ke_v3")
            members = (
                "SELECT family, version, record_key, group_id, cell_id, status, value_hash,"
                " ghost, CASE WHEN version < 3 THEN row_hash END FROM sqlanon.members"
                " ORDER BY 1, 2, 3"
            )
            assert pg_conn.execute(members).fetchall() == copy.execute(members).fetchall()
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def test_placement_chains_upgrade_scripts_and_writes_no_downgrade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python_dir = tmp_path / "python" / "build"
    python_dir.mkdir(parents=True)
    (python_dir / install.MARKER).write_text('{"python": "3.11", "deps": "deps"}')
    every = [name for name, _ in sqltext.migrations("postgres")]
    directory = tmp_path / "extension"
    directory.mkdir()

    def place(version: str, migrations: list[str]) -> PlacedExtension:
        with monkeypatch.context() as patch:
            patch.setattr(install, "sqlanon_version", lambda: version)
            return place_extension(python_dir, extension_dir=directory, migrations=migrations)

    old = place("0.0.1", every[:-1])
    new = place("0.0.2", every)
    assert (old.upgrade_from, new.upgrade_from) == (None, old.version)
    upgrade = (directory / f"sqlanon--{old.version}--{new.version}.sql").read_text()
    assert f"-- migrations: {' '.join(every)}\n" in upgrade
    assert f"INSERT INTO sqlanon.migrations (name) VALUES ('{every[-1]}');" in upgrade
    assert f"VALUES ('{every[-2]}')" not in upgrade  # the old version had it
    assert place("0.0.2", every) == PlacedExtension(directory, new.version, None)  # again
    older = place("0.0.3", every[:-1])  # a build lacking a migration the default has
    assert older.upgrade_from is None
    control = (directory / "sqlanon.control").read_text()
    assert f"default_version = '{older.version}'" in control
    assert "requires = 'plpython3u'" in control and "schema = sqlanon" in control
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [
            "sqlanon.control",
            f"sqlanon--{old.version}.sql",
            f"sqlanon--{new.version}.sql",
            f"sqlanon--{older.version}.sql",
            f"sqlanon--{old.version}--{new.version}.sql",
        ]
    )
