"""DuckDB's SQL functions: ``register(con)`` and ``install(con)``."""

from __future__ import annotations

import atexit
import dataclasses
import functools
import itertools
import json
import re
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import duckdb
from duckdb.func import FunctionNullHandling
from duckdb.sqltypes import BIGINT, BOOLEAN, DOUBLE, VARCHAR

from sqlanon import intervals, sqltext
from sqlanon.duckdb import export as exporting
from sqlanon.duckdb.session import DuckDBSession
from sqlanon.errors import ConfigError, reported
from sqlanon.release import ke_release, lhd_release, retire
from sqlanon.state import catalog, deletions, hierarchies, migrations
from sqlanon.state.audit_reads import audit_family as audit_of


def _summary(fn: Any) -> Any:
    """Wrap a release function as a UDF body returning the summary as JSON text.

    ``functools.wraps`` keeps the signature: DuckDB counts the parameters from it."""

    @functools.wraps(fn)
    def call(*args: Any) -> str:
        return json.dumps(fn(*args), default=float)

    return call


def _reporting(name: str, fn: Any) -> Any:
    """Wrap a UDF body so that a bug inside it reaches SQL as an
    :class:`~sqlanon.errors.InternalError` that says to report it (its release's
    transaction has rolled back). ``functools.wraps`` keeps the signature."""

    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        with reported(name):
            return fn(*args)

    return call


_registrations = itertools.count(1)
_macros: dict[int, str] = {}
_UDF_CALL = re.compile(r"(?<![A-Za-z0-9_])(_sqlanon_[a-z_]+)\(")
# Per connection (by id) the connection, weakly, and the names of its UDFs.
_registered: dict[int, tuple[weakref.ref[duckdb.DuckDBPyConnection], list[str]]] = {}


def _forget(key: int) -> None:
    _macros.pop(key, None)
    _registered.pop(key, None)


@atexit.register
def _unregister_all() -> None:
    """At interpreter exit, drop sqlanon's UDFs from every connection still open.

    A UDF is a Python object the connection holds from C++, out of the garbage
    collector's sight: a script that ends without ``con.close()`` would leave them alive
    when the interpreter shuts down, and nanobind prints ~40 lines of "leaked
    instances". Removing them first lets the interpreter exit quietly."""
    for ref, names in list(_registered.values()):
        con = ref()
        if con is None:
            continue
        for name in names:
            try:
                con.remove_function(name)
            except duckdb.Error:
                break  # closed, or removed already
    _registered.clear()


_Owner = weakref.ref[duckdb.DuckDBPyConnection]


@contextmanager
def _session(owner: _Owner, verb: str | None = None) -> Iterator[DuckDBSession]:
    """A session on the connection the UDF was registered on; ``verb``: a writing
    verb, refused on a read-only connection."""
    found = owner()
    if found is None:  # cannot happen while the connection runs its UDF
        raise ConfigError("the connection sqlanon was installed on is gone")
    opened = DuckDBSession(found)
    try:
        if verb is not None:
            opened.refuse_read_only(verb)
        yield opened
    finally:
        opened.close()


# The UDF bodies. Each takes first the connection it was registered on (weakly, bound by
# register) and calls the verb's own module, as PostgreSQL's functions do (never
# sqlanon.api, which builds on this module).


def _release_ke(
    owner: _Owner,
    source: str,
    family: str,
    key: str,
    sensitive: str,
    quasi: list[str],
    k: int,
    e: float,
    policy: str,
    domain: str | None,
    dry_run: bool | None,
    dataset: str | None,
) -> dict[str, Any]:
    with _session(owner, "release_ke") as s:
        return ke_release.release_ke(
            s, source, family, key=key, sensitive=sensitive, quasi=quasi, k=k, e=e,
            policy=policy, domain_name=domain, dry_run=bool(dry_run), dataset=dataset,
        )  # fmt: skip


def _release_lhd(
    owner: _Owner,
    source: str,
    family: str,
    key: str,
    quasi: list[str],
    sensitive: list[str],
    l: int,  # noqa: E741
    algorithm: str,
    ms: float,
    domain: str | None,
    dry_run: bool | None,
    recoding: str,
    dataset: str | None,
    policy: str,
) -> dict[str, Any]:
    with _session(owner, "release_lhd") as s:
        return lhd_release.release_lhd(
            s, source, family, key=key, quasi=quasi, sensitive=sensitive, l=l,
            algorithm=algorithm, max_suppression=ms, domain_name=domain, dry_run=bool(dry_run),
            recoding=recoding,
            dataset=dataset,
            policy=policy,
        )  # fmt: skip


def _erase(owner: _Owner, source: str) -> dict[str, Any]:
    with _session(owner, "erase") as s:
        return deletions.erase(s, source)


def _retire(owner: _Owner, family: str, keep: int | None) -> dict[str, Any]:
    with _session(owner, "retire") as s:
        return retire.retire(s, family, keep)


def _load_hierarchies(owner: _Owner, dataset: str, folder: str | None) -> dict[str, Any]:
    with _session(owner, "load_hierarchies") as s:
        return hierarchies.load_hierarchies(s, dataset, folder)


def _hierarchy_widths(
    owner: _Owner, dataset: str, attribute: str, widths: list[float]
) -> dict[str, Any]:
    with _session(owner, "hierarchy_widths") as s:
        return hierarchies.hierarchy_widths(s, dataset, attribute, widths)


def _audit_family(owner: _Owner, family: str, records: bool) -> list[dict[str, Any]]:
    with _session(owner) as s:
        return audit_of(s, family, records=bool(records))


def _set_limit(owner: _Owner, name: str, value: int | None) -> dict[str, int]:
    with _session(owner, "set_limit") as s:
        return dataclasses.asdict(catalog.set_limit(s, name, value))


def _export(owner: _Owner, name: str, path: str, fmt: str) -> dict[str, Any]:
    with _session(owner) as s:
        found = owner()
        assert found is not None  # _session checked it
        return exporting.export(s, name, path, fmt, con=found)


def _interval_sql(owner: _Owner, sql: str) -> str:
    with _session(owner) as s:
        return intervals.session_rewrite(s, sql, "duckdb")


def _rewrite_sql(owner: _Owner, sql: str, dialect: str) -> str:
    with _session(owner) as s:
        return intervals.session_rewrite(s, sql, dialect)


@dataclass(frozen=True)
class _Udf:
    """One UDF: ``name`` as ``functions.sql`` calls it (register numbers it), its body
    and DuckDB types; ``summary``: the body's result goes out as JSON text."""

    name: str
    body: Callable[..., Any]
    params: list[Any]
    returns: Any
    summary: bool = True


def _udf_table() -> list[_Udf]:
    """sqlanon's UDFs, in the order they are registered."""
    texts = duckdb.list_type(VARCHAR)
    return [
        _Udf(
            "_sqlanon_release_ke",
            _release_ke,
            [
                VARCHAR,
                VARCHAR,
                VARCHAR,
                VARCHAR,
                texts,
                BIGINT,
                DOUBLE,
                VARCHAR,
                VARCHAR,
                BOOLEAN,
                VARCHAR,
            ],  # fmt: skip
            VARCHAR,
        ),
        _Udf(
            "_sqlanon_release_lhd",
            _release_lhd,
            [
                VARCHAR,
                VARCHAR,
                VARCHAR,
                texts,
                texts,
                BIGINT,
                VARCHAR,
                DOUBLE,
                VARCHAR,
                BOOLEAN,
                VARCHAR,
                VARCHAR,
                VARCHAR,
            ],  # fmt: skip
            VARCHAR,
        ),
        _Udf("_sqlanon_erase", _erase, [VARCHAR], VARCHAR),
        _Udf("_sqlanon_retire", _retire, [VARCHAR, BIGINT], VARCHAR),
        _Udf("_sqlanon_load_hierarchies", _load_hierarchies, [VARCHAR, VARCHAR], VARCHAR),
        _Udf(
            "_sqlanon_hierarchy_widths",
            _hierarchy_widths,
            [VARCHAR, VARCHAR, duckdb.list_type(DOUBLE)],
            VARCHAR,
        ),
        _Udf("_sqlanon_audit", _audit_family, [VARCHAR, BOOLEAN], VARCHAR),
        _Udf("_sqlanon_set_limit", _set_limit, [VARCHAR, BIGINT], VARCHAR),
        _Udf("_sqlanon_export", _export, [VARCHAR, VARCHAR, VARCHAR], VARCHAR),
        _Udf("_sqlanon_interval", _interval_sql, [VARCHAR], VARCHAR, summary=False),
        _Udf("_sqlanon_rewrite", _rewrite_sql, [VARCHAR, VARCHAR], VARCHAR, summary=False),
    ]


_UDFS = _udf_table()


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Register sqlanon's SQL functions on ``con``; call again on every new connection.

    DuckDB keeps Python UDFs in the database's catalog but their code in the connection
    that registered them: calling one after that connection closed crashes the process.
    So every connection registers its own, uniquely numbered UDFs, and its TEMP macros
    (``sqlanon_release_ke`` ...) call those; another connection never reaches them.
    The UDFs reach ``con`` through a weak reference: they are held by ``con`` itself, so
    a strong one would keep every connection alive for ever.
    """
    number = next(_registrations)
    key = id(con)
    owner = weakref.ref(con, lambda _dead: _forget(key))
    names = [f"{udf.name}_{number}" for udf in _UDFS]
    for udf, numbered in zip(_UDFS, names, strict=True):
        body = functools.partial(udf.body, owner)
        con.create_function(
            numbered,
            _reporting(udf.name.lstrip("_"), _summary(body) if udf.summary else body),
            udf.params,
            udf.returns,
            null_handling=FunctionNullHandling.SPECIAL,
            side_effects=True,
        )
    _registered[key] = (owner, [*_registered.get(key, (owner, []))[1], *names])
    _macros[id(con)] = _UDF_CALL.sub(rf"\1_{number}(", sqltext.load("duckdb", "functions"))
    define_macros(con, con)


def define_macros(target: duckdb.DuckDBPyConnection, con: duckdb.DuckDBPyConnection) -> None:
    """Define ``con``'s macros on ``target`` (``con`` itself, or one of its cursors:
    TEMP macros are per connection, and a cursor is a connection of its own)."""
    if id(con) not in _macros:
        raise ConfigError("call sqlanon.install(con) on the connection first")
    for statement in _macros[id(con)].split(";\n"):
        if statement.strip():
            target.execute(statement)


def install(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply pending catalog migrations and register the functions on ``con``."""
    if not isinstance(con, duckdb.DuckDBPyConnection):
        raise ConfigError("install() takes a duckdb connection (duckdb.connect(...))")

    session = DuckDBSession(con)
    try:
        if exporting.is_export(con):  # an analyst's export: the query functions only
            applied = []
        elif not session.read_only():
            applied = migrations.migrate(session)
        elif missing := migrations.pending(session):
            raise ConfigError(
                f"this read-only database lacks sqlanon's migrations {', '.join(missing)}; "
                "open it writable once (sqlanon install --db FILE) to apply them"
            )
        else:  # an analyst's read-only copy: the query functions only, nothing written
            applied = []
    finally:
        session.close()
    register(con)
    return applied
