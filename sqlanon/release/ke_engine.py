"""(k,e) releases that never pull rows into Python: plan on counts, apply in the engine.

A release has three stages (issue 13):

1. **Read** (SQL): the source joined with the state of the family's and the domain's
   last releases, kept in the temporary table ``_sqlanon_read``; Python reads only
   counts: per (cell of the domain's latest release, value), the number of records
   (``sqlanon/sql/ke_engine_counts.sql``), and a few totals.
2. **Plan** (pure): :func:`sqlanon.models.ke_incremental.plan_in_cells` on those entries, each
   weighted by its records. An old cell is published whole or left out whole and the
   new records of one value share their fate, so the plan is a small table: per entry
   its group and its cell after this release (``_sqlanon_plan``).
3. **Apply** (SQL): the plan joined to the rows writes the release table, with the
   within-group shuffle done by a keyed pseudo-random function (:func:`shuffle_key`),
   the members' state, the kept values; the bounds table comes from the counts.

The planner sees the same multisets as the row path (``release.release_ke``) and
makes a plan with the same objective (``tests/test_ke_counts.py``); the records a plan
puts in a group may differ among records of equal value, which nothing published can
tell apart. Releases this path does not cover yet go the row path: the seeds' ``paper``
policy, and domains with ghosts, chains, deleted records or changed sensitive values
(:func:`release_ke` returns None before it writes anything).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import ConfigError, InfeasibleError
from sqlanon.models import ke_incremental, ke_plan, ke_static
from sqlanon.models.cells import Requirement
from sqlanon.release.plan import plan_live
from sqlanon.release.state import DomainScope, explaining_paper_cells, refuse_unsafe
from sqlanon.session import Session
from sqlanon.state import bounds, catalog, domains, live
from sqlanon.state.source import Source, relation, render_sql

#: Temporary tables of one engine release, dropped when it ends either way.
_TEMP = (
    "_sqlanon_read",
    "_sqlanon_plan",
    "_sqlanon_ghost_ids",
    "_sqlanon_ghost_read",
    "_sqlanon_ghost_members",
    "_sqlanon_ghost_values",
)


@dataclass(frozen=True)
class Applied:
    """What the engine path did: nothing (``unchanged``: the release would publish
    nothing new), or the release table, bounds, members, kept values and cells written,
    with what the catalog row records."""

    unchanged: bool
    plan: ke_plan.KePlan | None = None
    counts: dict[str, int] = field(default_factory=dict)
    published_optimum: float | None = None
    changes: dict[str, int] = field(default_factory=dict)
    ghosts: int = 0  # ghost rows the release table shows
    chain_held: int = 0  # records the chain rule left out


def shuffle_key() -> str:
    """The secret of a release's shuffle: 128 bits from ``os.urandom``, never stored,
    and never derived from anything a caller gives (a release with a guessable secret
    would let anyone who guesses it link every row to its key: there is no seed).

    Why this shuffle is sound: the release pairs each group's records, ordered by
    ``SHA-256(secret || key)``'s first 64 bits, with the group's values sorted, and
    orders rows by the next 64 bits. SHA-256 with a uniformly random 128-bit prefix
    is a pseudo-random function of the key (the standard assumption behind prefix-keyed
    SHA-2 and HMAC; length extension only forges longer inputs' hashes, and no hash is
    ever shown), so the record order within a group is a uniformly random permutation
    (64-bit ties, about n^2 / 2^65, fall back to key order) and the pairing is a uniform
    random assignment of the group's multiset to its records, as the row path's
    ``os.urandom`` shuffle (``ke_shuffle.permute_within_groups``) makes it. The secret is drawn
    per release and dropped: nobody, the owner included, can recompute the pairing.
    """
    return os.urandom(16).hex()


def _drop_temp(session: Session) -> None:
    for name in _TEMP:
        session.execute(f"DROP TABLE IF EXISTS {name}")


def release_ke(
    session: Session,
    *,
    src: Source,
    family: str,
    key: str,
    sensitive: str,
    quasi: Sequence[str],
    k: int,
    e: float,
    policy: str,
    scope: DomainScope,
    last: catalog.Release | None,
    version: int,
    table: str,
    progress: Callable[[str, int], None] | None,
) -> Applied | None:
    """Write version ``version`` of ``family`` on the engine path, inside the caller's
    transaction, after the caller's checks (``release.release_ke``), which then records
    the catalog row; None, having written nothing, when this release needs the row
    path."""
    if policy == "paper":
        return None
    restore = _tune_postgres(session)
    try:
        applied = _release(
            session, src, family, key, sensitive, quasi, k, e, policy, scope, last,
            version, table, progress,
        )  # fmt: skip
    except BaseException:
        # The caller rolls back (temporary tables and settings with it); a cleanup in a
        # transaction the error aborted would fail and hide the error itself.
        with contextlib.suppress(Exception):
            _drop_temp(session)
        raise
    _drop_temp(session)
    for name, value in restore:
        session.execute("SELECT set_config($1, $2, true)", [name, value])
    return applied


#: PostgreSQL settings for the statements of one release, only until it ends: memory
#: for one sort or hash (a session's default, 4MB, sends the shuffle's sorts of 10^6
#: rows to disk; only ever raised), and no JIT (its compilation costs ~0.3 s a statement
#: here and saves nothing on these plans).
_WORK_MEM_KB = 256 * 1024


def _tune_postgres(session: Session) -> list[tuple[str, str]]:
    """On PostgreSQL, set this transaction's ``work_mem`` (raised to
    :data:`_WORK_MEM_KB`) and ``jit`` (off) for the release; returns the settings to
    restore."""
    if session.dialect != "postgres":
        return []
    work_mem, kb, jit = session.query(
        "SELECT current_setting('work_mem') AS work_mem, "
        "pg_size_bytes(current_setting('work_mem')) / 1024 AS kb, current_setting('jit') AS jit"
    )[0]
    wanted = [("jit", "off")]
    if int(kb) < _WORK_MEM_KB:
        wanted.append(("work_mem", f"{_WORK_MEM_KB}kB"))
    for name, value in wanted:
        session.execute("SELECT set_config($1, $2, true)", [name, value])
    return [(name, str(work_mem if name == "work_mem" else jit)) for name, _ in wanted]


def _carried(session: Session, columns: Sequence[str]) -> tuple[str, str, dict[str, str]]:
    """Source columns the apply stage needs, as ``{columns}`` of the read (aliased
    c0, c1, ... so no source name can clash with the read's own), the ``{carried}``
    list of the engine read, and each column's alias."""
    q = session.quote_ident
    alias = {c: f"c{i}" for i, c in enumerate(dict.fromkeys(columns))}
    read = ", ".join(f"{q('src')}.{q(c)} AS {q(a)}" for c, a in alias.items())
    carried = ", ".join(f"{q('r')}.{q(a)}" for a in alias.values())
    return read, carried, alias


def _release(
    session: Session,
    src: Source,
    family: str,
    key: str,
    sensitive: str,
    quasi: Sequence[str],
    k: int,
    e: float,
    policy: str,
    scope: DomainScope,
    last: catalog.Release | None,
    version: int,
    table: str,
    progress: Callable[[str, int], None] | None,
) -> Applied | None:
    q = session.quote_ident
    columns, carried, alias = _carried(session, [*quasi, sensitive, *scope.attributes])
    read = render_sql(
        session,
        "ke_read_source",
        key=q(key),
        sensitive=q(sensitive),
        hashed=", ".join(f"{q('src')}.{q(c)}" for c in [*quasi, sensitive]),
        **scope.hashes(session, key),
        columns=columns,
        source=src.qualified(session),
    )
    _drop_temp(session)
    session.execute(
        render_sql(session, "ke_engine_read", carried=carried) + read + "\n) AS r",
        scope.read_parameters(family, last),
    )
    stats = session.query_dicts(sqltext.load(session.dialect, "ke_engine_stats"))[0]
    if progress is not None:
        progress("rows read", int(stats["n"]))
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
    if (stats["value_changed"] or scope.linked(session)) and set(others) & set(quasi):
        # A quasi-identifier that another release of the domain constrains, with chains:
        # the ghost rows would need it both NULL and kept. The row path handles it.
        return None
    n = int(stats["n"])
    inserted = int(stats["inserted"]) if last is not None else n
    changed_keys = []
    if stats["value_changed"]:
        changed_keys = [
            str(r[0])
            for r in session.query(sqltext.load(session.dialect, "ke_engine_changed_keys"))
        ]
    changes = live.apply_counted_changes(
        session, scope.name, scope.last, last, src, key, inserted=inserted,
        known=n - inserted, quasi_changed=int(stats["quasi_changed"]) if last else 0,
        celled=int(stats["celled"]), changed_keys=changed_keys,
    )  # fmt: skip
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
    ghosts = live.read_ghosts(session, scope.name, scope.last, family, last, src, scope.attributes)
    if ghosts.count:
        _read_ghosts(
            session, ghosts, {a: alias[a] for a in [sensitive, *others]}, sensitive, linked
        )
    counts = session.query_arrays(
        render_sql(
            session,
            "ke_engine_counts_ghosts" if ghosts.count else "ke_engine_counts",
            entry=", ".join(q(c) for c in entry),
        )
    )
    raw_cell = counts["domain_cell"].astype(np.int64)
    values = counts["s"].astype(np.float64)
    weight = counts["records"].astype(np.float64)
    prior = domains.read_cells(session, scope.last, raw_cell)

    def planned(keep: np.ndarray) -> tuple[np.ndarray, ke_plan.KePlan]:
        idx = np.flatnonzero(keep)
        p = ke_incremental.plan_in_cells(
            values[idx], prior.select(idx), sensitive, k, e, policy, weight=weight[idx]
        )
        group = np.full(values.size, -1, dtype=np.int64)
        group[idx] = p.group
        return group, p

    chains = live.chains(session, scope.name, counts["chain_key"]) if linked else []
    with explaining_paper_cells(session, scope, policy):
        group, plan, cells, chain_held = plan_live(
            planned,
            prior,
            Requirement.ke(sensitive, k, e),
            {sensitive: values, **{a: counts[alias[a]] for a in others if linked}},
            chains,
            weight,
        )
    refuse_unsafe(prior, cells, {sensitive: values})
    chosen = group >= 0

    plan_columns: dict[str, np.ndarray] = {c: counts[c] for c in entry}
    plan_types = {"domain_cell": "BIGINT", "s": "DOUBLE PRECISION", "chain_key": "VARCHAR"}
    plan_types.update({alias[a]: src.columns[a] for a in others})
    session.load_temp(
        "_sqlanon_plan",
        {**plan_columns, "group_id": group, "cell_id": cells.cell.astype(np.int64)},
        {**{c: plan_types[c] for c in entry}, "group_id": "INTEGER", "cell_id": "BIGINT"},
    )
    matches = {
        f"plan_match{suffix}": sqltext.match(
            q("p"), q(side), [q(c) for c in entry], null_safe=bool(linked)
        )
        for suffix, side in (("", "r"), ("_g", "g"))
    }
    ghost_rows = 0
    if ghosts.count:
        session.execute(render_sql(session, "ke_engine_ghost_members", **matches))
        ghost_rows = int(
            session.query("SELECT count(*) FROM _sqlanon_ghost_members WHERE group_id >= 0")[0][0]
        )
    if last is not None and not changes.any and ghosts.count == changes.ghosts_before:
        newly = session.query(render_sql(session, "ke_engine_newly_published", **matches))[0][0]
        if ghosts.count:
            newly += session.query(
                "SELECT count(*) FROM _sqlanon_ghost_read AS g JOIN _sqlanon_ghost_members AS m "
                "ON m.record_key = g.record_key WHERE m.group_id >= 0 AND NOT g.published_before"
            )[0][0]
        if not newly:
            return Applied(unchanged=True)
    if not chosen.any() or ghost_rows == int(weight[chosen].sum()):
        raise InfeasibleError(
            f"no record of {src.label} can be published under k={k}, e={e:g} yet: "
            f"{int(weight[prior.cell >= 0].sum())} were published by earlier releases of "
            f"domain {scope.name!r} in cells that cannot meet it, and the others cannot form "
            "a valid group; lower k or e, or release when more rows have arrived"
        )
    if progress is not None:
        progress("groups built", int(plan.groups))

    session.execute(
        render_sql(
            session,
            "ke_engine_release_ghosts" if ghosts.count else "ke_engine_release",
            release=relation(session, table),
            quasi_a=", ".join(f"{q(alias[c])}" for c in quasi),
            quasi_r=", ".join(f"{q('r')}.{q(alias[c])}" for c in quasi),
            quasi_n=", ".join(f"{q('n')}.{q(alias[c])}" for c in quasi),
            quasi_out=", ".join(f"{q('who')}.{q(alias[c])} AS {q(c)}" for c in quasi),
            sensitive_a=q(alias[sensitive]),
            sensitive=q(sensitive),
            key_r=", ".join(f"{q('r')}.{q(c)}" for c in entry),
            key_g=", ".join(f"{q('g')}.{q(c)}" for c in entry),
            **matches,
        ),
        [shuffle_key()],
    )
    if progress is not None:
        progress("rows written", int(weight[chosen].sum()) - ghost_rows)
    bounds.write_bounds_counts(
        session, src, sensitive, table, values[chosen], weight[chosen], group[chosen]
    )
    session.execute(render_sql(session, "ke_engine_members", **matches), [family, version])
    if ghosts.count:
        session.execute(sqltext.load(session.dialect, "write_ghost_members"), [family, version])
    for attribute in scope.attributes:
        session.execute(
            render_sql(session, "ke_engine_keep", column=q(alias[attribute]), **matches),
            [scope.name, attribute, attribute not in scope.before],
        )
    domains.write_cells(session, family, version, cells)
    never = prior.cell < 0
    return Applied(
        unchanged=False,
        plan=plan,
        counts={
            "rows_published": int(weight[chosen].sum()) - ghost_rows,
            "held_back": int(weight[~chosen & never].sum()),
            "suppressed": int(weight[~chosen & ~never].sum()),
        },
        published_optimum=ke_static.static_optimum(values[chosen], k, e),
        changes=changes.as_metrics(),
        ghosts=ghost_rows,
        chain_held=chain_held,
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
