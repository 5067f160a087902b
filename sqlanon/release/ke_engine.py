"""(k,e) releases that never pull rows into Python: plan on counts, write in the engine.

The stages of :mod:`~sqlanon.release.pipeline` on the engine path (issue 13):

1. **Read** (SQL): the source joined with the state of the family's and the domain's
   last releases, kept in the temporary table ``_sqlanon_read``; Python reads only
   counts: per (cell of the domain's latest release, value), the number of records
   and a few totals, in one pass (``sqlanon/sql/ke_engine_counts_stats.sql``; counted
   again, ``ke_engine_counts.sql``, only when changed values, chains or ghosts change the
   entries).
2. **Plan** (pure): :func:`sqlanon.models.ke_incremental.plan_in_cells` on those entries, each
   weighted by its records. An old cell is published whole or left out whole and the
   new records of one value share their fate, so the plan is a small table: per entry
   its group and its cell after this release (``_sqlanon_plan``).
3. **Write** (SQL): the plan joined to the rows writes the release table in one sort,
   with the within-group shuffle done by a keyed pseudo-random order (:func:`shuffle_key`),
   the members' state, the kept values; the bounds table comes from the published runs
   (``_sqlanon_runs``: the plan's entries, or counted in SQL for values a double cannot
   hold exactly), never from a scan of the release.

The planner sees the same multisets as the row path (:mod:`~sqlanon.release.ke_rows`)
and makes a plan with the same objective (``tests/test_ke_counts.py``); the records a
plan puts in a group may differ among records of equal value, which nothing published
can tell apart. Releases this path does not cover go the row path: the seeds' ``paper``
policy, and a constrained column released as a quasi-identifier in a domain with chains
(:func:`release_ke` returns None before it writes anything).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.release import engine_path
from sqlanon.release.engine_path import shuffle_key
from sqlanon.release.ke_job import KeJob, plan_ke
from sqlanon.release.pipeline import Planned, Read, Steps, Written, plan_in
from sqlanon.session import Session
from sqlanon.state import bounds, domains, live
from sqlanon.state.source import relation, render_sql

#: What the read's first count (``sqlanon/sql/ke_engine_counts_stats.sql``) counts
#: besides the records.
_STATS = ("not_finite", "value_changed", "inserted", "quasi_changed", "celled")

#: Temporary tables of one engine release, dropped when it ends either way.
_TEMP = (
    "_sqlanon_read",
    "_sqlanon_plan",
    "_sqlanon_ghost_ids",
    "_sqlanon_ghost_read",
    "_sqlanon_ghost_members",
    "_sqlanon_ghost_values",
    "_sqlanon_runs",
)


@dataclass(frozen=True)
class CountsRead(Read):
    """The entries of the engine path: one per ``entry`` columns of ``_sqlanon_read``
    (the domain's cell, the value; with chains also each constrained attribute and the
    incarnation), as ``counts`` holds them. ``alias``: each source column's name in
    ``_sqlanon_read``; ``linked``: the incarnations of the domain's chains."""

    counts: dict[str, np.ndarray]
    entry: list[str]
    alias: dict[str, str]
    linked: set[str]


def release_ke(session: Session, job: KeJob) -> Written | None:
    """Write ``job`` on the engine path, inside the caller's transaction, after the
    caller's checks (:func:`sqlanon.release.ke_release.release_ke`), which then records
    the catalog row; None, having written nothing, when this release needs the row
    path."""
    if job.policy == "paper":
        return None
    return engine_path.run_on_engine(session, job, STEPS, temp=_TEMP, tune=True)


def _carried(session: Session, columns: Sequence[str]) -> tuple[str, str, dict[str, str]]:
    """Source columns the write stage needs, as ``{columns}`` of the read (aliased
    c0, c1, ... so no source name can clash with the read's own), the ``{carried}``
    list of the engine read, and each column's alias."""
    q = session.quote_ident
    alias = {c: f"c{i}" for i, c in enumerate(dict.fromkeys(columns))}
    read = ", ".join(f"{q('src')}.{q(c)} AS {q(a)}" for c, a in alias.items())
    carried = ", ".join(f"{q('r')}.{q(a)}" for a in alias.values())
    return read, carried, alias


def _read(session: Session, job: KeJob) -> CountsRead | None:
    """The source into ``_sqlanon_read``, the changes applied, the ghosts beside it
    (``_sqlanon_ghost_read``), and the entries counted; None when a quasi-identifier is
    an attribute the domain's chains constrain (the ghost rows would need it both NULL
    and kept: the row path handles it)."""
    q, scope, sensitive = session.quote_ident, job.scope, job.sensitive
    columns, carried, alias = _carried(session, [*job.quasi, sensitive, *scope.attributes])
    read = render_sql(
        session,
        "ke_read_source",
        key=q(job.key),
        sensitive=q(sensitive),
        hashed=", ".join(f"{q('src')}.{q(c)}" for c in [*job.quasi, sensitive]),
        **scope.hashes(session, job.key),
        columns=columns,
        source=job.src.qualified(session),
    )
    session.execute(
        render_sql(session, "ke_engine_read", carried=carried) + read + "\n) AS r",
        scope.read_parameters(job.family, job.last),
    )
    first = session.query_arrays(sqltext.load(session.dialect, "ke_engine_counts_stats"))
    stats = {name: int(first[name].sum()) for name in _STATS}
    stats["n"] = int(first["records"].sum())
    job.note("rows read", int(stats["n"]))
    if stats["not_finite"]:
        shown = session.query(
            "SELECT record_value FROM _sqlanon_read WHERE NOT (s - s = 0) "
            "ORDER BY record_value LIMIT 10"
        )
        raise ConfigError(
            f"sensitive column {sensitive!r} has {int(stats['not_finite'])} NaN or infinite "
            f"values (keys {', '.join(str(r[0]) for r in shown)}); fix or filter them"
        )
    others = [a for a in scope.attributes if a != sensitive]
    if (stats["value_changed"] or scope.linked(session)) and set(others) & set(job.quasi):
        return None
    return _entries(session, job, stats, alias, first)


def _entries(
    session: Session,
    job: KeJob,
    stats: dict[str, Any],
    alias: dict[str, str],
    first: dict[str, np.ndarray],
) -> CountsRead:
    """The changes applied and the entries counted, ghosts among them (``first``, the
    read's first count, when nothing changed them)."""
    scope, sensitive, q = job.scope, job.sensitive, session.quote_ident
    others = [a for a in scope.attributes if a != sensitive]
    changed_keys = []
    if stats["value_changed"]:
        changed_keys = [
            str(r[0])
            for r in session.query(sqltext.load(session.dialect, "ke_engine_changed_keys"))
        ]
    changes = engine_path.counted_changes(session, job, stats, changed_keys)
    if changed_keys:  # the new incarnation of a changed record starts afresh
        session.execute(sqltext.load(session.dialect, "ke_engine_changed_afresh"))
    linked = scope.linked(session)
    # With chains, the chain rule reads every attribute's values and each incarnation:
    # records are interchangeable only with the same values of every constrained
    # attribute, and an incarnation is an entry of its own (chain_key: its id).
    entry = ["domain_cell", "s", *([alias[a] for a in others] + ["chain_key"] if linked else [])]
    if linked:
        session.execute("ALTER TABLE _sqlanon_read ADD COLUMN chain_key VARCHAR DEFAULT ''")
        session.execute(sqltext.load(session.dialect, "ke_engine_chain_keys"), [scope.name])
    ghosts = live.read_ghosts(
        session, scope.name, scope.last, job.family, job.last, job.src, scope.attributes
    )
    if ghosts.count:
        _read_ghosts(
            session, ghosts, {a: alias[a] for a in [sensitive, *others]}, sensitive, linked
        )
    if changed_keys or linked or ghosts.count:
        counts = session.query_arrays(
            render_sql(
                session,
                "ke_engine_counts_ghosts" if ghosts.count else "ke_engine_counts",
                entry=", ".join(q(c) for c in entry),
            )
        )
    else:
        counts = {c: first[c] for c in ["domain_cell", "s", "records"]}
    values = counts["s"].astype(np.float64)
    return CountsRead(
        prior=domains.read_cells(session, scope.last, counts["domain_cell"].astype(np.int64)),
        values={sensitive: values, **{a: counts[alias[a]] for a in others if linked}},
        weight=counts["records"].astype(np.float64),
        chains=live.chains(session, scope.name, counts["chain_key"]) if linked else [],
        changes=changes,
        ghosts=ghosts,
        counts=counts,
        entry=entry,
        alias=alias,
        linked=linked,
    )


def _read_ghosts(
    session: Session, ghosts: live.Ghosts, alias: dict[str, str], sensitive: str, linked: set[str]
) -> None:
    """The domain's ghosts as rows beside ``_sqlanon_read``: ``_sqlanon_ghost_read``
    (id, cell, published before, chain key, value as the planner compares it, and each
    constrained attribute in its column's own type under its alias in the read), from
    the kept values :func:`live.read_ghosts` left in ``_sqlanon_ghost_values``."""
    ids = ghosts.ids
    session.load_temp(
        "_sqlanon_ghost_ids",
        {
            "record_key": ids,
            "domain_cell": ghosts.cell.astype(np.int64),
            "published_before": ghosts.published_before.astype(bool),
            "chain_key": np.array([i if str(i) in linked else "" for i in ids], dtype=object),
        },
        {
            "record_key": "VARCHAR",
            "domain_cell": "BIGINT",
            "published_before": "BOOLEAN",
            "chain_key": "VARCHAR",
        },
    )
    q = session.quote_ident
    session.execute(
        render_sql(
            session,
            "ke_engine_ghost_read",
            sensitive=q(sensitive),
            attributes=", ".join(f"{q('v')}.{q(a)} AS {q(x)}" for a, x in alias.items()),
        )
    )
    session.execute("DROP TABLE _sqlanon_ghost_ids")


def _matches(session: Session, read: CountsRead) -> dict[str, str]:
    """The join of the plan to the read's rows (``plan_match``) and to the ghosts'
    (``plan_match_g``): equal entry columns (NULL-safe with chains)."""
    q = session.quote_ident
    return {
        f"plan_match{suffix}": sqltext.match(
            q("p"), q(side), [q(c) for c in read.entry], null_safe=bool(read.linked)
        )
        for suffix, side in (("", "r"), ("_g", "g"))
    }


def _load_plan(session: Session, job: KeJob, read: CountsRead, planned: Planned) -> Planned:
    """The plan as ``_sqlanon_plan`` (per entry: its group, its cell after), and the
    ghosts' places in it (``_sqlanon_ghost_members``)."""
    types = {"domain_cell": "BIGINT", "s": "DOUBLE PRECISION", "chain_key": "VARCHAR"}
    types.update(
        {read.alias[a]: job.src.columns[a] for a in job.scope.attributes if a != job.sensitive}
    )
    session.load_temp(
        "_sqlanon_plan",
        {
            **{c: read.counts[c] for c in read.entry},
            "group_id": planned.group,
            "cell_id": planned.cells.cell.astype(np.int64),
        },
        {**{c: types[c] for c in read.entry}, "group_id": "INTEGER", "cell_id": "BIGINT"},
    )
    if not read.ghosts.count:
        return planned
    session.execute(render_sql(session, "ke_engine_ghost_members", **_matches(session, read)))
    shown = session.query("SELECT count(*) FROM _sqlanon_ghost_members WHERE group_id >= 0")
    return replace(planned, ghost_rows=int(shown[0][0]))


def _newly_published(session: Session, job: KeJob, read: CountsRead, planned: Planned) -> bool:
    newly = engine_path.newly_published(session, _matches(session, read))
    if read.ghosts.count:
        newly += session.query(
            "SELECT count(*) FROM _sqlanon_ghost_read AS g JOIN _sqlanon_ghost_members AS m "
            "ON m.record_key = g.record_key WHERE m.group_id >= 0 AND NOT g.published_before"
        )[0][0]
    return bool(newly)


def _published(job: KeJob, planned: Planned) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The published entries' values, records and groups."""
    chosen, values = planned.chosen, planned.values[job.sensitive]
    assert planned.weight is not None
    return values[chosen], planned.weight[chosen], planned.group[chosen]


def _load_runs(session: Session, job: KeJob, read: CountsRead, planned: Planned) -> None:
    """``_sqlanon_runs``: the published values per group and value in the column's own
    type, from the plan's entries when they hold them exactly (integers), else counted
    in SQL; the release table and the bounds table both read them."""
    values, counts, group = _published(job, planned)
    if bounds.runs_exact(job.src, job.sensitive, values, counts):
        bounds.load_runs(session, job.src.columns[job.sensitive], values, counts, group)
        return
    session.execute(
        render_sql(
            session,
            "ke_engine_runs_ghosts" if read.ghosts.count else "ke_engine_runs",
            sensitive_a=session.quote_ident(read.alias[job.sensitive]),
            **_matches(session, read),
        )
    )


def _write_table(session: Session, job: KeJob, read: CountsRead, planned: Planned) -> int:
    """The release table: within each group, the record of rank i by the keyed order
    (:func:`shuffle_key`) gets the group's i-th smallest value (``_sqlanon_runs``)."""
    q, alias, quasi = session.quote_ident, read.alias, job.quasi
    _load_runs(session, job, read, planned)
    session.execute(
        render_sql(
            session,
            "ke_engine_release_ghosts" if read.ghosts.count else "ke_engine_release",
            release=relation(session, job.table),
            quasi_a=", ".join(f"{q(alias[c])}" for c in quasi),
            quasi_r=", ".join(f"{q('r')}.{q(alias[c])}" for c in quasi),
            quasi_n=", ".join(f"{q('n')}.{q(alias[c])}" for c in quasi),
            quasi_out=", ".join(f"{q('who')}.{q(alias[c])} AS {q(c)}" for c in quasi),
            sensitive_a=q(alias[job.sensitive]),
            sensitive=q(job.sensitive),
            key_r=", ".join(f"{q('r')}.{q(c)}" for c in read.entry),
            key_g=", ".join(f"{q('g')}.{q(c)}" for c in read.entry),
            **_matches(session, read),
        ),
        [shuffle_key()],
    )
    return planned.counts()["rows_published"]


def _write_state(session: Session, job: KeJob, read: CountsRead, planned: Planned) -> None:
    """The bounds table from the published runs (``_sqlanon_runs``), then the members,
    kept values and cells."""
    values, counts, _ = _published(job, planned)
    bounds.write_bounds_runs(
        session, job.table, exact=bounds.runs_exact(job.src, job.sensitive, values, counts)
    )
    engine_path.write_state(
        session, job, _matches(session, read), read.alias, planned.cells, read.ghosts.count > 0
    )


def _overlap(session: Session, job: KeJob, read: CountsRead) -> None:
    """``_sqlanon_overlap``: per planned group and group of the family's last version,
    the records they share (ghosts left out: a few)."""
    plan_match = _matches(session, read)["plan_match"]
    session.execute(render_sql(session, "rows_overlap", plan_match=plan_match))


STEPS: Steps[KeJob, CountsRead] = Steps(
    read=_read,
    plan=plan_ke,
    load_plan=_load_plan,
    newly_published=_newly_published,
    write_table=_write_table,
    write_state=_write_state,
    plan_tables=plan_in("_sqlanon_plan", "_sqlanon_runs"),
    overlap=_overlap,
)
