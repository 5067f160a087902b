"""dbt integration: the dbt-duckdb plugin and the sqlanon_release materialization.

The end-to-end test runs the real ``dbt`` of this environment on a temporary copy of
``examples/dbt`` and a temporary DuckDB file. dbt starts slowly, so it is invoked twice
only: the first run publishes version 1 and fails two badly configured models, the
second (after rows arrived) publishes version 2. The same goes for PostgreSQL
(``--target postgres``) on a fresh database of the test server with sqlanon installed.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

import sqlanon
from sqlanon.dbt import Plugin, package_dir
from sqlanon.pg_install import install_postgres

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "dbt"
ADULT_CSV = ROOT / "sqlanon" / "data" / "adult_capital_loss.csv"
FIRST_HALF = 714  # of the 1,427 bundled rows
PG_INT_COLUMNS = {"id", "age", "education_num", "capital_gain", "capital_loss", "hours_per_week"}

BAD_MODELS = {
    "adult_k1": (
        "{{ config(materialized='sqlanon_release', model='ke', key='id', "
        "sensitive='capital_loss', quasi=['age', 'sex'], k=1, e=20) }}\n"
        "select * from {{ ref('stg_adult') }}\n",
        "k must be a whole number >= 2, got 1",
    ),
    "adult_nocol": (
        "{{ config(materialized='sqlanon_release', model='ke', key='id', "
        "sensitive='capital_loss', quasi=['age', 'zipcode'], k=5, e=20) }}\n"
        "select * from {{ ref('stg_adult') }}\n",
        "quasi column 'zipcode' is not in {schema}.adult_nocol__source",
    ),
}


def test_plugin_gives_every_cursor_the_functions(tmp_path: Path) -> None:
    """dbt-duckdb configures the parent connection once and then each cursor it hands out."""
    con = duckdb.connect(str(tmp_path / "plugin.duckdb"))
    plugin = Plugin(name="sqlanon", plugin_config={})
    plugin.configure_connection(con)
    cursors = [con.cursor(), con.cursor()]
    for cur in cursors:
        plugin.configure_cursor(cur)
        with pytest.raises(duckdb.Error, match="no release family 'nothing'"):
            cur.execute("SELECT sqlanon_audit('nothing')")
    assert con.execute("SELECT count(*) FROM sqlanon.migrations").fetchone()[0] > 0
    for cur in cursors:
        cur.close()
    con.close()


def test_package_dir_holds_the_dbt_package() -> None:
    assert (package_dir() / "dbt_project.yml").is_file()
    assert (package_dir() / "macros" / "sqlanon_release.sql").is_file()


def _project(tmp_path: Path) -> Path:
    """A copy of the example project wired to this checkout's dbt package."""
    project = tmp_path / "project"
    shutil.copytree(
        EXAMPLE, project, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages")
    )
    (project / "packages.yml").write_text(f"packages:\n  - local: {package_dir()}\n")
    # what `dbt deps` would do for a local package, without another dbt start-up
    (project / "dbt_packages").mkdir()
    (project / "dbt_packages" / "sqlanon").symlink_to(package_dir(), target_is_directory=True)
    for name, (sql, _) in BAD_MODELS.items():
        (project / "models" / f"{name}.sql").write_text(sql)
    return project


def _dbt(project: Path, settings: dict[str, str], *args: str) -> tuple[int, dict[str, dict]]:
    """Run dbt in ``project`` with the environment ``settings`` (the profile's
    connection); its exit code and ``{model name: run result}``."""
    env = {
        **os.environ,
        # the checkout under test, whatever sqlanon the environment may also have
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        **settings,
        "DBT_PROFILES_DIR": str(project),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DO_NOT_TRACK": "1",
    }
    dbt = Path(sys.executable).with_name("dbt")
    proc = subprocess.run(
        [str(dbt), "--no-use-colors", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    results_file = project / "target" / "run_results.json"
    if not results_file.is_file():
        pytest.fail(f"dbt {' '.join(args)} wrote no results:\n{proc.stdout}\n{proc.stderr}")
    results = json.loads(results_file.read_text())["results"]
    return proc.returncode, {r["unique_id"].rsplit(".", 1)[1]: r for r in results}


def _relations(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
    ).fetchall()
    return {r[0] for r in rows}


def test_dbt_run_publishes_one_version_per_run(tmp_path: Path) -> None:
    project = _project(tmp_path)
    database = tmp_path / "clinic.duckdb"
    con = duckdb.connect(str(database))
    con.execute(
        "CREATE TABLE adult AS SELECT * FROM read_csv($1) LIMIT $2", [str(ADULT_CSV), FIRST_HALF]
    )
    con.close()  # dbt needs the file to itself

    code, results = _dbt(project, {"SQLANON_DUCKDB": str(database)}, "run")
    assert code == 1  # the two bad models fail; the others are built
    for name in ("stg_adult", "adult_ke", "adult_ke_by_education"):
        assert results[name]["status"] == "success", results[name]["message"]
    for name, (_, message) in BAD_MODELS.items():
        assert results[name]["status"] == "error"
        assert message.format(schema="main") in results[name]["message"]

    con = duckdb.connect(str(database))
    relations = _relations(con)
    for name in BAD_MODELS:
        assert not {name, f"{name}_v1"} & relations
    assert con.execute("SELECT family, version FROM sqlanon.releases").fetchall() == [
        ("adult_ke", 1)
    ]
    assert con.execute("SELECT DISTINCT family FROM sqlanon.members").fetchall() == [("adult_ke",)]
    con.execute(
        "INSERT INTO adult BY NAME SELECT * FROM read_csv($1) WHERE id NOT IN (SELECT id FROM adult)",
        [str(ADULT_CSV)],
    )
    con.close()

    code, results = _dbt(project, {"SQLANON_DUCKDB": str(database)}, "run", "--select", "adult_ke+")
    assert code == 0, {name: r["message"] for name, r in results.items()}
    assert set(results) == {"adult_ke", "adult_ke_by_education"}

    con = duckdb.connect(str(database))
    try:
        releases = con.execute(
            "SELECT version, table_name, source, rows_published, held_back, source_rows "
            "FROM sqlanon.releases WHERE family = 'adult_ke' ORDER BY version"
        ).fetchall()
        assert [r[:3] for r in releases] == [
            (1, "adult_ke_v1", "main.adult_ke__source"),
            (2, "adult_ke_v2", "main.adult_ke__source"),
        ]
        assert releases[0][5] == FIRST_HALF and releases[1][5] == 1427
        assert con.execute("SELECT count(*) FROM sqlanon.releases").fetchone()[0] == 2
        assert {"adult_ke", "adult_ke_v1", "adult_ke_v2"} <= _relations(con)
        published = releases[1][3]
        assert published + releases[1][4] == 1427
        assert con.execute("SELECT count(*) FROM adult_ke").fetchone()[0] == published
        assert (
            con.execute("SELECT sum(people) FROM adult_ke_by_education").fetchone()[0] == published
        )
        columns = [r[0] for r in con.execute("DESCRIBE adult_ke_v2").fetchall()]
        assert columns == ["age", "sex", "education", "group_id", "capital_loss"]
        sqlanon.install(con)
        audit = json.loads(con.execute("SELECT sqlanon_audit('adult_ke')").fetchone()[0])
        assert [a["version"] for a in audit] == [1, 2]
        assert all(a["exposed"] == 0 for a in audit)
    finally:
        con.close()


def _pg_settings(url: str) -> dict[str, str]:
    """The PG* variables the example's ``postgres`` target reads, for ``url``."""
    info = conninfo_to_dict(url)
    return {
        "PGHOST": str(info.get("host") or "localhost"),
        "PGPORT": str(info.get("port") or 5432),
        "PGUSER": str(info.get("user") or os.environ.get("USER", "postgres")),
        "PGPASSWORD": str(info.get("password") or ""),
        "PGDATABASE": str(info["dbname"]),
    }


def _pg_adult(conn: Any, rows: list[list[str]], header: list[str] | None = None) -> None:
    """Create (with ``header``) or append to the source table ``public.adult``."""
    if header is not None:
        spec = ", ".join(f"{h} {'integer' if h in PG_INT_COLUMNS else 'text'}" for h in header)
        conn.execute(f"CREATE TABLE public.adult ({spec})")
    with conn.cursor().copy("COPY public.adult FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


@pytest.mark.postgres
def test_dbt_run_publishes_one_version_per_run_on_postgres(
    tmp_path: Path, pg_db: str, pg_python_root: Path
) -> None:
    install_postgres(pg_db, python_root=pg_python_root)
    with ADULT_CSV.open() as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = list(reader)
    assert len(rows) == 1427
    with psycopg.connect(pg_db, autocommit=True) as conn:
        _pg_adult(conn, rows[:FIRST_HALF], header)

    project = _project(tmp_path)
    settings = _pg_settings(pg_db)
    code, results = _dbt(project, settings, "run", "--target", "postgres")
    assert code == 1  # the two bad models fail; the others are built
    for name in ("stg_adult", "adult_ke", "adult_ke_by_education"):
        assert results[name]["status"] == "success", results[name]["message"]
    for name, (_, message) in BAD_MODELS.items():
        assert results[name]["status"] == "error"
        assert message.format(schema="public") in results[name]["message"]

    with psycopg.connect(pg_db, autocommit=True) as conn:
        relations = _pg_relations(conn)
        for name in BAD_MODELS:
            assert not {name, f"{name}_v1", f"{name}__source"} & relations
        assert conn.execute("SELECT family, version FROM sqlanon.releases").fetchall() == [
            ("adult_ke", 1)
        ]
        assert conn.execute("SELECT DISTINCT family FROM sqlanon.members").fetchall() == [
            ("adult_ke",)
        ]
        _pg_adult(conn, rows[FIRST_HALF:])

    code, results = _dbt(project, settings, "run", "--target", "postgres", "--select", "adult_ke+")
    assert code == 0, {name: r["message"] for name, r in results.items()}
    assert set(results) == {"adult_ke", "adult_ke_by_education"}

    with psycopg.connect(pg_db, autocommit=True) as conn:
        releases = conn.execute(
            "SELECT version, table_name, source, rows_published, held_back, source_rows "
            "FROM sqlanon.releases WHERE family = 'adult_ke' ORDER BY version"
        ).fetchall()
        assert [r[:3] for r in releases] == [
            (1, "adult_ke_v1", "public.adult_ke__source"),
            (2, "adult_ke_v2", "public.adult_ke__source"),
        ]
        assert releases[0][5] == FIRST_HALF and releases[1][5] == 1427
        assert conn.execute("SELECT count(*) FROM sqlanon.releases").fetchone()[0] == 2
        assert {"adult_ke", "adult_ke_v1", "adult_ke_v2"} <= _pg_relations(conn)
        published = releases[1][3]
        assert published + releases[1][4] == 1427
        assert conn.execute("SELECT count(*) FROM public.adult_ke").fetchone()[0] == published
        assert (
            conn.execute("SELECT sum(people) FROM public.adult_ke_by_education").fetchone()[0]
            == published
        )
        columns = [
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = "
                "'public' AND table_name = 'adult_ke_v2' ORDER BY ordinal_position"
            ).fetchall()
        ]
        assert columns == ["age", "sex", "education", "group_id", "capital_loss"]
        audit = conn.execute("SELECT sqlanon.audit('adult_ke')").fetchone()[0]  # jsonb
        assert [a["version"] for a in audit] == [1, 2]
        assert all(a["exposed"] == 0 for a in audit)


def _pg_relations(conn: Any) -> set[str]:
    rows = conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
    ).fetchall()
    return {r[0] for r in rows}
