"""PostgreSQL backend: the :class:`~sqlanon.session.Session` twice over.

- :class:`PsycopgSession` runs in the client, over a psycopg 3 connection.
- :class:`PlpySession` runs inside the server, in a PL/Python (``plpython3u``) function,
  over the ``plpy`` module. The server has no psycopg, so this module imports it only
  inside :class:`PsycopgSession`.

Both speak PostgreSQL's own ``$1, $2, ...`` placeholders: psycopg's ``RawCursor`` sends
them to the server unchanged (no ``%s`` rewriting, no ``%`` escaping), and ``plpy.prepare``
takes them natively. The functions in ``sqlanon/postgres/sql/functions.sql`` are created by
:mod:`sqlanon.postgres.install`.

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

import json
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from sqlanon.errors import ConcurrentReleaseError, SerializationError, SqlanonError
from sqlanon.sqltext import pg_qualified
from sqlanon.version import __version__

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
                raise serialization_error(level, lock_subject(family))
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

    return json.dumps(
        {
            "python_dir": str(Path(__file__).resolve().parents[2]),  # holds sqlanon/
            "sqlanon": __version__,
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


def serialization_error(level: str, what: str) -> SqlanonError:
    return SerializationError(
        f"{what} is running or committed after this {level.upper()} transaction took its "
        "snapshot, which cannot show what it wrote; nothing was written: retry the "
        "transaction, or run releases in READ COMMITTED (the default), where releases of "
        "one family or domain wait for each other"
    )


def lock_subject(family: str) -> str:
    """``lock_family``'s key as words: ``domain x`` or a family name."""
    if family.startswith("domain "):
        return f"another release of domain {family[len('domain ') :]!r}"
    return f"another release of family {family!r}"
