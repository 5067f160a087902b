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
    assert sqlanon.install(session) == ["001_catalog"]
    assert sqlanon.install(session) == []  # idempotent
    yield session
    session.stop()
