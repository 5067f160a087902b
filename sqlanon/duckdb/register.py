"""DuckDB's SQL functions: ``register(con)`` and ``install(con)``."""

from __future__ import annotations

import atexit
import functools
import itertools
import json
import re
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb
from duckdb.func import FunctionNullHandling
from duckdb.sqltypes import BIGINT, BOOLEAN, DOUBLE, VARCHAR

from sqlanon import intervals, sqltext
from sqlanon.duckdb.session import DuckDBSession
from sqlanon.errors import ConfigError
from sqlanon.release import ke, lhd
from sqlanon.state import catalog, live, migrations
from sqlanon.state.audit_reads import audit_family as audit_of


def _summary(fn: Any) -> Any:
    """Wrap a release function as a UDF body returning the summary as JSON text.

    ``functools.wraps`` keeps the signature: DuckDB counts the parameters from it."""

    @functools.wraps(fn)
    def call(*args: Any) -> str:
        return json.dumps(fn(*args), default=float)

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


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Register sqlanon's SQL functions on ``con``; call again on every new connection.

    DuckDB keeps Python UDFs in the database's catalog but their code in the connection
    that registered them: calling one after that connection closed crashes the process.
    So every connection registers its own, uniquely numbered UDFs, and its TEMP macros
    (``sqlanon_release_ke`` ...) call those; another connection never reaches them.
    The UDFs reach ``con`` through a weak reference: they are held by ``con`` itself, so
    a strong one would keep every connection alive for ever.
    """
    # The verbs' own modules, as PostgreSQL's functions call them (never sqlanon.api,
    # which builds on this module).
    import dataclasses

    number = next(_registrations)
    key = id(con)
    owner = weakref.ref(con, lambda _dead: _forget(key))

    @contextmanager
    def session(verb: str | None = None) -> Iterator[DuckDBSession]:
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

    def release_ke(
        source: str,
        family: str,
        key: str,
        sensitive: str,
        quasi: list[str],
        k: int,
        e: float,
        policy: str,
        domain: str | None,
    ) -> dict[str, Any]:
        with session("release_ke") as s:
            return ke.release_ke(
                s, source, family, key=key, sensitive=sensitive, quasi=quasi, k=k, e=e,
                policy=policy, domain_name=domain,
            )  # fmt: skip

    def release_lhd(
        source: str,
        family: str,
        key: str,
        quasi: list[str],
        sensitive: list[str],
        l: int,  # noqa: E741
        algorithm: str,
        ms: float,
        domain: str | None,
    ) -> dict[str, Any]:
        with session("release_lhd") as s:
            return lhd.release_lhd(
                s, source, family, key=key, quasi=quasi, sensitive=sensitive, l=l,
                algorithm=algorithm, max_suppression=ms, domain_name=domain,
            )  # fmt: skip

    def erase(source: str) -> dict[str, Any]:
        with session("erase") as s:
            return live.erase(s, source)

    def load_hierarchies(dataset: str, folder: str | None) -> dict[str, Any]:
        with session("load_hierarchies") as s:
            return lhd.load_hierarchies(s, dataset, folder)

    def hierarchy_widths(dataset: str, attribute: str, widths: list[float]) -> dict[str, Any]:
        with session("hierarchy_widths") as s:
            return lhd.hierarchy_widths(s, dataset, attribute, widths)

    def audit_family(family: str, records: bool) -> list[dict[str, Any]]:
        with session() as s:
            return audit_of(s, family, records=bool(records))

    def set_limit(name: str, value: int | None) -> dict[str, int]:
        with session("set_limit") as s:
            return dataclasses.asdict(catalog.set_limit(s, name, value))

    def interval_sql(sql: str) -> str:
        with session() as s:
            return intervals.session_rewrite(s, sql, "duckdb")

    def rewrite_sql(sql: str, dialect: str) -> str:
        with session() as s:
            return intervals.session_rewrite(s, sql, dialect)

    udfs: list[tuple[str, Any, list[Any], Any]] = [
        (
            "_sqlanon_release_ke",
            _summary(release_ke),
            [
                VARCHAR,
                VARCHAR,
                VARCHAR,
                VARCHAR,
                duckdb.list_type(VARCHAR),
                BIGINT,
                DOUBLE,
                VARCHAR,
                VARCHAR,
            ],
            VARCHAR,
        ),
        (
            "_sqlanon_release_lhd",
            _summary(release_lhd),
            [
                VARCHAR,
                VARCHAR,
                VARCHAR,
                duckdb.list_type(VARCHAR),
                duckdb.list_type(VARCHAR),
                BIGINT,
                VARCHAR,
                DOUBLE,
                VARCHAR,
            ],
            VARCHAR,
        ),
        ("_sqlanon_erase", _summary(erase), [VARCHAR], VARCHAR),
        ("_sqlanon_load_hierarchies", _summary(load_hierarchies), [VARCHAR, VARCHAR], VARCHAR),
        (
            "_sqlanon_hierarchy_widths",
            _summary(hierarchy_widths),
            [VARCHAR, VARCHAR, duckdb.list_type(DOUBLE)],
            VARCHAR,
        ),
        ("_sqlanon_audit", _summary(audit_family), [VARCHAR, BOOLEAN], VARCHAR),
        ("_sqlanon_set_limit", _summary(set_limit), [VARCHAR, BIGINT], VARCHAR),
        ("_sqlanon_interval", interval_sql, [VARCHAR], VARCHAR),
        ("_sqlanon_rewrite", rewrite_sql, [VARCHAR, VARCHAR], VARCHAR),
    ]
    names = [f"{name}_{number}" for name, *_rest in udfs]
    for (_name, fn, params, returns), numbered in zip(udfs, names, strict=True):
        con.create_function(
            numbered,
            fn,
            params,
            returns,
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
        if not session.read_only():
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
