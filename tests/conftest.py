"""Shared fixtures.

PostgreSQL: the server comes from ``scripts/pg start`` (``./scripts/test`` runs it) or
from ``SQLANON_TEST_PG_URL``. Without one, every test that needs it fails: CI must
never pass by skipping the PostgreSQL half.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sqlanon

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def pg_url() -> str:
    """URL of the test server's ``sqlanon_test`` database (superuser role)."""
    import psycopg

    url = os.environ.get("SQLANON_TEST_PG_URL")
    url_file = ROOT / ".pg" / "url"
    if not url and url_file.is_file():
        url = url_file.read_text().strip()
    if not url:
        pytest.fail(
            "no PostgreSQL test server: run `scripts/pg start` (or ./scripts/test), "
            "or set SQLANON_TEST_PG_URL",
            pytrace=False,
        )
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"cannot connect to the PostgreSQL test server at {url}: {exc}\n"
            "start it with `scripts/pg start` (or run ./scripts/test)",
            pytrace=False,
        )
    return url


@pytest.fixture(scope="session")
def pg_python_root() -> Path:
    """Where tests install sqlanon for the server's PL/Python: the server's OS user
    must be able to read it (override with SQLANON_TEST_PG_PYTHON_ROOT)."""
    return Path(os.environ.get("SQLANON_TEST_PG_PYTHON_ROOT", ROOT / ".pg" / "python"))


@pytest.fixture
def pg_db(pg_url: str) -> Iterator[str]:
    """Connection string of a fresh, empty database, dropped after the test."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    name = f"sqlanon_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(pg_url, dbname=name)
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
def pg_conn(pg_db: str) -> Iterator[Any]:
    """An autocommit psycopg connection to the fresh database of :func:`pg_db`."""
    import psycopg

    with psycopg.connect(pg_db, autocommit=True) as conn:
        yield conn


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local Spark session with sqlanon installed, on a fresh warehouse, for one test
    module (tests/test_spark.py, tests/test_export_spark.py); stopped at its end."""
    import pyspark.sql as pyspark_sql  # the dev extra (and Java, scripts/setup)

    warehouse = tmp_path_factory.mktemp("spark") / "warehouse"
    session = (
        pyspark_sql.SparkSession.builder.master("local[1]")
        .appName("sqlanon-tests")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.memory", "1g")
        # tiny data: compiling whole-stage code and re-planning cost more than they save,
        # and so do the JVM's optimizing compiler and parallel collector (a short run on
        # 2 cores shared with other test files: about half the time with C1 and serial GC)
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("OFF")
    assert sqlanon.install(session) == [
        "001_catalog",
        "011_member_spans",
        "013_retirements",
        "015_shared_rows",
    ]
    assert sqlanon.install(session) == []  # idempotent
    yield session
    session.stop()


# --- how scripts/test spreads the files over its workers --------------------------------


def _spark_file(path: str | Path) -> bool:
    """The files of real-Spark tests are named so (tests/test_*spark*.py)."""
    return "spark" in Path(path).stem


def _first(item: pytest.Item) -> bool:
    """Whether ``item``'s file is handed out early: the Spark files and the files marked
    ``slow`` (``pytestmark``)."""
    module = item.getparent(pytest.Module)
    slow = module is not None and module.get_closest_marker("slow") is not None
    return slow or _spark_file(item.path)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long files first, so that with ``--no-loadscope-reorder`` (scripts/test) none of
    them starts last while the other worker idles; the order within a file stays."""
    items.sort(key=lambda item: not _first(item))


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` (scripts/test), except that the Spark files make one unit: one
    worker then starts one JVM for all of them (a process's first SparkSession costs
    ~20 s; later ones reuse its JVM and start in under one)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SparkTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope: str = super()._split_scope(nodeid)
            return "spark" if _spark_file(scope) else scope

    return SparkTogether(config, log)
