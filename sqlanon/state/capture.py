"""Change capture on PostgreSQL (issue 27, opt-in): triggers record the keys that leave
a source, so that a later release finds its deleted records among them.

Without capture a release finds the records of the domain's latest release gone from
the source with an anti-join of the members state against the whole source
(``sqlanon/sql/live_gone.sql``). :func:`capture_changes` puts three statement-level
AFTER triggers on the table (DELETE and UPDATE with their transition tables, TRUNCATE);
their function (``sqlanon.capture_trigger()``, ``postgres/sql/functions.sql``) adds to
``sqlanon.captured`` each key a statement removed (an UPDATE: the old keys no new row
has), with the writer's transaction id, and a row without key for a TRUNCATE. Each
release records, in ``sqlanon.capture_marks``, the capture in force and a snapshot
taken before it reads the source (:func:`mark`, :func:`record`). The next release of
the domain then reads the deleted records from the keys captured since, that is with a
transaction id not visible in that snapshot, each checked against the source
(:func:`gone`): the same records as the anti-join, as long as every key that left the
table since was captured. When that is not known, :func:`gone` returns None and the
release takes the full pass, silently: capture off, or turned on after the domain's
latest release, or stopped and started again since (another ``capture_id``); a
TRUNCATE or the key column dropped since (a row without key); the key column's type
changed, the table rewritten (``ALTER TABLE ... TYPE``, ``VACUUM FULL``, ``CLUSTER``), or
a migration of sqlanon's catalog; a table that gained an inheritance child or partition
(their writes would not fire the table's statement triggers); a key of a type not built
in, an array or json (its captured text, as JSON writes it, is read back through the
type). After a
release, the entries every domain of the source has read past go (:func:`forget`).

What capture cannot see: writes with the triggers disabled (``ALTER TABLE ... DISABLE
TRIGGER``, ``session_replication_role = replica``, logical replication's apply). Turn
capture off and on again (:func:`stop_capture`, :func:`capture_changes`) after any of
them: the next release then takes the full pass.

Only PostgreSQL has it: DuckDB and Spark read the whole source in one pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import ConfigError, PermissionDeniedError
from sqlanon.session import Session
from sqlanon.state import catalog
from sqlanon.state.source import Source, resolve_source

#: The triggers :func:`capture_changes` creates: name -> when it fires.
TRIGGERS: dict[str, str] = {
    "sqlanon_capture_delete": "AFTER DELETE ON {table} REFERENCING OLD TABLE AS sqlanon_old",
    "sqlanon_capture_update": "AFTER UPDATE ON {table} "
    "REFERENCING OLD TABLE AS sqlanon_old NEW TABLE AS sqlanon_new",
    "sqlanon_capture_truncate": "AFTER TRUNCATE ON {table}",
}


@dataclass(frozen=True)
class Mark:
    """The capture in force on a source when a release began, and the snapshot taken
    then (``pg_snapshot`` as text): a row of ``sqlanon.capture_marks``."""

    relid: int
    capture_id: str
    snapshot: str
    key_type: int
    key_typmod: int
    filenode: int
    migrations: int
    type_name: str | None  # the key's type (in pg_catalog), when a builtin one


def _require_postgres(session: Session) -> None:
    if session.dialect != "postgres":
        engine = {"duckdb": "DuckDB", "spark": "Spark"}.get(session.dialect, session.dialect)
        raise ConfigError(
            f"change capture needs PostgreSQL triggers; {engine} reads the whole source in one pass"
        )


def capture_changes(session: Session, source: str, key: str | None = None) -> dict[str, Any]:
    """Turn change capture on for ``source`` (a plain table the caller owns), keyed by
    ``key`` (default: the key its releases use). Idempotent. Returns ``{"source",
    "key", "capturing": True, "started": False when it was on already}``."""
    _require_postgres(session)
    with session.transaction():
        src = resolve_source(session, source)
        relid = _captured_table(session, src, "turn change capture on for")
        session.lock_family(f"capture {relid}")  # two at once: one waits, then finds it on
        key = src.column(_key_of(session, src, key), "key")
        found = session.query(sqltext.load(session.dialect, "capture_current"), [relid])
        attnum = _attnum(session, relid, key)
        if found and found[0][0] == attnum and found[0][1] == len(TRIGGERS):
            return {"source": src.label, "key": key, "capturing": True, "started": False}
        _drop(session, src, relid)
        for name, when in TRIGGERS.items():
            session.execute(
                f"CREATE TRIGGER {session.quote_ident(name)} "
                f"{when.format(table=src.qualified(session))} "
                "FOR EACH STATEMENT EXECUTE FUNCTION sqlanon.capture_trigger()"
            )
        session.execute(
            "INSERT INTO sqlanon.capture_sources (relid, source, key_attnum) "
            "VALUES (CAST($1 AS pg_catalog.oid), $2, $3)",
            [relid, src.label, attnum],
        )
    return {"source": src.label, "key": key, "capturing": True, "started": True}


def stop_capture(session: Session, source: str) -> dict[str, Any]:
    """Turn change capture off for ``source``: drop its triggers and what they captured.
    Later releases take the full pass. Returns ``{"source", "capturing": False,
    "stopped": False when it was off already}``."""
    _require_postgres(session)
    with session.transaction():
        src = resolve_source(session, source)
        relid = _owned_table(session, src, "turn change capture off for")
        session.lock_family(f"capture {relid}")
        was = bool(session.query(sqltext.load(session.dialect, "capture_current"), [relid]))
        _drop(session, src, relid)
    return {"source": src.label, "capturing": False, "stopped": was}


def _drop(session: Session, src: Source, relid: int) -> None:
    table = src.qualified(session)
    for name in TRIGGERS:
        session.execute(f"DROP TRIGGER IF EXISTS {session.quote_ident(name)} ON {table}")
    for statement in (
        "DELETE FROM sqlanon.capture_sources WHERE relid = CAST($1 AS pg_catalog.oid)",
        "DELETE FROM sqlanon.captured WHERE relid = CAST($1 AS pg_catalog.oid)",
    ):
        session.execute(statement, [relid])


def _owned_table(session: Session, src: Source, doing: str) -> int:
    """The oid of ``src``; refused unless the caller is (a member of) its owner."""
    found = session.query(sqltext.load(session.dialect, "capture_table"), [src.qualified(session)])
    if not found:
        raise ConfigError(f"{src.label} is not a table: change capture needs a table")
    relid, owner, member = found[0]
    if not member:
        raise PermissionDeniedError(
            f"only the owner of {src.label} (role {owner}, or a member of it) may {doing} "
            "it; ask them to run it"
        )
    return int(relid)


def _captured_table(session: Session, src: Source, doing: str) -> int:
    """:func:`_owned_table`, refusing what statement triggers would not see whole."""
    relid = _owned_table(session, src, doing)
    ((kind, related),) = session.query(sqltext.load(session.dialect, "capture_kind"), [relid])
    if kind != "r" or related:
        raise ConfigError(
            f"{src.label} is a partitioned table, a partition or in an inheritance tree: "
            "writes to one table of it would not fire another's statement triggers, so "
            "change capture takes only plain tables; releases read it whole"
        )
    return relid


def _key_of(session: Session, src: Source, key: str | None) -> str:
    if key is not None:
        return key
    keys = sorted(
        {str(r.parameters.get("key")) for r in catalog.releases(session) if r.source == src.label}
    )
    if len(keys) != 1:
        raise ConfigError(
            f"name the key column of {src.label} (capture_changes(source, key)): "
            + ("it was never released" if not keys else f"its releases use {', '.join(keys)}")
        )
    return keys[0]


def _attnum(session: Session, relid: int, column: str) -> int:
    return int(
        session.query(
            "SELECT attnum FROM pg_catalog.pg_attribute "
            "WHERE attrelid = CAST($1 AS pg_catalog.oid) AND attname = $2 AND NOT attisdropped",
            [relid, column],
        )[0][0]
    )


def mark(session: Session, src: Source, key: str) -> Mark | None:
    """The capture in force on ``src`` keyed by ``key`` and a snapshot taken now (before
    the release reads the source), or None: no capture (or not PostgreSQL)."""
    if session.dialect != "postgres":
        return None
    found = session.query_dicts(
        sqltext.load(session.dialect, "capture_state"), [src.qualified(session), key]
    )
    if not found:
        return None
    row = found[0]
    return Mark(
        relid=int(row["relid"]),
        capture_id=str(row["capture_id"]),
        snapshot=str(row["snapshot"]),
        key_type=int(row["key_type"]),
        key_typmod=int(row["key_typmod"]),
        filenode=int(row["filenode"]),
        migrations=int(row["migrations"]),
        type_name=row["type_name"],
    )


def record(session: Session, release: catalog.Release, taken: Mark | None, src: Source) -> None:
    """Record ``taken`` (:func:`mark` before the release read its source) as ``release``'s
    capture mark, then :func:`forget` what no domain of the source needs any more."""
    if taken is None:
        return
    session.execute(
        sqltext.load(session.dialect, "capture_record"),
        [
            release.family,
            release.version,
            taken.relid,
            taken.capture_id,
            taken.snapshot,
            taken.key_type,
            taken.key_typmod,
            taken.filenode,
            taken.migrations,
        ],
    )
    forget(session, src, taken)


def forget(session: Session, src: Source, taken: Mark) -> None:
    """Delete the captured entries of ``src`` that the latest release of every domain
    of the source has read past (visible in its mark's snapshot); a domain whose latest
    release has no mark of this capture takes the full pass next anyway."""
    latest: dict[str, catalog.Release] = {}
    for r in catalog.releases(session):
        if r.domain and (r.domain not in latest or r.seq > latest[r.domain].seq):
            latest[r.domain] = r
    mine = [r for r in latest.values() if r.source == src.label]
    if not mine:
        session.execute(
            "DELETE FROM sqlanon.captured WHERE relid = CAST($1 AS pg_catalog.oid)", [taken.relid]
        )
        return
    session.execute(
        sqltext.load(session.dialect, "capture_forget"),
        [
            taken.relid,
            [r.family for r in mine],
            [r.version for r in mine],
            taken.capture_id,
        ],
    )


def gone(
    session: Session, since: catalog.Release, src: Source, key: str
) -> list[tuple[str, bool]] | None:
    """The records of ``since`` (the domain's latest release) gone from ``src`` now,
    each with whether a release published it, read from the keys captured since it;
    None when capture does not cover every change since (the caller takes the full
    pass), or the key's type is not a builtin one (its captured text could not be read
    back)."""
    now = mark(session, src, key)
    if now is None or now.type_name is None:
        return None
    found = session.query(
        sqltext.load(session.dialect, "capture_since"), [since.family, since.version]
    )
    if not found:
        return None
    relid, capture_id, snapshot, key_type, key_typmod, filenode, migrations, broken = found[0]
    then = (int(relid), str(capture_id), int(key_type), int(key_typmod), int(filenode))
    if (
        broken
        or int(migrations) != now.migrations
        or then
        != (
            now.relid,
            now.capture_id,
            now.key_type,
            now.key_typmod,
            now.filenode,
        )
    ):
        return None
    q = session.quote_ident
    keys = session.query(
        sqltext.render(
            sqltext.load(session.dialect, "capture_gone_keys"),
            source=src.qualified(session),
            key=q(key),
            key_type=f"{q('pg_catalog')}.{q(now.type_name)}",
        ),
        [now.relid, str(snapshot)],
    )
    if not keys:
        return []
    # The few gone keys against the members: one pass over the family's spans, with a
    # hash of the keys. Statistics of the spans a release just wrote may be missing (a
    # few rows estimated): a nested loop would then rescan the keys once per member, so
    # it is off for this statement (and JIT, which its cost estimate would wake).
    session.load_temp(
        "_sqlanon_capture_gone",
        {"record_key": np.array([str(k) for (k,) in keys], dtype=object)},
        {"record_key": "VARCHAR"},
    )
    settings = session.query(
        "SELECT name, setting FROM pg_catalog.pg_settings WHERE name IN ('enable_nestloop', 'jit')"
    )
    for name, _ in settings:
        session.execute("SELECT pg_catalog.set_config($1, 'off', true)", [name])
    rows = session.query(
        sqltext.load(session.dialect, "capture_gone"), [since.family, since.version]
    )
    for name, setting in settings:
        session.execute("SELECT pg_catalog.set_config($1, $2, true)", [name, setting])
    session.execute("DROP TABLE _sqlanon_capture_gone")
    return [(str(k), bool(published)) for k, published in rows]
