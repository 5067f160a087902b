"""dbt integration: the dbt-duckdb plugin and the sqlanon_release materialization.

The end-to-end test runs the real ``dbt`` of this environment on a temporary copy of
``examples/dbt`` and a temporary DuckDB file: the first run publishes version 1 and
fails two badly configured models; a run with nothing new publishes nothing; after rows
arrived and some were deleted, a run that fails after its release and its retry publish
version 2 once; ``dbt build`` with nothing new publishes nothing; ``--full-refresh`` is
refused and writes nothing. The same goes for PostgreSQL (``--target postgres``) on a
fresh database of the test server with sqlanon installed.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from sqlanon.api import install as sqlanon_install
from sqlanon.api import load_hierarchies as sqlanon_load_hierarchies
from sqlanon.duckdb.dbt import Plugin, package_dir
from sqlanon.postgres.install import install_postgres

pytestmark = pytest.mark.slow  # a long file: handed out first (tests/conftest.py)

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


def _dbt(project: Path, settings: dict[str, str], *args: str) -> tuple[int, dict[str, dict], str]:
    """Run dbt in ``project`` with the environment ``settings`` (the profile's
    connection); its exit code, ``{model name: run result}`` and its output."""
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
    results_file = project / "target" / "run_results.json"
    results_file.unlink(missing_ok=True)
    proc = subprocess.run(
        [str(dbt), "--no-use-colors", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if not results_file.is_file():
        pytest.fail(f"dbt {' '.join(args)} wrote no results:\n{proc.stdout}\n{proc.stderr}")
    results = json.loads(results_file.read_text())["results"]
    return proc.returncode, {r["unique_id"].rsplit(".", 1)[1]: r for r in results}, proc.stdout


class Database:
    """The test's side of the database dbt builds in: a connection per call (DuckDB
    needs its file to itself while dbt runs), and how rows arrive."""

    schema = "main"
    args: tuple[str, ...] = ()
    settings: dict[str, str]

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def append_rest(self) -> None:
        raise NotImplementedError

    def relations(self) -> set[str]:
        found = self.rows(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            [self.schema],
        )
        return {r[0] for r in found}


class DuckDB(Database):
    def __init__(self, path: Path) -> None:
        self.path = path
        self.settings = {"SQLANON_DUCKDB": str(path)}
        self.rows(
            "CREATE TABLE adult AS SELECT * FROM read_csv(%s) LIMIT %s",
            [str(ADULT_CSV), FIRST_HALF],
        )

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        con = duckdb.connect(str(self.path))
        try:
            cursor = con.execute(sql.replace("%s", "?"), list(params))
            return cursor.fetchall() if cursor.description else []
        finally:
            con.close()

    def append_rest(self) -> None:
        self.rows(
            "INSERT INTO adult BY NAME SELECT * FROM read_csv(%s) "
            "WHERE id NOT IN (SELECT id FROM adult)",
            [str(ADULT_CSV)],
        )


class Postgres(Database):
    schema = "public"
    args = ("--target", "postgres")

    def __init__(self, url: str) -> None:
        self.url = url
        self.settings = _pg_settings(url)
        with ADULT_CSV.open() as f:
            reader = csv.reader(f)
            header = next(reader)
            self.csv_rows = list(reader)
        assert len(self.csv_rows) == 1427
        with psycopg.connect(url, autocommit=True) as conn:
            _pg_adult(conn, self.csv_rows[:FIRST_HALF], header)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            cursor = conn.execute(sql, list(params))
            return cursor.fetchall() if cursor.description else []

    def append_rest(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            _pg_adult(conn, self.csv_rows[FIRST_HALF:])


def _versions(db: Database) -> list[tuple[Any, ...]]:
    return db.rows("SELECT family, version FROM sqlanon.releases ORDER BY 1, 2")


# The second run's model fails after its release, as a flaky post-hook would: on DuckDB
# the release has committed on its own cursor, on PostgreSQL dbt's transaction takes it
# back. Either way the retry must leave exactly one new version.
FAILING_AFTER_RELEASE = (
    "{{ config(post_hook=\"{{ 'select * from no_such_relation' "
    "if var('fail_after_release', false) else '' }}\") }}\n"
)


def _publish_with_changes(db: Database, project: Path) -> None:
    """Four runs of the example on ``db``: a first version (the bad models fail), a run
    with nothing new (no version), a run after appends and deletes whose model fails
    after its release and its retry (one new version in all), a ``dbt build`` with
    nothing new (no version); then ``--full-refresh`` is refused writing nothing."""
    model = project / "models" / "adult_ke.sql"
    model.write_text(model.read_text() + FAILING_AFTER_RELEASE)
    schema = db.schema

    code, results, _ = _dbt(project, db.settings, "run", *db.args)
    assert code == 1  # the two bad models fail; the others are built
    for name in ("stg_adult", "adult_ke", "adult_ke_by_education"):
        assert results[name]["status"] == "success", results[name]["message"]
    for name, (_, message) in BAD_MODELS.items():
        assert results[name]["status"] == "error"
        assert message.format(schema=schema) in results[name]["message"]
    relations = db.relations()
    for name in BAD_MODELS:
        # DuckDB commits the private source view before the release; PostgreSQL with it
        left = {name, f"{name}_v1"} | ({f"{name}__source"} if isinstance(db, Postgres) else set())
        assert not left & relations
    assert _versions(db) == [("adult_ke", 1)]
    assert db.rows("SELECT DISTINCT family FROM sqlanon.members") == [("adult_ke",)]

    # nothing new: the run succeeds and writes no version
    select = ("--select", "adult_ke+", *db.args)
    code, results, log = _dbt(project, db.settings, "run", *select)
    assert code == 0, {name: r["message"] for name, r in results.items()}
    assert "adult_ke: no change since version 1: nothing published" in log
    assert _versions(db) == [("adult_ke", 1)]
    assert {"adult_ke", "adult_ke_v1"} <= db.relations() and "adult_ke_v2" not in db.relations()

    db.append_rest()
    deleted = [r[0] for r in db.rows("SELECT id FROM adult ORDER BY id LIMIT 3")]
    db.rows("DELETE FROM adult WHERE id IN (%s, %s, %s)", deleted)
    code, results, _ = _dbt(
        project, db.settings, "run", *select, "--vars", "{fail_after_release: true}"
    )
    assert code == 1 and results["adult_ke"]["status"] == "error"
    assert "no_such_relation" in results["adult_ke"]["message"]
    code, results, log = _dbt(project, db.settings, "run", *select)  # the retry
    assert code == 0, {name: r["message"] for name, r in results.items()}
    assert set(results) == {"adult_ke", "adult_ke_by_education"}
    assert _versions(db) == [("adult_ke", 1), ("adult_ke", 2)]

    code, results, log = _dbt(project, db.settings, "build", *select)
    assert code == 0, {name: r["message"] for name, r in results.items()}
    assert "adult_ke: no change since version 2: nothing published" in log
    assert _versions(db) == [("adult_ke", 1), ("adult_ke", 2)]

    before = (db.relations(), db.rows("SELECT count(*) FROM sqlanon.members"))
    code, results, _ = _dbt(
        project, db.settings, "run", "--full-refresh", "--select", "adult_ke", *db.args
    )
    assert code == 1 and results["adult_ke"]["status"] == "error"
    message = " ".join(results["adult_ke"]["message"].split())
    assert "--full-refresh cannot re-do the releases of adult_ke" in message
    assert "published versions are permanent" in message and "nothing was written" in message
    assert (db.relations(), db.rows("SELECT count(*) FROM sqlanon.members")) == before
    assert _versions(db) == [("adult_ke", 1), ("adult_ke", 2)]

    releases = db.rows(
        "SELECT version, table_name, source, rows_published, held_back, source_rows, "
        "CAST(metrics AS VARCHAR) FROM sqlanon.releases WHERE family = 'adult_ke' "
        "ORDER BY version"
    )
    assert [r[:3] for r in releases] == [
        (1, "adult_ke_v1", f"{schema}.adult_ke__source"),
        (2, "adult_ke_v2", f"{schema}.adult_ke__source"),
    ]
    assert releases[0][5] == FIRST_HALF and releases[1][5] == 1427 - 3
    metrics = json.loads(releases[1][6])
    assert (metrics["inserted"], metrics["deleted"]) == (1427 - FIRST_HALF, 3)
    published, ghosts = releases[1][3], metrics["ghosts"]
    assert published + releases[1][4] == 1427 - 3
    assert db.rows("SELECT count(*) FROM adult_ke")[0][0] == published + ghosts
    assert db.rows("SELECT sum(people) FROM adult_ke_by_education")[0][0] == published
    columns = [
        r[0]
        for r in db.rows(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
            "AND table_name = 'adult_ke_v2' ORDER BY ordinal_position",
            [schema],
        )
    ]
    layout = ["age", "sex", "education", "group_id", "capital_loss"]
    assert columns == (layout + ["ghost"] if ghosts else layout)
    keys = {str(k) for k in deleted}
    assert not db.rows(
        "SELECT record_key FROM sqlanon.members WHERE record_key IN (%s, %s, %s)", sorted(keys)
    )


def test_dbt_publishes_only_what_changed(tmp_path: Path) -> None:
    project = _project(tmp_path)
    db = DuckDB(tmp_path / "clinic.duckdb")
    _publish_with_changes(db, project)


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
def test_dbt_publishes_only_what_changed_on_postgres(
    tmp_path: Path, pg_db: str, pg_python_root: Path
) -> None:
    install_postgres(pg_db, python_root=pg_python_root)
    _publish_with_changes(Postgres(pg_db), _project(tmp_path))


LHD_MODEL = (
    "{{ config(materialized='sqlanon_release', model='lhd', key='id', "
    "sensitive=['capital_loss'], quasi=['age', 'sex'], l=2) }}\n"
    "select * from {{ ref('stg_adult') }}\n"
)


def test_models_follow_their_source_and_install_from_packages_yml(tmp_path: Path) -> None:
    """An lHD model over ``stg_adult`` (a view of the source ``adult``) finds the
    hierarchies loaded for ``adult`` and, like the (k,e) model, lands in the domain
    ``main.adult``, not one named after the view ``<model>__source``. The package is
    installed by ``dbt deps`` from the documented ``packages.yml`` entry."""
    project = _project(tmp_path)
    shutil.rmtree(project / "dbt_packages")
    (project / "packages.yml").write_text(
        "packages:\n  - local: \"{{ env_var('SQLANON_DBT_PACKAGE') }}\"\n"
    )
    for name in BAD_MODELS:
        (project / "models" / f"{name}.sql").unlink()
    (project / "models" / "adult_lhd.sql").write_text(LHD_MODEL)
    db = DuckDB(tmp_path / "clinic.duckdb")
    con = duckdb.connect(str(db.path))
    sqlanon_install(con)
    sqlanon_load_hierarchies(con, "adult")  # the bundled ARX hierarchies of Adult
    con.close()
    where = subprocess.run(
        [sys.executable, "-m", "sqlanon.duckdb.dbt"], capture_output=True, text=True, check=True
    ).stdout.strip()
    settings = {**db.settings, "SQLANON_DBT_PACKAGE": where}
    deps = subprocess.run(
        [str(Path(sys.executable).with_name("dbt")), "--no-use-colors", "deps"],
        cwd=project,
        env={**os.environ, **settings, "DBT_PROFILES_DIR": str(project), "DO_NOT_TRACK": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert deps.returncode == 0, deps.stdout + deps.stderr
    assert (project / "dbt_packages" / "sqlanon" / "dbt_project.yml").is_file()

    code, results, _ = _dbt(
        project, settings, "run", "--select", "stg_adult", "adult_lhd", "adult_ke"
    )
    assert code == 0, {name: r["message"] for name, r in results.items()}
    rows = db.rows(
        "SELECT family, domain, source, CAST(parameters AS VARCHAR) FROM sqlanon.releases "
        "ORDER BY family"
    )
    assert [r[:3] for r in rows] == [
        ("adult_ke", "main.adult", "main.adult_ke__source"),
        ("adult_lhd", "main.adult", "main.adult_lhd__source"),
    ]
    assert {json.loads(r[3])["dataset"] for r in rows} == {"adult"}
    labels = {r[0] for r in db.rows("SELECT DISTINCT sex FROM adult_lhd")}
    assert labels <= {"Male", "Female", "*"}
