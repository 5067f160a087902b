"""Retention (issue 27): ``retire(family, keep)`` stops serving every version of a family
but its newest ``keep``.

What goes: each retired version's view ``<family>_v<N>`` and, for (k,e), its bounds
view, and the rows no served version needs any more: history rows last shown before the
oldest served version, and bounds rows likewise. On Spark (append-only rows:
:mod:`sqlanon.state.spark_rows`) the views go (a version released before its family's
rows were shared: its table) and the bounds tables, while the rows stay in their files.
Every served version reads exactly as before (a served version reads current rows and
history rows shown at it, never one last shown earlier).

What stays: the private state (``sqlanon.members`` and ``cells`` over their spans, kept
values, links) and every catalog row of ``sqlanon.releases``. Retiring a version does
not un-publish it: analysts may have kept a copy, so the audit replays it and later
releases compose with it as before (docs/PRIVACY.md, "Retention"). A retirement is one
row of ``sqlanon.retirements``: the family's versions below ``served_from`` are retired,
and the highest group id of the rows it deleted, above which later releases give fresh
ids (no id a retired version showed comes back with other content).

One transaction under the family's lock (a release or retirement of the family waits);
retiring again is a no-op; nothing is written on error. On PostgreSQL only the family's
owner (a member of the role owning its rows) may retire; dropping a view waits for its
readers in short attempts, as a release's view switch does (:mod:`publish`).
"""

from __future__ import annotations

from typing import Any

from sqlanon import sqltext
from sqlanon.errors import ConfigError, PermissionDeniedError
from sqlanon.release.publish import run_briefly
from sqlanon.session import Session, WaitsForReaders
from sqlanon.state import catalog, release_rows, spark_rows
from sqlanon.state.source import BOUNDS_SCHEMAS, current_schema, render_sql


def retire(session: Session, family: str, keep: Any) -> dict[str, Any]:
    """Stop serving every version of ``family`` but its newest ``keep`` (an integer, at
    least 1). Returns ``{"family", "served", "retired", "history_rows_deleted",
    "bounds_rows_deleted"}``: the versions served now, those this call retired (none
    when they were retired already) and the rows it deleted."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ConfigError(
            f"keep must be a whole number of versions, at least 1 (the newest is always "
            f"served), got {keep!r}; e.g. retire(family, keep=4) serves the newest 4"
        )
    if not isinstance(family, str) or not family:
        raise ConfigError(f"retire takes a family name, got {family!r}")
    with session.transaction():
        catalog.require_family(session, family)
        session.lock_family(family)
        versions = catalog.releases(session, family)
        _check_owner(session, family)
        before = served_from(session, family)
        target = max(versions[-1].version - keep + 1, before)
        retiring = [r for r in versions if before <= r.version < target]
        deleted = (-1, 0, 0)
        if retiring:
            deleted = _delete_rows(session, versions[-1], target)
            _drop_versions(session, retiring)
            # last: on Spark (no transaction) the commit point; again after a failure
            # drops what is left (IF EXISTS) and records it
            session.execute(
                sqltext.load(session.dialect, "retire_record"), [family, target, deleted[0]]
            )
    return {
        "family": family,
        "served": [r.version for r in versions if r.version >= target],
        "retired": [r.version for r in retiring],
        "history_rows_deleted": deleted[1],
        "bounds_rows_deleted": deleted[2],
    }


def served_from(session: Session, family: str) -> int:
    """The oldest version of ``family`` still served (1: none retired)."""
    found = session.query(sqltext.load(session.dialect, "retire_served_from"), [family])
    return int(found[0][0]) if found and found[0][0] is not None else 1


def _check_owner(session: Session, family: str) -> None:
    """PostgreSQL: refuse a caller who is not (a member of) the role owning the family's
    rows, before anything is written (DROP VIEW would refuse too, less clearly)."""
    if session.dialect != "postgres":
        return
    rows = release_rows.qualified(session, release_rows.rows_name(family))
    found = session.query(sqltext.load(session.dialect, "table_owner"), [rows])
    owner = found[0][0] if found else None
    if owner is None:
        return  # versions made before rows were shared and never migrated: DROP decides
    ((member,),) = session.query(sqltext.load(session.dialect, "role_member"), [str(owner)])
    if not member:
        raise PermissionDeniedError(
            f"only the owner of family {family!r} (the role that made its releases, or a "
            "member of it) may retire its versions; ask them to run sqlanon.retire"
        )


def _delete_rows(session: Session, newest: catalog.Release, target: int) -> tuple[int, int, int]:
    """Delete the rows no version from ``target`` on reads; the highest group id among
    them (-1: none) and the rows deleted (history, bounds)."""
    family = newest.family
    ceiling, history_rows, bounds_rows = -1, 0, 0
    if release_rows.shared(session) and session.dialect not in release_rows.APPEND_ONLY:
        q = session.quote_ident
        history = release_rows.qualified(session, release_rows.history_name(family))
        group = q("group_id" if newest.model == "ke" else "class_id")
        ((history_rows, highest),) = session.query(
            render_sql(session, "retire_gone", history=history, group=group), [target]
        )
        ceiling = -1 if highest is None else int(highest)
        session.execute(render_sql(session, "retire_history", table=history), [target])
        if newest.model == "ke":
            bounds = release_rows.qualified(session, release_rows.bounds_name(family))
            ((bounds_rows, _),) = session.query(
                render_sql(session, "retire_gone", history=bounds, group=q("group_id")), [target]
            )
            session.execute(render_sql(session, "retire_history", table=bounds), [target])
    return ceiling, int(history_rows), int(bounds_rows)


def _drop_versions(session: Session, retiring: list[catalog.Release]) -> None:
    """Drop each retired version's view and bounds view (Spark: bounds table); on PostgreSQL in
    short attempts, so that an analyst reading one delays the retirement a little at
    most, or fails it with :class:`BlockedByReadersError` (nothing written)."""
    q = session.quote_ident
    appending = session.dialect in release_rows.APPEND_ONLY
    stored = spark_rows.shown_columns(session) if appending else {}
    for release in retiring:
        schema = release.schema or current_schema(session)
        view = f"{q(schema)}.{q(release.table_name)}"
        is_view = (release.family, release.version) in stored if appending else True
        drops = [f"DROP {'VIEW' if is_view else 'TABLE'} IF EXISTS {view}"]
        kind = "TABLE" if appending else "VIEW"  # Spark keeps a bounds table per version
        if release.model == "ke":
            where = release.parameters.get("bounds_schema")
            if not isinstance(where, str):
                where = BOUNDS_SCHEMAS.get(session.dialect, "sqlanon")
            drops.append(f"DROP {kind} IF EXISTS {q(where)}.{q(release.table_name + '_bounds')}")
        if isinstance(session, WaitsForReaders):
            doing = f"retiring version {release.version} of family {release.family!r}"
            run_briefly(session, drops, view, doing + " from dropping its view")
        else:
            for statement in drops:
                session.execute(statement)
