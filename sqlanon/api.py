"""The Python face of sqlanon: the same verbs as the SQL functions, on any connection."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlanon import release
from sqlanon.backends.base import Session
from sqlanon.errors import ConfigError


@contextmanager
def session_for(con: Any) -> Iterator[Session]:
    """A :class:`Session` for a DuckDB connection or a psycopg connection."""
    module = type(con).__module__
    if module.startswith("duckdb") or module.startswith("_duckdb"):
        from sqlanon.backends.duckdb import DuckDBSession

        session = DuckDBSession(con)
        try:
            yield session
        finally:
            session.close()
    elif module.startswith("psycopg"):
        from sqlanon.backends.postgres import PsycopgSession

        yield PsycopgSession(con)
    else:
        raise ConfigError(f"expected a duckdb or psycopg connection, got {type(con).__name__}")


def release_ke(
    con: Any,
    source: str,
    family: str,
    *,
    key: str,
    sensitive: str,
    quasi: Sequence[str],
    k: int,
    e: float,
    policy: str = "auto",
    seed: int | None = None,
) -> dict[str, Any]:
    """Publish the next (k,e)-anonymous version of ``family``; see :func:`release.release_ke`."""
    with session_for(con) as session:
        return release.release_ke(
            session,
            source,
            family,
            key=key,
            sensitive=sensitive,
            quasi=quasi,
            k=k,
            e=e,
            policy=policy,
            seed=seed,
        )


def audit(con: Any, family: str) -> list[dict[str, Any]]:
    """Replay an attacker over every version of ``family``; one dict per version."""
    from sqlanon.audit import audit_family

    with session_for(con) as session:
        return audit_family(session, family)


def release_catalog(session: Session) -> dict[str, Any]:
    """The rewriter's view of every release in this database (names analysts may use)."""
    from sqlanon.rewrite import catalog_from_rows

    rows = session.query(
        "SELECT family, version, table_name, model, CAST(parameters AS VARCHAR) "
        "FROM sqlanon.releases ORDER BY family, version"
    )
    return catalog_from_rows(rows)


def rewrite(sql: str, con: Any = None, *, catalog: Any = None, dialect: str = "duckdb") -> str:
    """The interval SQL for an analyst's query (for inspection, or to run elsewhere).

    Give either a connection (its ``sqlanon.releases`` is read) or a ``catalog`` built
    with :func:`sqlanon.rewrite.catalog_from_rows`; ``dialect`` is any sqlglot dialect.
    """
    from sqlanon.rewrite import rewrite as rewrite_sql

    if catalog is None:
        if con is None:
            raise ConfigError("rewrite() needs a connection or a catalog")
        with session_for(con) as session:
            catalog = release_catalog(session)
    return rewrite_sql(sql, catalog, dialect)


def interval(con: Any, sql: str) -> list[dict[str, Any]]:
    """Run an analyst's aggregate query as interval SQL; one dict per output row with
    ``<name>_low``, ``<name>_high`` and ``<name>_est`` per aggregate."""
    with session_for(con) as session:
        text = rewrite(sql, catalog=release_catalog(session), dialect=session.dialect)
        return session.query_dicts(text)
