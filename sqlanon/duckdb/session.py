"""DuckDB backend: a :class:`Session` over a cursor, and the SQL functions.

``register(con)`` makes ``sqlanon_release_ke(...)`` and friends callable in SQL on that
connection. A UDF may not run SQL on the connection that called it, so every function
works through ``con.cursor()``, which commits on its own: the release wraps all its
work in one explicit transaction there.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import duckdb
import numpy as np

from sqlanon.errors import ConcurrentReleaseError, ConfigError


class DuckDBSession:
    """A :class:`sqlanon.session.Session` over one DuckDB cursor."""

    dialect = "duckdb"
    schema: str | None = None

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._cur = con.cursor()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._cur.execute(sql, list(params))

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._cur.execute(sql, list(params)).fetchall()

    def query_dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = self._cur.execute(sql, list(params))
        names = [d[0] for d in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def query_arrays(self, sql: str, params: Sequence[Any] = ()) -> dict[str, np.ndarray]:
        arrays = self._cur.execute(sql, list(params)).fetchnumpy()
        return {name: _unmask(values) for name, values in arrays.items()}

    def load_temp(self, name: str, columns: dict[str, np.ndarray], types: dict[str, str]) -> None:
        view = f"_sqlanon_view_{name}"
        self._cur.register(view, {c: _plain(v) for c, v in columns.items()})
        try:
            select = ", ".join(
                f"CAST({self.quote_ident(c)} AS {types[c]}) AS {self.quote_ident(c)}"
                for c in columns
            )
            self._cur.execute(
                f"CREATE OR REPLACE TEMP TABLE {self.quote_ident(name)} AS "  # noqa: S608
                f"SELECT {select} FROM {self.quote_ident(view)}"
            )
        finally:
            self._cur.unregister(view)

    def quote_ident(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self._cur.execute("BEGIN TRANSACTION")
        try:
            yield
            self._cur.execute("COMMIT")
        except (duckdb.TransactionException, duckdb.ConstraintException) as exc:
            # A write-write conflict, or a duplicate (family, version) or (domain, seq):
            # another release of the family or domain committed first.
            self._rollback()
            raise ConcurrentReleaseError(
                "another transaction released the same family or domain at the same time "
                f"({exc}); nothing was written: run the release again"
            ) from exc
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        try:
            self._cur.execute("ROLLBACK")
        except duckdb.TransactionException:
            pass  # a failed commit has already ended the transaction

    def lock_family(self, family: str) -> None:
        """DuckDB has no advisory locks: a concurrent release of the same family (or of
        the same domain: ``sqlanon.releases`` is unique on (domain, seq)) makes one of
        the two transactions conflict (optimistic), and it is refused with
        :class:`ConcurrentReleaseError`; nothing half-written remains."""

    def read_only(self) -> bool:
        """Whether the connection's database is attached read-only."""
        return read_only(self._cur)

    def refuse_read_only(self, verb: str) -> None:
        """Refuse a writing verb on a read-only connection, before it reads anything."""
        if self.read_only():
            raise ConfigError(
                f"{verb} writes to the database, but this DuckDB connection is read-only "
                "(duckdb.connect(..., read_only=True)); the data owner runs it on a writable one"
            )

    def close(self) -> None:
        self._cur.close()


def read_only(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con``'s current database is read-only (``duckdb.connect(path,
    read_only=True)``, or an ``ATTACH ... (READ_ONLY)`` in use)."""
    row = con.execute(
        "SELECT readonly FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchone()
    return bool(row and row[0])


def _unmask(values: Any) -> np.ndarray:
    """NULLs arrive as a masked array: NaN for numbers, None for everything else.

    ``np.ma`` is imported on first use (~40 ms): a result can hold a masked array only if
    DuckDB imported it already, so it is looked up, never loaded, here.
    """
    masked = sys.modules.get("numpy.ma")
    if masked is None or not isinstance(values, masked.MaskedArray):
        return np.asarray(values)
    if values.dtype.kind in "fiu":
        return np.ma.filled(values.astype(np.float64), np.nan)
    out = np.asarray(values.data, dtype=object)
    out[np.ma.getmaskarray(values)] = None
    return out


def _plain(values: np.ndarray) -> np.ndarray:
    """Unicode numpy arrays would load as ENUM; object arrays load as VARCHAR."""
    values = np.asarray(values)
    return values.astype(object) if values.dtype.kind == "U" else values
