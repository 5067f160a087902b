"""PostgreSQL backend: the :class:`~sqlanon.backends.base.Session` twice over.

- :class:`PsycopgSession` runs in the client, over a psycopg 3 connection.
- :class:`PlpySession` runs inside the server, in a PL/Python (``plpython3u``) function,
  over the ``plpy`` module. The server has no psycopg, so this module imports it only
  inside :class:`PsycopgSession`.

Both speak PostgreSQL's own ``$1, $2, ...`` placeholders: psycopg's ``RawCursor`` sends
them to the server unchanged (no ``%s`` rewriting, no ``%`` escaping), and ``plpy.prepare``
takes them natively. The functions in ``sql/postgres/functions.sql`` are created by
:mod:`sqlanon.pg_install`.

Search paths (CVE-2018-1058). Whoever may create objects in a schema of the caller's
search path could plant a function, operator or type that a release, run by someone
with more rights (a superuser, another data owner), would then call with those rights.
So sqlanon never resolves a name through the caller's path: while it works the path is
``pg_catalog, pg_temp`` (pinned by each PL/Python function's ``SET search_path``, and by
:meth:`PsycopgSession.transaction` on the client), functions come from ``pg_catalog``
only (``pg_temp`` is never searched for functions or operators), the SQL names them
``pg_catalog.`` all the same (``sqltext.load`` for the SQL common to every dialect), and
the caller's schema, where a release goes, is remembered as :attr:`schema` and written
into every name (``release.source.relation``).
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from sqlanon.errors import ConcurrentReleaseError, SqlanonError, one_line
from sqlanon.sqltext import pg_qualified

_PARAM = re.compile(r"\$(\d+)(?!\d)")
_LOCK_FAMILY = (
    "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext("
    "'sqlanon:' OPERATOR(pg_catalog.||) CAST($1 AS pg_catalog.text)))"
)
_TRY_LOCK_FAMILY = (
    "SELECT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtext("
    "'sqlanon:' OPERATOR(pg_catalog.||) CAST($1 AS pg_catalog.text)))"
)
#: The only search path sqlanon's SQL runs under.
PINNED_PATH = "pg_catalog, pg_temp"

# Type OIDs from pg_type.dat: what query_arrays turns into numeric numpy arrays.
_INT_OIDS = {20, 21, 23}  # int8, int2, int4
_FLOAT_OIDS = {700, 701, 1700}  # float4, float8, numeric
_BOOL_OID = 16

# load_temp takes the type names release.py writes for every dialect; PostgreSQL spells
# DuckDB's DOUBLE differently. Anything else must look like a plain type name.
_TYPE_ALIASES = {"DOUBLE": "double precision"}
_INT_TYPE = re.compile(r"^(integer|int|bigint|smallint|int[248])$", re.IGNORECASE)
_TYPE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_ ]*(\(\d+(,\s*\d+)?\))?(\[\])?$")


class PsycopgSession:
    """A :class:`Session` over a psycopg 3 connection (client side).

    ``transaction()`` is ``conn.transaction()``: a real transaction on an autocommit
    connection, a savepoint inside one that is already open. The outermost one pins the
    search path to :data:`PINNED_PATH` and remembers the caller's current schema as
    :attr:`schema`; the caller's path comes back when it ends (on an error, with the
    rollback).
    """

    dialect = "postgres"

    def __init__(self, conn: Any, schema: str | None = None) -> None:
        import psycopg

        self._conn = conn
        self._cur = psycopg.RawCursor(conn)
        self._pinned = False
        self._given = schema
        self._schema: str | None = None

    @property
    def schema(self) -> str | None:
        """The caller's current schema (while pinned, as it was before), or the one the
        session was made for (the installer, whose own path is pinned throughout)."""
        if self._given is not None:
            return self._given
        if self._pinned:
            return self._schema
        return str(self.query("SELECT pg_catalog.current_schema()")[0][0] or "") or None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        # Without parameters psycopg uses the simple protocol: several statements may
        # be sent at once (migrations, function definitions).
        self._cur.execute(pg_qualified(sql), list(params) if params else None)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self.execute(sql, params)
        return self._cur.fetchall() if self._cur.description else []

    def query_dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        rows = self.query(sql, params)
        names = [c.name for c in self._cur.description or []]
        return [dict(zip(names, row, strict=True)) for row in rows]

    def query_arrays(self, sql: str, params: Sequence[Any] = ()) -> dict[str, np.ndarray]:
        rows = self.query(sql, params)
        columns = self._cur.description or []
        return {
            c.name: column_array([row[i] for row in rows], c.type_code)
            for i, c in enumerate(columns)
        }

    def load_temp(self, name: str, columns: dict[str, np.ndarray], types: dict[str, str]) -> None:
        """``CREATE TEMP TABLE`` and one ``COPY ... FROM STDIN`` with every row."""
        q = self.quote_ident
        self.execute(_create_temp_sql(q, name, columns, types))
        names = ", ".join(q(c) for c in columns)
        lists = [_values(v, types[c]) for c, v in columns.items()]
        with self._cur.copy(f"COPY {q(name)} ({names}) FROM STDIN") as copy:
            for row in zip(*lists, strict=True):
                copy.write_row(row)
        self.execute(_analyze_temp_sql(q, name, columns))

    def quote_ident(self, name: str) -> str:
        from psycopg import sql

        return sql.Identifier(name).as_string(self._conn)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._conn.transaction():
            if self._pinned:
                yield
                return
            ((schema, path),) = self.query(
                "SELECT pg_catalog.current_schema(), pg_catalog.current_setting('search_path')"
            )
            pin = "SELECT pg_catalog.set_config('search_path', $1, true)"
            self.execute(pin, [PINNED_PATH])
            self._schema, self._pinned = schema, True
            try:
                yield
            finally:
                self._pinned = False
            self.execute(pin, [path])  # on an error the rollback restores it

    def lock_family(self, family: str) -> None:
        """Wait for the family's advisory lock (held until the transaction ends).

        Waits as long as the connection's ``lock_timeout`` allows (forever by default);
        when that runs out, :class:`ConcurrentReleaseError`.
        """
        from psycopg import errors, pq

        if self._conn.info.transaction_status != pq.TransactionStatus.INTRANS:
            raise RuntimeError("lock_family() needs an open transaction (session.transaction())")
        try:
            self.execute(_LOCK_FAMILY, [family])
        except errors.LockNotAvailable as exc:
            raise _concurrent(family) from exc

    def try_briefly(self, statements: Sequence[str], lock_timeout: float) -> bool:
        """``statements`` in a savepoint under a short ``lock_timeout`` (seconds); False,
        rolled back to the savepoint, when a lock was not granted in time."""
        from psycopg import errors

        try:
            with self._conn.transaction():
                _run_briefly(self, statements, lock_timeout)
        except errors.LockNotAvailable:
            return False
        return True


class PlpySession:
    """A :class:`Session` inside a PL/Python function, over the ``plpy`` module.

    ``transaction()`` is ``plpy.subtransaction()``: on an exception the block's writes
    are rolled back and the exception propagates; on success they become part of the
    calling statement's transaction, which commits or rolls back as its caller decides.

    ``plpy.prepare`` needs every parameter's type up front. Unless they are given
    (``execute(sql, params, types=[...])``) they are inferred from the Python values:
    ``int`` -> bigint, ``float`` -> double precision, ``str`` -> text, a list -> an
    array of its first non-NULL element's type; a ``None`` parameter (no type to
    infer) is written into the SQL as an untyped ``NULL``, which PostgreSQL types
    from its context as it would the parameter.
    """

    dialect = "postgres"

    def __init__(self, plpy: Any, schema: str | None = None) -> None:
        self._plpy = plpy
        #: The caller's current schema (the function itself runs with the pinned path).
        self.schema = schema
        self._plans: dict[tuple[str, tuple[str, ...]], Any] = {}
        self._array_oid: dict[int, bool] = {}  # type OID -> is it an array type

    def _run(self, sql: str, params: Sequence[Any], types: Sequence[str] | None) -> Any:
        sql = pg_qualified(sql)
        if not params:
            return self._plpy.execute(sql)
        values = [_plain_value(v) for v in params]
        if types is None:
            sql = _inline_nulls(sql, values)
            names = tuple(_infer_type(v) for v in values)
        else:
            names = tuple(types)
        plan = self._plans.get((sql, names))
        if plan is None:
            plan = self._plans[(sql, names)] = self._plpy.prepare(sql, list(names))
        return self._plpy.execute(plan, values)

    def execute(
        self, sql: str, params: Sequence[Any] = (), types: Sequence[str] | None = None
    ) -> None:
        self._run(sql, params, types)

    def query(
        self, sql: str, params: Sequence[Any] = (), types: Sequence[str] | None = None
    ) -> list[tuple[Any, ...]]:
        result = self._run(sql, params, types)
        names = result.colnames() or []
        return [tuple(row[c] for c in names) for row in result]

    def query_dicts(
        self, sql: str, params: Sequence[Any] = (), types: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        result = self._run(sql, params, types)
        names = result.colnames() or []
        return [{c: row[c] for c in names} for row in result]

    def query_arrays(
        self, sql: str, params: Sequence[Any] = (), types: Sequence[str] | None = None
    ) -> dict[str, np.ndarray]:
        """The result of a query (``SELECT``, ``VALUES`` or ``WITH``), one array per column.

        Each column comes back aggregated into one array (``array_agg`` over the query as
        a subquery, in the query's order): PL/Python turns an array into a list several
        times faster than it builds one dict per result row (10^6 rows of a text and a
        number: 0.3 s instead of 1.5 s). Columns that are arrays themselves, which
        ``array_agg`` would stack into one multidimensional array, come back row by row.
        """
        subquery = f"({sql.rstrip().rstrip(';')}\n) AS q"
        probe = self._run(f"SELECT * FROM {subquery} LIMIT 0", params, types)  # noqa: S608
        names = probe.colnames() or []
        oids = probe.coltypes() or []
        if not names or self._has_array_type(oids):
            result = self._run(sql, params, types)
            return {
                c: column_array([row[c] for row in result], oid)
                for c, oid in zip(names, oids, strict=True)
            }
        # Positional aliases: the query's own column names may repeat or be anything.
        aliases = [self.quote_ident(f"c{i}") for i in range(len(names))]
        aggregates = ", ".join(f"pg_catalog.array_agg(q.{a}) AS {a}" for a in aliases)
        row = self._run(
            f"SELECT {aggregates} FROM {subquery} ({', '.join(aliases)})",  # noqa: S608
            params,
            types,
        )[0]
        return {
            c: column_array(row[f"c{i}"] or [], oid)
            for i, (c, oid) in enumerate(zip(names, oids, strict=True))
        }

    def _has_array_type(self, oids: Sequence[int]) -> bool:
        unknown = [o for o in oids if o not in self._array_oid]
        if unknown:
            for oid, is_array in self.query(
                "SELECT oid, typcategory = 'A' FROM pg_catalog.pg_type WHERE oid = ANY($1)",
                [unknown],
                types=["oid[]"],
            ):
                self._array_oid[int(oid)] = bool(is_array)
        return any(self._array_oid.get(o, True) for o in oids)

    def load_temp(self, name: str, columns: dict[str, np.ndarray], types: dict[str, str]) -> None:
        """One ``CREATE TEMP TABLE ... AS SELECT unnest($1), unnest($2), ...``.

        Each column travels as one array parameter. The ``unnest`` calls sit in the select
        list, where they stream in lockstep; ``FROM unnest($1, $2, ...)`` (the same rows)
        first copies each array into a tuplestore, which spills to disk beyond work_mem
        (5 columns of 10^6 rows: 2.0 s instead of 1.3 s). ``CREATE TABLE AS`` writes with
        a bulk-insert buffer, 10-20% faster than ``INSERT`` into a created table; the
        casts keep each column's declared type, type modifier included.
        """
        q = self.quote_ident
        self.execute(f"DROP TABLE IF EXISTS pg_temp.{q(name)}")
        array_types = [_pg_type(types[c]) + "[]" for c in columns]
        select = ", ".join(
            f"CAST(pg_catalog.unnest(${i}) AS {_pg_type(types[c])}) AS {q(c)}"
            for i, c in enumerate(columns, start=1)
        )
        self.execute(
            f"CREATE TEMP TABLE {q(name)} AS SELECT {select}",  # noqa: S608
            [_values(v, types[c]) for c, v in columns.items()],
            types=array_types,
        )
        self.execute(_analyze_temp_sql(q, name, columns))

    def quote_ident(self, name: str) -> str:
        """Always quoted, like psycopg's ``Identifier``: ``plpy.quote_ident`` leaves plain
        lowercase names bare, and ``sqltext.render`` accepts only quoted ones."""
        quoted = str(self._plpy.quote_ident(name))
        return quoted if quoted.startswith('"') else f'"{quoted}"'

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._plpy.subtransaction():
            yield

    def lock_family(self, family: str) -> None:
        """Wait for the family's advisory lock (held until the calling transaction ends);
        :class:`ConcurrentReleaseError` when ``lock_timeout`` runs out.

        Only READ COMMITTED waits: there each statement of the release sees what the
        release it waited for committed. A REPEATABLE READ or SERIALIZABLE transaction
        keeps its first snapshot, so waiting would only end in a failed write; it takes
        the lock if it is free and otherwise fails at once with :class:`SerializationError`
        (SQLSTATE 40001, the usual "retry the transaction").
        """
        ((level,),) = self.query("SELECT pg_catalog.current_setting('transaction_isolation')")
        if level != "read committed":
            ((got,),) = self.query(_TRY_LOCK_FAMILY, [family])
            if not got:
                raise _serialization_error(level, _lock_subject(family))
            return
        try:
            self.execute(_LOCK_FAMILY, [family])
        except self._plpy.spiexceptions.LockNotAvailable as exc:
            raise _concurrent(family) from exc

    def try_briefly(self, statements: Sequence[str], lock_timeout: float) -> bool:
        """``statements`` in their own subtransaction under a short ``lock_timeout``
        (seconds); False, the subtransaction rolled back, when a lock was not granted in
        time (a failed statement outside one would abort the caller's transaction)."""
        try:
            with self._plpy.subtransaction():
                _run_briefly(self, statements, lock_timeout)
        except self._plpy.spiexceptions.LockNotAvailable:
            return False
        return True


def python_info() -> str:
    """What a PL/Python function imports: sqlanon's directory and versions, as JSON."""
    import sqlglot

    import sqlanon

    return json.dumps(
        {
            "python_dir": str(Path(sqlanon.__file__).resolve().parent.parent),
            "sqlanon": sqlanon.__version__,
            "numpy": np.__version__,
            "sqlglot": sqlglot.__version__,  # type: ignore[attr-defined]
            "python": sys.version.split()[0],
        }
    )


def column_array(values: list[Any], type_oid: int) -> np.ndarray:
    """One result column as numpy, the way the DuckDB session returns it: integers as
    int64 (float64 with NaN when NULLs occur), floats and numerics as float64 (NaN for
    NULL), booleans as bool, everything else as an object array (None for NULL)."""
    if type_oid in _INT_OIDS:
        try:
            return np.array(values, dtype=np.int64)
        except TypeError:  # a None: NULLs present
            pass
    if type_oid in _INT_OIDS or type_oid in _FLOAT_OIDS:
        return np.array(values, dtype=np.float64)  # None -> NaN
    if type_oid == _BOOL_OID and values:
        inferred = np.array(values)  # bool unless a None makes it object
        if inferred.dtype == bool:
            return inferred
    elif type_oid == _BOOL_OID:
        return np.array(values, dtype=bool)
    return np.fromiter(values, dtype=object, count=len(values))


def _create_temp_sql(
    q: Any, name: str, columns: dict[str, np.ndarray], types: dict[str, str]
) -> str:
    """Drop any earlier temp table of that name (never a permanent one), then create it."""
    spec = ", ".join(f"{q(c)} {_pg_type(types[c])}" for c in columns)
    return f"DROP TABLE IF EXISTS pg_temp.{q(name)}; CREATE TEMP TABLE {q(name)} ({spec})"


def _analyze_temp_sql(q: Any, name: str, columns: dict[str, np.ndarray]) -> str:
    """``ANALYZE`` a loaded temp table, from a sample of 3,000 rows.

    Autovacuum never analyzes temporary tables: without this, after filling one, the
    planner guesses its size and joins it to the source with a nested loop (0.4 s instead
    of 0.03 s at 10^4 rows). Its row count, distinct keys and group ids are all the
    planner needs: a statistics target of 10 (the default 100 samples 30,000 rows) finds
    them, 7x faster."""
    small = ", ".join(f"ALTER COLUMN {q(c)} SET STATISTICS 10" for c in columns)
    return f"ALTER TABLE pg_temp.{q(name)} {small}; ANALYZE pg_temp.{q(name)}"


def _values(values: np.ndarray, type_name: str) -> list[Any]:
    """A column as Python values for an integer or other column: whole floats become
    ints for INTEGER/BIGINT columns (PostgreSQL refuses "9.0" there; DuckDB casts)."""
    array = np.asarray(values)
    if array.dtype.kind == "f" and _INT_TYPE.search(type_name):
        return list(array.astype(np.int64).tolist())
    return list(array.tolist())


def _pg_type(name: str) -> str:
    """A column type for SQL text: checked, since it cannot travel as a parameter."""
    name = _TYPE_ALIASES.get(name.upper(), name)
    if not _TYPE_NAME.match(name):
        raise ValueError(f"load_temp: {name!r} is not a plain SQL type name")
    return name


def _plain_value(value: Any) -> Any:
    """numpy scalars and arrays as the Python values PL/Python knows how to pass."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    return value


def _infer_type(value: Any) -> str:
    """The parameter type ``plpy.prepare`` needs, from a Python value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "bigint"
    if isinstance(value, float):
        return "double precision"
    if isinstance(value, Decimal):
        return "numeric"
    if isinstance(value, bytes):
        return "bytea"
    if isinstance(value, list | tuple):
        inner = next((v for v in value if v is not None), "")
        return _infer_type(inner) + "[]"
    return "text"  # also for None, inlined as NULL by _inline_nulls: the type is unused


def _inline_nulls(sql: str, values: Sequence[Any]) -> str:
    """Write ``NULL`` for each ``$n`` whose value is ``None``."""
    nulls = {i for i, v in enumerate(values, start=1) if v is None}
    if not nulls:
        return sql
    return _PARAM.sub(lambda m: "NULL" if int(m.group(1)) in nulls else m.group(0), sql)


_SET_LOCK_TIMEOUT = "SELECT pg_catalog.set_config('lock_timeout', $1, true)"


def _run_briefly(
    session: PsycopgSession | PlpySession, statements: Sequence[str], lock_timeout: float
) -> None:
    """``statements`` under ``lock_timeout`` seconds (at least 1 ms: 0 would wait for
    ever), then the caller's value again. Inside a savepoint or subtransaction: when it
    rolls back, so does the setting."""
    ((before,),) = session.query("SELECT pg_catalog.current_setting('lock_timeout')")
    session.execute(_SET_LOCK_TIMEOUT, [f"{max(1, round(lock_timeout * 1000))}ms"])
    for statement in statements:
        session.execute(statement)
    session.execute(_SET_LOCK_TIMEOUT, [before])


def _concurrent(family: str) -> ConcurrentReleaseError:
    return ConcurrentReleaseError(
        f"another release of family {family!r} holds its lock and lock_timeout ran out; "
        "nothing was written: run the release again when it has finished"
    )


# --- Errors as the SQL functions report them -------------------------------------------
#
# Every server entry point below runs inside :func:`_reported`, which turns any exception
# into one ``plpy.Error`` carrying a clean one-line message and a SQLSTATE. PL/Python
# still prefixes it with ``plpy.Error: `` and adds the Python traceback as CONTEXT; the
# PL/pgSQL wrapper of each public function (sql/postgres/functions.sql) catches it and
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


def internal_message(exc: BaseException, where: str) -> str:
    """What a client sees of a bug: the exception's type and the innermost sqlanon line
    it came from, never its text (which may quote data)."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "sqlanon" in f.filename]
    place = ""
    if frames:
        path = Path(frames[-1].filename)
        parts = path.parts[path.parts.index("sqlanon") :] if "sqlanon" in path.parts else path.parts
        place = f" at {'/'.join(parts)}:{frames[-1].lineno}"
    return (
        f"internal error in {where}: {type(exc).__name__}{place}; this is a bug in sqlanon, "
        "please report it (the server log has the traceback)"
    )


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
            releases = entry.__name__.startswith("server_release") or args[:1] == ("erase",)
            refused = _stale_snapshot(plpy, state) if releases else None
            if refused is not None:
                state, message = sqlstate_of(refused), str(refused)
            plpy.error(one_line(message), sqlstate=state)
        except SqlanonError as exc:
            plpy.error(one_line(str(exc)), sqlstate=sqlstate_of(exc))
        except Exception as exc:
            import traceback

            plpy.log("".join(traceback.format_exception(exc)))
            plpy.error(internal_message(exc, f"sqlanon.{entry.__name__}"), sqlstate=INTERNAL_ERROR)
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
    return _serialization_error(level, "another release of the same family or domain")


def _isolation(plpy: Any) -> str:
    level = plpy.execute("SELECT pg_catalog.current_setting('transaction_isolation') AS i")
    return str(level[0]["i"])


def _serialization_error(level: str, what: str) -> SqlanonError:
    from sqlanon.errors import SerializationError

    return SerializationError(
        f"{what} is running or committed after this {level.upper()} transaction took its "
        "snapshot, which cannot show what it wrote; nothing was written: retry the "
        "transaction, or run releases in READ COMMITTED (the default), where releases of "
        "one family or domain wait for each other"
    )


def _lock_subject(family: str) -> str:
    """``lock_family``'s key as words: ``domain x`` or a family name."""
    if family.startswith("domain "):
        return f"another release of domain {family[len('domain ') :]!r}"
    return f"another release of family {family!r}"


# --- Server entry points: the bodies of sql/postgres/functions.sql ----------------------
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
) -> str:
    """``sqlanon.release_ke(...)``: the next (k,e) version of ``family`` in ``schema``."""
    from sqlanon.release import ke as release

    session = _in_schema(plpy, schema)
    with _release_work_mem(session):
        summary = release.release_ke(
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
) -> str:
    """``sqlanon.release_lhd(...)``: the next lHD version of ``family`` in ``schema``."""
    from sqlanon.release.lhd import release_lhd

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
        )
    return _json(summary)


@_reported
def server_call(plpy: Any, verb: str, *args: Any, schema: str | None = None) -> str:
    """``sqlanon.load_hierarchies``, ``sqlanon.hierarchy_widths``, ``sqlanon.audit``,
    ``sqlanon.erase``."""
    from sqlanon.audit_db import audit_family
    from sqlanon.live import erase
    from sqlanon.release.lhd import hierarchy_widths, load_hierarchies

    verbs: dict[str, Callable[..., Any]] = {
        "load_hierarchies": load_hierarchies,
        "hierarchy_widths": hierarchy_widths,
        "audit": audit_family,
        "erase": erase,
    }
    session = _in_schema(plpy, schema) if schema is not None else PlpySession(plpy)
    return _json(verbs[verb](session, *args))


@_reported
def server_rewrite(plpy: Any, sql: str, dialect: str) -> str:
    """``sqlanon.interval_sql`` / ``sqlanon.rewrite``: the interval SQL of ``sql``."""
    return _rewrite(plpy, sql, dialect)


def _rewrite(plpy: Any, sql: str, dialect: str) -> str:
    from sqlanon.intervals import session_rewrite

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
    from sqlanon.errors import ConfigError

    if schema is None:
        raise ConfigError(
            "no current schema: the search_path names no existing schema; "
            "SET search_path to the schema the release should go to"
        )
    return PlpySession(plpy, schema)


def _names(values: Sequence[str] | None) -> list[str]:
    return [] if values is None else list(values)


def _json(value: Any) -> str:
    return json.dumps(value, default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
