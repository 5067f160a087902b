"""The one interface the release machinery uses to talk to a database.

``sqlanon.release``, ``sqlanon.state`` and ``sqlanon.intervals`` see a database only
through a :class:`Session`, so DuckDB (Python UDFs), PostgreSQL (psycopg on the client,
PL/Python in the server) and Spark share every line of model and release logic; each
engine's folder (``sqlanon/duckdb``, ``sqlanon/postgres``, ``sqlanon/spark``) holds its
implementation, in its ``session.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

import numpy as np


class Session(Protocol):
    """A connection as the release machinery needs it.

    SQL text uses ``$1, $2, ...`` placeholders in every dialect. Identifiers are never
    interpolated raw: callers pass them through :meth:`quote_ident` after checking them
    against the catalog.
    """

    dialect: str  # "duckdb" | "postgres" | "spark"

    @property
    def schema(self) -> str | None:
        """The schema a release writes to and looks unqualified names up in, when the
        session never resolves names through the connection's search path (PostgreSQL:
        the path is pinned to ``pg_catalog, pg_temp``, see
        :mod:`sqlanon.postgres.session`); None: the connection's current schema, by
        unqualified names (DuckDB, Spark)."""
        ...

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None: ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def query_dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...

    def query_arrays(self, sql: str, params: Sequence[Any] = ()) -> dict[str, np.ndarray]: ...

    def load_temp(self, name: str, columns: dict[str, np.ndarray], types: dict[str, str]) -> None:
        """Create temporary table ``name`` (a plain name sqlanon chose) holding ``columns``."""
        ...

    def quote_ident(self, name: str) -> str: ...

    def transaction(self) -> AbstractContextManager[None]:
        """All-or-nothing block: commits on success, rolls back on any exception."""
        ...

    def lock_family(self, family: str) -> None:
        """Inside a transaction: serialize releases of one family."""
        ...


@runtime_checkable
class ListsCatalog(Protocol):
    """A session whose engine has no ``information_schema`` (Spark) lists its tables
    and columns itself; :mod:`sqlanon.state.source` asks it instead."""

    def current_schema(self) -> str: ...

    def find_tables(self, schema: str, table: str) -> list[tuple[str, str]]:
        """``(schema, table)`` of the tables and views named so, ignoring case."""
        ...

    def table_columns(self, schema: str, table: str) -> list[tuple[str, str]]:
        """``(column, data type)`` of one table, in order."""
        ...


@runtime_checkable
class WaitsForReaders(Session, Protocol):
    """A :class:`Session` whose engine makes a statement that replaces a view wait for every open
    transaction reading it, and queues new reads behind that wait (PostgreSQL's ACCESS
    EXCLUSIVE lock). :mod:`sqlanon.release.publish` takes such a lock in short attempts."""

    def try_briefly(self, statements: Sequence[str], lock_timeout: float) -> bool:
        """Run ``statements`` all or nothing, each waiting at most ``lock_timeout``
        seconds for a lock; False, with none of them done, when one was not granted in
        time. The caller's own ``lock_timeout`` is in force again afterwards."""
        ...
