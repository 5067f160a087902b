"""The PL/Python entry points: what ``sqlanon.release_ke(...)`` and the other SQL
functions run on the server."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from decimal import Decimal
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from sqlanon.errors import ConfigError, SqlanonError, internal_message, one_line
from sqlanon.intervals import session_rewrite
from sqlanon.models.lhd_defer import DEFAULT_POLICY as DEFAULT_LHD_POLICY
from sqlanon.postgres.session import PlpySession, serialization_error
from sqlanon.release import ke_release
from sqlanon.release.lhd_release import release_lhd
from sqlanon.release.retire import retire
from sqlanon.state.audit_reads import audit_family
from sqlanon.state.capture import capture_changes, stop_capture
from sqlanon.state.deletions import erase
from sqlanon.state.hierarchies import hierarchy_widths, load_hierarchies

# --- Errors as the SQL functions report them -------------------------------------------
#
# Every server entry point below runs inside :func:`_reported`, which turns any exception
# into one ``plpy.Error`` carrying a clean one-line message and a SQLSTATE. PL/Python
# still prefixes it with ``plpy.Error: `` and adds the Python traceback as CONTEXT; the
# PL/pgSQL wrapper of each public function (sqlanon/postgres/sql/functions.sql) catches it and
# raises the bare message again with the same SQLSTATE, so a client sees one ERROR line
# and a one-line CONTEXT naming the function (PL/pgSQL always adds that line).

#: The SQLSTATE of each sqlanon error class, most specific first (matched by class name
#: along the exception's MRO, so a subclass defined elsewhere inherits its parent's).
SQLSTATES: dict[str, str] = {
    "QueryLimitError": "54000",  # program_limit_exceeded: the query is too large
    "UnsupportedQueryError": "0A000",  # feature_not_supported: rewrite the query
    "SerializationError": "40001",  # serialization_failure: retry the transaction
    "BlockedByReadersError": "55P03",  # lock_not_available: end the readers' transactions
    "ConcurrentReleaseError": "55P03",  # lock_not_available: run it again later
    "UndefinedTableError": "42P01",  # undefined_table: no such source table
    "PermissionDeniedError": "42501",  # insufficient_privilege: the caller may not read it
    "UndefinedColumnError": "42703",  # undefined_column: no such column
    "AmbiguousNameError": "42702",  # ambiguous: quote the name
    "UnsafeReleaseError": "55000",  # object_not_in_prerequisite_state
    "InfeasibleError": "22000",  # data_exception: the data cannot meet the parameters
    "ConfigError": "22023",  # invalid_parameter_value
    "SqlanonError": "22023",
}
INTERNAL_ERROR = "XX000"


def sqlstate_of(exc: BaseException) -> str:
    """The SQLSTATE a SQL function reports for ``exc`` (see :data:`SQLSTATES`)."""
    for cls in type(exc).__mro__:
        if cls.__name__ in SQLSTATES and issubclass(cls, SqlanonError):
            return SQLSTATES[cls.__name__]
    return INTERNAL_ERROR


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _reported(entry: Callable[Concatenate[Any, _P], _R]) -> Callable[Concatenate[Any, _P], _R]:
    """Run a server entry point, reporting every failure as one clean ``plpy.Error``."""

    def run(plpy: Any, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return entry(plpy, *args, **kwargs)
        except (plpy.Error, plpy.SPIError) as exc:  # SPIError: an SQL error, SQLSTATE and all
            state = getattr(exc, "sqlstate", None) or INTERNAL_ERROR
            message = str(exc.args[0]) if exc.args else str(exc)
            releases = entry.__name__.startswith("server_release") or args[:1] in (
                ("erase",),
                ("retire",),
            )
            refused = _stale_snapshot(plpy, state) if releases else None
            if refused is not None:
                state, message = sqlstate_of(refused), str(refused)
            plpy.error(one_line(message), sqlstate=state)
        except SqlanonError as exc:
            plpy.error(one_line(str(exc)), sqlstate=sqlstate_of(exc))
        except Exception as exc:
            import traceback

            plpy.log("".join(traceback.format_exception(exc)))
            where = f"sqlanon.{entry.__name__}"
            plpy.error(internal_message(exc, where, "the server log"), sqlstate=INTERNAL_ERROR)
        raise AssertionError("plpy.error returned")  # pragma: no cover

    functools.update_wrapper(run, entry)
    return run


def _stale_snapshot(plpy: Any, state: str) -> SqlanonError | None:
    """Under REPEATABLE READ or SERIALIZABLE, a release whose snapshot predates another
    release of its family or domain fails when it writes (the other's table or catalog
    row already exists); that failure, as the retry it asks for."""
    if state not in ("42P07", "23505", "40001"):
        return None
    level = _isolation(plpy)
    if level == "read committed":
        return None
    return serialization_error(level, "another release of the same family or domain")


def _isolation(plpy: Any) -> str:
    level = plpy.execute("SELECT pg_catalog.current_setting('transaction_isolation') AS i")
    return str(level[0]["i"])


# --- Server entry points: the bodies of sqlanon/postgres/sql/functions.sql ------------
#
# Each takes ``plpy`` and the SQL arguments, runs the shared core through a PlpySession
# and returns JSON text (the SQL functions return jsonb). Releases, loads and audits run
# in one subtransaction of the caller's transaction: an error leaves nothing behind,
# and a caller's ROLLBACK undoes a release like any other statement.


@_reported
def server_release_ke(
    plpy: Any,
    schema: str | None,
    source: str,
    family: str,
    key: str,  # SQL NULL arrives as None: the release refuses it
    sensitive: str,
    quasi: Sequence[str] | None,
    k: int,
    e: float,
    policy: str,
    domain: str | None = None,
    dry_run: bool | None = False,
    dataset: str | None = None,
) -> str:
    """``sqlanon.release_ke(...)``: the next (k,e) version of ``family`` in ``schema``."""
    session = _in_schema(plpy, schema)
    with _release_work_mem(session):
        summary = ke_release.release_ke(
            session,
            source,
            family,
            key=key,
            sensitive=sensitive,
            quasi=_names(quasi),
            k=k,
            e=e,
            policy=policy,
            domain_name=domain,
            dry_run=bool(dry_run),
            dataset=dataset,
        )
    return _json(summary)


@_reported
def server_release_lhd(
    plpy: Any,
    schema: str | None,
    source: str,
    family: str,
    key: str,  # SQL NULL arrives as None: the release refuses it
    quasi: Sequence[str] | None,
    sensitive: Sequence[str] | None,
    l: int,  # noqa: E741
    algorithm: str,
    max_suppression: float,
    domain: str | None = None,
    dry_run: bool | None = False,
    recoding: str = "local",
    dataset: str | None = None,
    policy: str = DEFAULT_LHD_POLICY,
) -> str:
    """``sqlanon.release_lhd(...)``: the next lHD version of ``family`` in ``schema``."""
    session = _in_schema(plpy, schema)
    with _release_work_mem(session):
        summary = release_lhd(
            session,
            source,
            family,
            key=key,
            quasi=_names(quasi),
            sensitive=_names(sensitive),
            l=l,
            algorithm=algorithm,
            max_suppression=max_suppression,
            domain_name=domain,
            dry_run=bool(dry_run),
            recoding=recoding,
            dataset=dataset,
            policy=policy,
        )
    return _json(summary)


@_reported
def server_call(plpy: Any, verb: str, *args: Any, schema: str | None = None) -> str:
    """``sqlanon.load_hierarchies``, ``sqlanon.hierarchy_widths``, ``sqlanon.audit``,
    ``sqlanon.erase``, ``sqlanon.retire``, ``sqlanon.capture_changes``,
    ``sqlanon.stop_capture``."""
    verbs: dict[str, Callable[..., Any]] = {
        "load_hierarchies": load_hierarchies,
        "hierarchy_widths": hierarchy_widths,
        "audit": audit_family,
        "erase": erase,
        "retire": retire,
        "capture_changes": capture_changes,
        "stop_capture": stop_capture,
    }
    session = _in_schema(plpy, schema) if schema is not None else PlpySession(plpy)
    return _json(verbs[verb](session, *args))


@_reported
def server_rewrite(plpy: Any, sql: str, dialect: str) -> str:
    """``sqlanon.interval_sql`` / ``sqlanon.rewrite``: the interval SQL of ``sql``."""
    return _rewrite(plpy, sql, dialect)


def _rewrite(plpy: Any, sql: str, dialect: str) -> str:
    return session_rewrite(PlpySession(plpy), sql, dialect, check_interrupts)


def check_interrupts() -> None:
    """Let the server act on a pending cancel (``pg_cancel_backend``, statement_timeout):
    PL/Python's own work never looks, any SPI call does, raising QueryCanceled (57014).
    Only inside a PL/Python function (``plpy`` is the module PL/Python provides)."""
    import plpy

    plpy.execute("SELECT 1")


@_reported
def server_interval_columns(plpy: Any, sql: str) -> str:
    """``sqlanon.interval_columns``: the column definition list ``sqlanon.interval(sql)``
    needs, ``name type, ...`` (quoted names, exact types) in the answer's order."""
    text = _rewrite(plpy, sql, "postgres")
    probe = plpy.execute(f"SELECT * FROM ({text.rstrip().rstrip(';')}\n) AS q LIMIT 0")  # noqa: S608
    names = probe.colnames() or []
    plan = plpy.prepare(
        "SELECT pg_catalog.format_type(t, m) AS t FROM ROWS FROM (pg_catalog.unnest($1),"
        " pg_catalog.unnest($2)) WITH ORDINALITY"
        " AS u (t, m, i) ORDER BY i",
        ["oid[]", "integer[]"],
    )
    types = [row["t"] for row in plpy.execute(plan, [probe.coltypes(), probe.coltypmods()])]
    return ", ".join(f"{plpy.quote_ident(n)} {t}" for n, t in zip(names, types, strict=True))


@_reported
def server_interval(plpy: Any, sql: str) -> list[str]:
    """``sqlanon.interval_json``: the interval SQL run with the caller's rights, one JSON
    object per output row (in the query's order)."""
    session = PlpySession(plpy)
    return [_json(row) for row in session.query_dicts(_rewrite(plpy, sql, "postgres"))]


# A release sorts and hashes whole tables (the release by its random order, the bounds,
# the join of the assignment to the source); below this much work_mem each spills to
# temporary files. Sorting the release of 10^6 records takes ~95 MB (spilling costs
# ~0.5 s of ~9 s).
RELEASE_WORK_MEM = "128MB"


@contextmanager
def _release_work_mem(session: PlpySession) -> Iterator[None]:
    """Raise work_mem to at least :data:`RELEASE_WORK_MEM` for the block, then put back
    the caller's value, error or not (``set_config(..., true)`` alone would last until
    the end of the caller's transaction)."""
    ((before, lower),) = session.query(
        "SELECT pg_catalog.current_setting('work_mem'), pg_catalog.pg_size_bytes("
        "pg_catalog.current_setting('work_mem')) < pg_catalog.pg_size_bytes($1)",
        [RELEASE_WORK_MEM],
    )
    if not lower:
        yield
        return
    restore = "SELECT pg_catalog.set_config('work_mem', $1, true)"
    session.execute(restore, [RELEASE_WORK_MEM])
    try:
        yield
    finally:
        session.execute(restore, [before])


def _in_schema(plpy: Any, schema: str | None) -> PlpySession:
    """A session for a release into ``schema`` (the caller's current_schema()), under the
    function's own pinned search path (:data:`PINNED_PATH`)."""
    if schema is None:
        raise ConfigError(
            "no current schema: the search_path names no existing schema; "
            "SET search_path to the schema the release should go to"
        )
    return PlpySession(plpy, schema)


def _names(values: Sequence[str] | None) -> list[str]:
    return [] if values is None else list(values)


def _json(value: Any) -> str:
    return json.dumps(_finite(value), default=_json_default)


def _finite(value: Any) -> Any:
    """``value`` with infinite floats (an unbounded interval end) as the strings
    PostgreSQL's own ``to_jsonb`` writes for them: JSON has no number for infinity."""
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
