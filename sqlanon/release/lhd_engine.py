"""lHD releases that never pull rows into Python: plan on units, apply in the engine.

The same three stages as the (k,e) engine path (:mod:`sqlanon.release.ke_engine`):

1. **Read** (SQL): the source joined with the state of the family's and the domain's
   last releases, kept in the temporary table ``_sqlanon_read`` with each row's
   ``unit``, a hash of the values the planner tells records apart by, and ``seg``, its
   rank in its unit by key capped at ``UNIT_SINGLES``; Python reads one entry per unit
   (its values and its number of records, ``lhd_engine_units.sql``).
2. **Plan** (pure): :func:`sqlanon.models.lhd_planner.plan_lhd` on the units, each weighted by
   its records; it places the first ``UNIT_SINGLES`` records of a unit one by one and
   the rest together, so the plan is a small table: per (unit, seg) its class, its cell
   after this release and its labels.
3. **Apply** (SQL): the plan joined to the rows on (``unit``, ``seg``) writes the
   release table (rows in a keyed pseudo-random order), the members' state, the kept
   values.

The planner gets the units the row path (:func:`sqlanon.release.lhd.release_lhd`
reading rows in key order) would make, in the same order, so both publish the same
classes (``tests/test_lhd_engine.py``). Releases this path does not cover go the row
path (:func:`release` returns None before it writes anything): Spark, and domains with
chains or changed constrained values. Deleted records are ghosts here too: read (their
kept values; few) and planned beside the units, each with the QI of a random live
record of its cell, and shown among the rows of their class.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sqlanon import sqltext
from sqlanon.hierarchy import Hierarchy, missing_mask
from sqlanon.models.cells import Requirement
from sqlanon.models.lhd_planner import LhdPlan, plan_lhd
from sqlanon.models.lhd_problem import UNIT_SINGLES
from sqlanon.release.ke_engine import shuffle_key
from sqlanon.release.state import DomainScope, refuse_unsafe
from sqlanon.session import Session
from sqlanon.state import catalog, domains, live
from sqlanon.state.source import Source, relation, render_sql

#: Temporary tables of one engine release, dropped when it ends either way.
_TEMP = ("_sqlanon_read", "_sqlanon_plan", "_sqlanon_ghost_values", "_sqlanon_ghost_members")


@dataclass(frozen=True)
class Applied:
    """What the engine path did: nothing (``unchanged``), or the release written, with
    the plan and what the catalog row records."""

    unchanged: bool
    plan: LhdPlan | None = None
    counts: dict[str, int] = field(default_factory=dict)
    changes: dict[str, int] = field(default_factory=dict)
    ghosts: int = 0  # ghost rows the release table shows (the row path)
    chain_held: int = 0  # records the chain rule left out (the row path)
    null_quasi: list[str] = field(default_factory=list)  # see published_nulls


@dataclass(frozen=True)
class Job:
    """One lHD release after :func:`sqlanon.release.lhd.release_lhd`'s checks: what
    either path needs. ``checked``: the attributes earlier releases of the domain
    constrain that this one does not publish; ``read_sql``: the source read
    (``lhd_read_source.sql``, rendered); ``hierarchies`` builds the QI hierarchies from
    the values read."""

    src: Source
    family: str
    key: str
    quasi: list[str]
    sensitive: list[str]
    checked: list[str]
    l: int  # noqa: E741
    algorithm: str
    max_suppression: float
    scope: DomainScope
    last: catalog.Release | None
    table: str
    version: int
    read_sql: str
    hierarchies: Callable[[dict[str, np.ndarray]], dict[str, Hierarchy]]
    progress: Callable[[str, int], None] | None


def release(session: Session, job: Job) -> Applied | None:
    """Write ``job`` on the engine path inside the caller's transaction; the caller
    records the catalog row. None, having written nothing, when this release needs the
    row path."""
    if session.dialect not in ("duckdb", "postgres"):
        return None
    _drop_temp(session)
    try:
        applied = _release(session, job)
    except BaseException:
        # The caller rolls back (temporary tables with it); a cleanup in a transaction
        # the error aborted would fail and hide the error itself.
        with contextlib.suppress(Exception):
            _drop_temp(session)
        raise
    _drop_temp(session)
    return applied


def _drop_temp(session: Session) -> None:
    for name in _TEMP:
        session.execute(f"DROP TABLE IF EXISTS {name}")


def _release(session: Session, job: Job) -> Applied | None:
    src, family, key, scope, last = job.src, job.family, job.key, job.scope, job.last
    quasi, sensitive, l, progress = job.quasi, job.sensitive, job.l, job.progress  # noqa: E741
    q = session.quote_ident
    columns = list(dict.fromkeys([*quasi, *sensitive, *job.checked]))
    checked = [a for a in job.checked if a not in sensitive]
    # the unit tells apart what the planner tells apart: text byte by byte, whatever
    # collation the column has (a case-insensitive one would merge 'a' and 'A')
    hashed = sqltext.binary(
        [(f"{q('r')}.{q('domain_cell')}", "BIGINT")]
        + [(f"{q('r')}.{q(c)}", src.columns[c]) for c in columns],
        session.dialect,
    )
    session.execute(
        render_sql(session, "lhd_engine_read", entry=hashed) + job.read_sql + "\n) AS r\n) AS u",
        [*scope.read_parameters(family, last), UNIT_SINGLES],
    )
    stats = session.query_dicts(sqltext.load(session.dialect, "lhd_engine_stats"))[0]
    if scope.last is not None and (stats["value_changed"] or scope.linked(session)):
        return None  # changed constrained values, chains: the row path
    units = session.query_arrays(
        render_sql(session, "lhd_engine_units", columns=", ".join(q(c) for c in columns))
    )
    if np.unique(units["unit"]).size != units["unit"].size:
        return None  # two distinct units share a 64-bit hash: the row path tells them apart
    if progress is not None:
        progress("rows read", int(stats["n"]))
    weight = units["records"].astype(np.int64)
    n = int(stats["n"])
    inserted = int(stats["inserted"]) if last is not None else n
    changes = live.apply_counted_changes(
        session, scope.name, scope.last, last, src, key, inserted=inserted,
        known=n - inserted, quasi_changed=int(stats["quasi_changed"]) if last else 0,
        celled=int(stats["celled"]),
    )  # fmt: skip
    ghosts = live.read_ghosts(session, scope.name, scope.last, family, last, src, scope.attributes)
    if scope.last is None:
        units["domain_cell"] = np.full(weight.size, -1, dtype=np.int64)
    # The planner's entries: the units, then one per ghost (a deleted record the domain
    # keeps: its kept values, and the QI of a live unit of its cell to plan with).
    live_units = weight.size
    raw_cell = np.concatenate([units["domain_cell"].astype(np.int64), ghosts.cell])
    prior = domains.read_cells(session, scope.last, raw_cell)
    at = np.concatenate([np.arange(live_units), stand_ins(prior.cell, weight, ghosts.count)])
    weight = np.concatenate([weight, np.ones(ghosts.count, dtype=np.int64)])
    values = {
        a: np.concatenate([np.asarray(units[a], dtype=object), ghosts.values[a]])
        if ghosts.count
        else units[a]
        for a in [*sensitive, *checked]
    }
    found = job.hierarchies(units)
    plan = plan_lhd(
        {c: units[c][at] for c in quasi},
        {s: values[s] for s in sensitive},
        found,
        int(l),
        prior,
        job.algorithm,
        float(job.max_suppression),
        checked={a: values[a] for a in checked},
        weight=weight,
    )
    # One row per (entry, rank segment): the record of rank j < UNIT_SINGLES in its unit
    # (key order), or all from UNIT_SINGLES on; the planner says the class of each.
    assert plan.rank_class is not None
    segments = np.arange(UNIT_SINGLES + 1)
    records = np.where(
        segments < UNIT_SINGLES,
        (segments[None, :] < weight[:, None]).astype(np.int64),
        np.maximum(weight - UNIT_SINGLES, 0)[:, None],
    )
    entry, seg = np.nonzero(records)
    seg_weight, class_id = records[entry, seg], plan.rank_class[entry, seg]
    # No chains on this path: the cells after are the old ones split by class.
    seg_prior = prior.select(entry)
    seg_values = {a: v[entry] for a, v in values.items()}
    cells = seg_prior.then(class_id, Requirement.lhd(list(sensitive), int(l)))
    refuse_unsafe(seg_prior, cells, seg_values)
    chosen = class_id >= 0
    null_quasi = published_nulls({c: units[c][at] for c in quasi}, entry[chosen])
    is_ghost = entry >= live_units
    class_ghosts = np.append(np.bincount(class_id[chosen & is_ghost], minlength=plan.n_classes), 0)[
        class_id
    ]
    labels = {
        f"label_{j}": np.array([*(lab[j] for lab in plan.class_labels), None], dtype=object)[
            class_id
        ]
        for j in range(len(quasi))
    }
    label_types = dict.fromkeys(labels, "VARCHAR")
    on_live, on_ghost = ~is_ghost, is_ghost
    session.load_temp(
        "_sqlanon_plan",
        {
            "unit": units["unit"][entry[on_live]],
            "seg": seg[on_live],
            "group_id": class_id[on_live],
            "cell_id": cells.cell[on_live],
            "class_ghosts": class_ghosts[on_live],
            **{x: v[on_live] for x, v in labels.items()},
        },
        {
            "unit": "UBIGINT" if session.dialect == "duckdb" else "BIGINT",
            "seg": "BIGINT",
            "group_id": "INTEGER",
            "cell_id": "BIGINT",
            "class_ghosts": "INTEGER",
            **label_types,
        },
    )
    if ghosts.count:
        ghost = entry[on_ghost] - live_units
        session.load_temp(
            "_sqlanon_ghost_members",
            {
                "record_key": ghosts.ids[ghost],
                "group_id": class_id[on_ghost],
                "cell_id": cells.cell[on_ghost],
                "class_ghosts": class_ghosts[on_ghost],
                **{x: v[on_ghost] for x, v in labels.items()},
            },
            {
                "record_key": "VARCHAR",
                "group_id": "INTEGER",
                "cell_id": "BIGINT",
                "class_ghosts": "INTEGER",
                **label_types,
            },
        )
    matches = {"plan_match": sqltext.match(q("p"), q("r"), [q("unit"), q("seg")])}
    if last is not None and not changes.any and ghosts.count == changes.ghosts_before:
        newly = session.query(render_sql(session, "ke_engine_newly_published", **matches))[0][0]
        newly += int(
            (chosen[on_ghost] & ~ghosts.published_before[entry[on_ghost] - live_units]).sum()
        )
        if not newly:
            return Applied(unchanged=True)
    if progress is not None:
        progress("groups built", int(plan.n_classes))
    session.execute(
        render_sql(
            session,
            "lhd_engine_release_ghosts" if ghosts.count else "lhd_engine_release",
            release=relation(session, job.table),
            labels=", ".join(
                f"{q('p')}.{q(x)} AS {q(c)}" for x, c in zip(labels, quasi, strict=True)
            ),
            sensitive=", ".join(f"{q('r')}.{q(s)}" for s in sensitive),
            ghost_labels=", ".join(
                f"{q('m')}.{q(x)} AS {q(c)}" for x, c in zip(labels, quasi, strict=True)
            ),
            ghost_sensitive=", ".join(f"{q('g')}.{q(s)}" for s in sensitive),
            shown=", ".join(f"{q('x')}.{q(c)}" for c in [*quasi, *sensitive]),
            order=sqltext.keyed_order(
                f"{q('x')}.{q('k')}" if ghosts.count else f"{q('r')}.{q('record_key')}",
                session.dialect,
            ),
            **matches,
        ),
        [shuffle_key()],
    )
    published = int(seg_weight[chosen & on_live].sum())
    if progress is not None:
        progress("rows written", published)
    session.execute(render_sql(session, "ke_engine_members", **matches), [family, job.version])
    if ghosts.count:
        session.execute(sqltext.load(session.dialect, "write_ghost_members"), [family, job.version])
    for attribute in scope.attributes:
        session.execute(
            render_sql(session, "ke_engine_keep", column=q(attribute), **matches),
            [scope.name, attribute, attribute not in scope.before],
        )
    domains.write_cells(session, family, job.version, cells)
    never = seg_prior.cell < 0
    return Applied(
        unchanged=False,
        plan=plan,
        counts={
            "rows_published": published,
            "held_back": int(seg_weight[~chosen & never].sum()),
            "suppressed": int(seg_weight[~chosen & ~never].sum()),
        },
        changes=changes.as_metrics(),
        ghosts=int(chosen[on_ghost].sum()),
        null_quasi=null_quasi,
    )


def published_nulls(quasi: dict[str, np.ndarray], published: np.ndarray) -> list[str]:
    """The quasi columns (values per planner entry) with a missing value (NULL) among the
    ``published`` entries: the rewriter must then read each of their ``*`` labels as
    possibly NULL (a NULL joins other values only at the top of its hierarchy)."""
    return [c for c, values in quasi.items() if missing_mask(values[published]).any()]


def stand_ins(cell: np.ndarray, weight: np.ndarray, ghosts: int) -> np.ndarray:
    """For each ghost (entries ``weight.size`` and after of ``cell``), the live entry
    whose quasi-identifiers it plans with: the entry of a random live record of its cell
    (entry i holds ``weight[i]`` records: a unit, or one row on the row path), else of one
    random live record for every ghost of that cell. A ghost has no QI of its own; the
    release shows it with its class's labels only."""
    rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    units = weight.size
    live_cell, ghost_cell = cell[:units], cell[units : units + ghosts]
    order = np.lexsort((np.arange(units), live_cell))
    ordered, cum = live_cell[order], np.cumsum(weight[order])
    start = np.searchsorted(ordered, ghost_cell, "left")
    stop = np.searchsorted(ordered, ghost_cell, "right")
    before = np.where(start > 0, cum[np.maximum(start - 1, 0)], 0)
    span = np.where(stop > start, cum[np.maximum(stop - 1, 0)] - before, 0)
    pick = before + np.floor(rng.random(ghosts) * np.maximum(span, 1)).astype(np.int64)
    at = order[np.minimum(np.searchsorted(cum, pick, "right"), units - 1)]
    orphan = span == 0
    if orphan.any():
        ids, inverse = np.unique(ghost_cell[orphan], return_inverse=True)
        anyone = np.searchsorted(
            np.cumsum(weight), rng.integers(0, weight.sum(), ids.size), "right"
        )
        at[orphan] = anyone[inverse.reshape(-1)]
    return np.asarray(at, dtype=np.int64)
