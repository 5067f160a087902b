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
            session, source, family, key=key, sensitive=sensitive, quasi=quasi, k=k, e=e,
            policy=policy, seed=seed,
        )


def audit(con: Any, family: str) -> list[dict[str, Any]]:
    """Replay an attacker over every version of ``family``; one dict per version."""
    from sqlanon.audit import audit_family

    with session_for(con) as session:
        return audit_family(session, family)
