"""Open the database a command names: a DuckDB file, a PostgreSQL URL or a Spark master
(the CLI's ``--db``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlanon.duckdb.register import install as install_duckdb
from sqlanon.errors import ConfigError
from sqlanon.spark.attach import is_master_url, session_for_master


@contextmanager
def connect(db: str, *, install: bool = True, existing: bool = True) -> Iterator[Any]:
    """Open ``db`` (DuckDB path or PostgreSQL URL), with sqlanon installed for DuckDB.

    ``existing``: a DuckDB file that does not exist is an error. Only ``install`` creates
    one; every other command needs the source or the releases already in the file, and
    must not leave an empty database behind a typo."""
    if db.startswith(("postgresql://", "postgres://")):
        import psycopg

        with psycopg.connect(db, autocommit=True) as pg:
            yield pg
        return

    if is_master_url(db):
        with session_for_master(db) as spark:
            yield spark
        return
    import duckdb

    if existing and db != ":memory:" and not os.path.exists(db):
        raise ConfigError(
            f"no database file {db!r}; give the path of an existing DuckDB file "
            "(only `sqlanon install --db` creates one)"
        )
    try:
        con = duckdb.connect(db)
    except duckdb.IOException as exc:
        raise ConfigError(f"cannot open {db!r}: {first_line(exc)}") from exc
    try:
        if install:
            install_duckdb(con)
        yield con
    finally:
        con.close()


def first_line(exc: BaseException) -> str:
    """The first line of an exception's text (its type's name if it has none)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
