"""lHD-diversity releases on a database: releases and history.

The release reuses the (k,e) machinery of :mod:`sqlanon.release` (source checks, state
diff, domain and cells, member state, view, catalog row) around the pure planner
:func:`sqlanon.models.lhd_planner.plan_lhd`. Every earlier release of the domain (every family,
both models) constrains the new one through the cells it left (MODELS.md, "Cells").
:func:`earlier_release` reads a published release back as the seed's
:class:`EarlierRelease` (distinct values per class), for the seed's comparison attack.

The hierarchies of the quasi-identifiers come from the catalog
(:mod:`sqlanon.state.hierarchies`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.hierarchy import Hierarchy
from sqlanon.models.cells import Requirement
from sqlanon.models.lhd_comparison import EarlierRelease
from sqlanon.models.lhd_planner import ALGORITHMS, plan_lhd
from sqlanon.release import lhd_engine
from sqlanon.release.plan import plan_live
from sqlanon.release.publish import publish
from sqlanon.release.state import (
    left_out_counts,
    load_members,
    open_domain,
    random_order,
    refuse_unsafe,
    summary_of,
    unchanged,
    write_state,
)
from sqlanon.session import Session
from sqlanon.state import catalog, domains, live
from sqlanon.state.hierarchies import read_hierarchies
from sqlanon.state.source import (
    INTEGER,
    NUMERIC,
    Source,
    check_names,
    check_target,
    check_unchanged,
    current_schema,
    idents,
    profile_source,
    relation,
    relation_exists,
    release_relation,
    release_schema,
    render_sql,
    resolve_source,
)

# Names the read and write SQL use for their own columns.
_INTERNAL = {
    "record_key",
    "record_value",
    "unit",
    "seg",
    "published_before",
    "changed",
    "ord",
    "row_hash",
    "domain_cell",
    "value_hash",
    "value_changed",
}


def earlier_release(
    session: Session, release: catalog.Release, shared: Sequence[str], keys: np.ndarray
) -> EarlierRelease:
    """``release`` seen from the records ``keys`` (class per key, -1 if not published),
    with the distinct values each class published for the ``shared`` attributes, read
    from its release table (what was published, even if the source changed since)."""
    if isinstance(shared, str):
        shared = [shared]
    if not shared:
        raise ConfigError(f"release {release.table_name!r}: give the sensitive columns to read")
    q = session.quote_ident
    if not relation_exists(session, release.schema or current_schema(session), release.table_name):
        raise ConfigError(
            f"release table {release.table_name!r} of {release.family!r} is gone; the "
            "comparison constraint needs every earlier release of the source"
        )
    group_col = "class_id" if release.model == "lhd" else "group_id"
    ids: np.ndarray | None = None
    values: dict[str, list[frozenset[Any]]] = {}
    for s in shared:
        rows = session.query_arrays(
            render_sql(
                session,
                "lhd_class_values",
                group_id=q(group_col),
                sensitive=q(s),
                release=release_relation(session, release),
            )
        )
        ids = np.unique(rows["class_id"].astype(np.int64))
        cls = np.searchsorted(ids, rows["class_id"].astype(np.int64))
        sets: list[set[Any]] = [set() for _ in range(ids.size)]
        for c, v in zip(cls.tolist(), rows["s"].tolist(), strict=True):
            sets[c].add(v)
        values[s] = [frozenset(x) for x in sets]
    assert ids is not None
    member = dict(
        session.query(
            sqltext.load(session.dialect, "lhd_published_classes"),
            [release.family, release.version],
        )
    )
    raw = np.array([member.get(k, -1) for k in keys.tolist()], dtype=np.int64)
    if ids.size == 0:
        return EarlierRelease(np.full(raw.size, -1, dtype=np.int64), values)
    pos = np.minimum(np.searchsorted(ids, raw), ids.size - 1)
    known = (raw >= 0) & (ids[pos] == raw)
    return EarlierRelease(np.where(known, pos, -1), values)


def _check_lhd_parameters(
    l: object,  # noqa: E741
    algorithm: object,
    max_suppression: object,
    sensitive: object,
) -> list[str]:
    if isinstance(l, bool) or not isinstance(l, int | np.integer) or l < 2:
        raise ConfigError(f"l must be a whole number >= 2, got {l!r}")
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    if (
        isinstance(max_suppression, bool)
        or not isinstance(max_suppression, int | float | np.number)
        or math.isnan(float(max_suppression))
        or not 0 <= float(max_suppression) <= 1
    ):
        raise ConfigError(f"max_suppression must be a fraction in [0, 1], got {max_suppression!r}")
    if isinstance(sensitive, str) or not isinstance(sensitive, Sequence) or not sensitive:
        raise ConfigError(f"sensitive must be a non-empty list of column names, got {sensitive!r}")
    names = list(sensitive)
    if len(set(names)) != len(names) or not all(isinstance(s, str) and s for s in names):
        raise ConfigError(f"sensitive must list distinct column names, got {names}")
    return names


def release_lhd(
    session: Session,
    source: str,
    family: str,
    *,
    key: str,
    quasi: Sequence[str],
    sensitive: Sequence[str],
    l: int,  # noqa: E741
    algorithm: str = "auto",
    max_suppression: float = 0.05,
    progress: Callable[[str, int], None] | None = None,
    domain_name: str | None = None,
) -> dict[str, Any]:
    """Publish the next lHD-diverse version of ``family`` from ``source``.

    The release composes with every earlier release of its domain (``domain_name``, or
    decided as :mod:`sqlanon.state.domains` says) under the cell rule
    (:mod:`sqlanon.models.lhd_planner`).

    Returns the (k,e)-style summary plus ``precision_loss``, ``dm`` and ``suppressed``.
    ``progress``, if given, is called as ``progress(stage, count)`` after each long
    step: "rows read", "groups built" (classes), "rows written".
    """
    sensitive = _check_lhd_parameters(l, algorithm, max_suppression, sensitive)
    if not isinstance(key, str):
        raise ConfigError("key must name one column")
    family = sqltext.check_family(family)
    quasi = check_names(family, quasi, sensitive, key)
    if not quasi:
        raise ConfigError("quasi must list at least one column (each needs a hierarchy)")
    domain_name = domains.check_domain(domain_name)
    with session.transaction():
        session.lock_family(family)
        src = resolve_source(session, source)
        key = src.column(key, "key")
        quasi = [src.column(c, "quasi") for c in quasi]
        sensitive = [src.column(c, "sensitive") for c in sensitive]
        check_names(family, quasi, sensitive, key)
        clash = _INTERNAL & {c.lower() for c in [*quasi, *sensitive]}
        if clash:
            raise ConfigError(f"columns named {sorted(clash)} clash with sqlanon's own; rename")
        last = catalog.latest(session, family)
        if last is not None and last.model != "lhd":
            raise ConfigError(f"family {family!r} is a {last.model} family, not lHD")
        scope = open_domain(session, src, key, last, domain_name, sensitive)
        # Attributes earlier releases constrain that this one does not publish: every
        # piece of an old cell must keep them, so they are read (never written).
        checked = [a for a in scope.before if a not in sensitive]
        parameters = {
            "source": src.label,
            "key": key,
            "quasi": quasi,
            "sensitive": sensitive,
            "l": int(l),
            "algorithm": algorithm,
            "max_suppression": float(max_suppression),
            "domain_attributes": scope.attributes,
            **release_schema(session, family, last),
        }
        check_unchanged(family, last, parameters, ("source", "key", "quasi", "sensitive", "l"))
        version = 1 if last is None else last.version + 1
        table = check_target(session, family, version)
        source_rows = 0
        for s in sensitive:
            source_rows = profile_source(session, src, key, s)
        _refuse_nan(session, src, quasi)

        q = session.quote_ident
        read_sql = render_sql(
            session,
            "lhd_read_source",
            key=q(key),
            hashed=idents(session, [*quasi, *sensitive], "src"),
            columns=idents(
                session, [*quasi, *sensitive, *(a for a in checked if a not in quasi)], "src"
            ),
            **scope.hashes(session, key),
            source=src.qualified(session),
        )

        def hierarchies(rows: dict[str, np.ndarray]) -> dict[str, Hierarchy]:
            return read_hierarchies(session, src, quasi, rows)

        job = lhd_engine.Job(
            src=src, family=family, key=key, quasi=quasi, sensitive=sensitive,
            checked=checked, l=int(l), algorithm=algorithm,
            max_suppression=float(max_suppression), scope=scope, last=last,
            table=table, version=version, read_sql=read_sql, hierarchies=hierarchies,
            progress=progress,
        )  # fmt: skip
        applied = lhd_engine.release(session, job)
        if applied is None:
            applied = _release_rows(session, job)
        if applied.unchanged:
            assert last is not None
            return {**summary_of(last), "unchanged": True}
        assert applied.plan is not None
        summary = catalog.Release(
            family=family,
            version=version,
            table_name=table,
            model="lhd",
            source=src.label,
            parameters=parameters,
            **applied.counts,
            groups=int(applied.plan.n_classes),
            sum_of_errors=None,
            source_rows=source_rows,
            metrics={
                "precision_loss": float(applied.plan.precision_loss),
                "dm": int(applied.plan.dm),
                "algorithm_used": applied.plan.algorithm,
                **applied.changes,
                "ghosts": applied.ghosts,
                "chain_held_back": applied.chain_held,
                # The rewriter reads '*' in these columns as possibly NULL.
                **({"null_quasi": applied.null_quasi} if applied.null_quasi else {}),
            },
            domain=scope.name,
            seq=scope.seq,
        )
        publish(session, summary, [relation(session, table)])
    return summary_of(summary)


def _refuse_nan(session: Session, src: Source, quasi: Sequence[str]) -> None:
    """A NULL quasi-identifier is a value like any other (its own branch of the
    hierarchy); a NaN is not one sqlanon can generalize: SQL orders it above every
    number, unlike NULL, as which a numeric column's NaN would read. Refused here, in
    SQL, where the two differ."""
    for column in quasi:
        if not NUMERIC.search(src.columns[column].lower()) or INTEGER.search(
            src.columns[column].lower()
        ):
            continue
        sql = render_sql(
            session,
            "lhd_nan_count",
            column=session.quote_ident(column),
            source=src.qualified(session),
        )
        count = int(session.query(sql)[0][0])
        if count:
            raise ConfigError(
                f"quasi column {column!r} has {count} NaN values; set them to NULL (a value "
                "of its own in every hierarchy) or filter them"
            )


def _release_rows(session: Session, job: lhd_engine.Job) -> lhd_engine.Applied:
    """The row path: every row read into Python (chains, changed values, Spark), planned
    and written back; the caller records the catalog row."""
    src, family, key, scope, last = job.src, job.family, job.key, job.scope, job.last
    quasi, sensitive, checked, l = job.quasi, job.sensitive, job.checked, job.l  # noqa: E741
    read_sql, progress, table, version = job.read_sql, job.progress, job.table, job.version
    q = session.quote_ident
    rows = session.query_arrays(
        sqltext.load(session.dialect, "lhd_read_rows")
        + read_sql
        + "\n) AS r ORDER BY r.record_key",
        scope.read_parameters(family, last),
    )
    keys = rows["record_key"]
    if progress is not None:
        progress("rows read", int(keys.size))
    if scope.last is None:
        rows["domain_cell"] = np.full(keys.size, -1, dtype=np.int64)
    changes = live.apply_changes(session, scope.name, scope.last, last, src, key, keys, rows)
    ghosts = live.read_ghosts(session, scope.name, scope.last, family, last, src, scope.attributes)
    live_rows = keys.size
    raw_cell = np.concatenate([rows["domain_cell"].astype(np.int64), ghosts.cell])
    prior = domains.read_cells(session, scope.last, raw_cell)
    data = {c: rows[c] for c in quasi}
    if ghosts.count:
        keys = np.concatenate([keys.astype(object), ghosts.ids])
        at = lhd_engine.stand_ins(prior.cell, np.ones(live_rows, np.int64), ghosts.count)
        data = {c: np.concatenate([rows[c], rows[c][at]]) for c in quasi}
    found = job.hierarchies(rows)
    attribute_values = {
        a: np.concatenate([np.asarray(rows[a], dtype=object), ghosts.values[a]])
        if ghosts.count
        else rows[a]
        for a in [*sensitive, *checked]
    }
    chains = live.chains(session, scope.name, keys)

    def planned(keep: np.ndarray) -> tuple[np.ndarray, Any]:
        idx = np.flatnonzero(keep)
        p = plan_lhd(
            {c: data[c][idx] for c in quasi},
            {s: attribute_values[s][idx] for s in sensitive},
            found,
            int(l),
            prior.select(idx),
            job.algorithm,
            float(job.max_suppression),
            checked={a: attribute_values[a][idx] for a in checked},
        )
        group = np.full(keys.size, -1, dtype=np.int64)
        group[idx] = p.class_id
        return group, (p, idx)

    class_id, (plan, planned_rows), cells, chain_held = plan_live(
        planned, prior, Requirement.lhd(sensitive, int(l)), attribute_values, chains
    )
    refuse_unsafe(prior, cells, attribute_values)
    chosen = class_id >= 0
    if unchanged(last, changes, ghosts, rows, chosen) is not None:
        return lhd_engine.Applied(unchanged=True)
    if progress is not None:
        progress("groups built", int(plan.n_classes))
    labels = {c: np.full(keys.size, None, dtype=object) for c in quasi}
    for c in quasi:
        labels[c][planned_rows] = plan.labels(c)
    is_ghost = np.arange(keys.size) >= live_rows
    class_ghosts = np.bincount(class_id[chosen & is_ghost], minlength=max(plan.n_classes, 1))
    session.load_temp(
        "_sqlanon_lhd",
        {
            "record_key": keys[chosen],
            "class_id": class_id[chosen],
            "class_ghosts": class_ghosts[class_id[chosen]],
            "ord": random_order(int(chosen.sum())),
            **{c: labels[c][chosen] for c in quasi},
        },
        {
            "record_key": "VARCHAR",
            "class_id": "INTEGER",
            "class_ghosts": "INTEGER",
            "ord": "BIGINT",
            **dict.fromkeys(quasi, "VARCHAR"),
        },
    )
    # With ghosts, their kept values join the source's (the class_ghosts column too).
    session.execute(
        render_sql(
            session,
            "lhd_write_release_ghosts" if ghosts.count else "lhd_write_release",
            release=relation(session, table),
            labels=idents(session, quasi, "a"),
            sensitive=idents(session, sensitive, "v"),
            source_values=idents(session, sensitive, "src"),
            ghost_values=idents(session, sensitive, "g"),
            source=src.qualified(session),
            key=q(key),
        )
    )
    session.execute("DROP TABLE _sqlanon_lhd")
    if progress is not None:
        progress("rows written", int(chosen.sum()))
    load_members(
        session,
        keys[:live_rows],
        "VARCHAR",
        class_id[:live_rows],
        cells.cell[:live_rows],
        rows["row_hash"],
        rows["value_hash"],
    )
    if ghosts.count:
        session.load_temp(
            "_sqlanon_ghost_members",
            {
                "record_key": ghosts.ids,
                "group_id": class_id[live_rows:],
                "cell_id": cells.cell[live_rows:],
            },
            {"record_key": "VARCHAR", "group_id": "INTEGER", "cell_id": "BIGINT"},
        )
    write_state(session, family, version, scope, src, key, keys, live_rows, prior, cells, ghosts)
    return lhd_engine.Applied(
        unchanged=False,
        plan=plan,
        counts=left_out_counts(chosen, prior, live_rows),
        changes=changes.as_metrics(),
        ghosts=int(chosen[live_rows:].sum()),
        chain_held=chain_held,
        null_quasi=lhd_engine.published_nulls(data, np.flatnonzero(chosen)),
    )
