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
