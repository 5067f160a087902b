"""Every error sqlanon raises on purpose derives from :class:`SqlanonError`.

Messages say what was wrong and what to do, e.g.
``k=3 needs 3 distinct values of "salary"; the table has 2``.
"""

from __future__ import annotations

import re
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def one_line(text: str) -> str:
    """``text`` as one line of plain text for a client: no ANSI escapes (sqlglot
    underlines the offending token of a parse error with them), no other control
    characters (an analyst's query may hold any), whitespace runs collapsed."""
    return " ".join(_CONTROL.sub("?", _ANSI.sub("", text)).split())


class SqlanonError(Exception):
    """Root of all sqlanon errors."""


class ConfigError(SqlanonError):
    """Bad arguments: unknown names, impossible parameters, malformed hierarchies."""


class InfeasibleError(SqlanonError):
    """The data cannot satisfy the privacy model with these parameters."""


class SuppressionLimitError(InfeasibleError):
    """An lHD release would leave out more than ``max_suppression`` of its records (held
    back, suppressed, chain rule included): refused, nothing written."""


class UnsafeReleaseError(SqlanonError):
    """Publishing would expose records (deleted or changed rows, a broken cell)."""


class BrokenCellError(UnsafeReleaseError):
    """An earlier release of the domain left a cell below its own requirement: records
    it exposed. Only the seeds' unsafe ``paper`` policy does that; no safe release can
    follow it. ``shortfall`` says which cell and how."""

    def __init__(self, shortfall: str) -> None:
        super().__init__(
            f"{shortfall}: an earlier release exposed its records (only the seeds' unsafe "
            "policy 'paper' does that)"
        )
        self.shortfall = shortfall


class ConcurrentReleaseError(SqlanonError):
    """Another release of the same family is running; retry when it has finished."""


class BlockedByReadersError(SqlanonError):
    """Open transactions reading a family's view kept a release from pointing the view
    at its new table for longer than it may wait (PostgreSQL); nothing was written."""


class UnsupportedQueryError(SqlanonError):
    """The interval rewriter cannot answer this query soundly. Its message is one line
    of plain text, whatever part of the analyst's query it quotes."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class QueryLimitError(UnsupportedQueryError):
    """The query is longer or nested deeper than the data owner's limits allow
    (``sqlanon.set_limit``)."""


class SerializationError(ConcurrentReleaseError):
    """A REPEATABLE READ or SERIALIZABLE transaction cannot see another release that
    committed after its snapshot; retry the transaction (PostgreSQL SQLSTATE 40001)."""


class UndefinedTableError(ConfigError):
    """The named source table does not exist."""


class PermissionDeniedError(SqlanonError):
    """The caller may not read the named source (PostgreSQL: no SELECT on the table, or
    no USAGE on its schema)."""


class UndefinedColumnError(ConfigError):
    """The named column is not in the source table."""


class AmbiguousNameError(ConfigError):
    """An unquoted name matches several tables or columns differing only in case."""


class ExportError(ConfigError):
    """An analyst export cannot go to this path: something that is not an export is
    there, its folder is missing, or it would hold what it may not."""


class InternalError(SqlanonError):
    """A bug in sqlanon, not in the caller's input. Its message names the exception's type
    and the innermost sqlanon line it came from, never its text (which may quote data);
    the exception itself is chained (``raise ... from``) for the report."""


def internal_message(exc: BaseException, where: str, traceback_at: str) -> str:
    """What a caller sees of a bug ``exc`` in ``where`` (e.g. ``sqlanon.release_lhd``)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "sqlanon" in f.filename]
    place = ""
    if frames:
        path = Path(frames[-1].filename)
        parts = path.parts[path.parts.index("sqlanon") :] if "sqlanon" in path.parts else path.parts
        place = f" at {'/'.join(parts)}:{frames[-1].lineno}"
    return (
        f"internal error in {where}: {type(exc).__name__}{place}; this is a bug in sqlanon, "
        f"please report it ({traceback_at} has the traceback)"
    )


def is_database_error(exc: BaseException) -> bool:
    """An error of DuckDB, psycopg or Spark (only if loaded: never imported for this): the
    database's own message, not a bug of sqlanon's."""
    bases = [
        getattr(sys.modules.get(module), name, None)
        for module, name in (
            ("duckdb", "Error"),
            ("psycopg", "Error"),
            ("pyspark.errors", "PySparkException"),
        )
    ]
    return any(isinstance(base, type) and isinstance(exc, base) for base in bases)


@contextmanager
def reported(where: str, passing: tuple[type[Exception], ...] = ()) -> Iterator[None]:
    """Run ``where`` (e.g. ``sqlanon.release_lhd``): a sqlanon or database error (or one
    of ``passing``) leaves it as it is, anything else (a bug) as an
    :class:`InternalError` raised from it. Whatever failed inside a release's transaction
    rolled it back: nothing was written."""
    try:
        yield
    except Exception as exc:
        if isinstance(exc, (SqlanonError, *passing)) or is_database_error(exc):
            raise
        message = internal_message(exc, where, "the exception it was raised from")
        raise InternalError(message) from exc
