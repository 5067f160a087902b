"""Publish the next (k,e)-anonymous version of a family: checks, then the engine path
(``ke_engine``), or the row path (``ke_rows``) for the seeds' ``paper`` policy."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import ConfigError, InfeasibleError
from sqlanon.models import ke_incremental, ke_plan, ke_static
from sqlanon.models.cells import Requirement
from sqlanon.release import ke_engine
from sqlanon.release.ke_rows import write_rows
from sqlanon.release.plan import plan_live
from sqlanon.release.publish import publish
from sqlanon.release.state import (
    DomainScope,
    explaining_paper_cells,
    left_out_counts,
    open_domain,
    refuse_unsafe,
    summary_of,
    unchanged,
    write_state,
)
from sqlanon.session import Session
from sqlanon.state import catalog, domains, live
from sqlanon.state.source import (
    INTEGER,
    NUMERIC,
    Source,
    bounds_relation,
    check_names,
    check_target,
    check_unchanged,
    idents,
    profile_source,
    relation,
    release_schema,
    render_sql,
    resolve_source,
)

KE_POLICIES = ("auto", "merge", "defer", "paper")


def release_ke(
    session: Session,
    source: str,
    family: str,
    *,
    key: str,
    sensitive: str,
    quasi: Sequence[str],
    k: int,
    e: float,
    policy: str = "auto",
    progress: Callable[[str, int], None] | None = None,
    domain_name: str | None = None,
) -> dict[str, Any]:
    """Publish the next (k,e)-anonymous version of ``family`` from ``source``.

    The release composes with every earlier release of its domain (``domain_name``, or
    decided as :mod:`sqlanon.state.domains` says): old cells stay whole or absent whole, and a
    cell that cannot meet (k,e) is held back. Returns a summary: version, table, rows
    published, groups, rows held back (never published yet) and suppressed (published
    before), sum of errors, and the static optimum of the current table. ``progress``,
    if given, is called as ``progress(stage, count)`` after each long step: "rows read",
    "groups built", "rows written".
    """
    k, e = _check_ke_parameters(k, e, policy)
    if not isinstance(key, str) or not isinstance(sensitive, str):
        raise ConfigError("key and sensitive must each name one column")
    family = sqltext.check_family(family)
    quasi = check_names(family, quasi, [sensitive], key)
    if not quasi:
        raise ConfigError(
            "quasi must list at least one column: the columns analysts filter and group by "
            "(a release without any would show only shuffled values and group ids)"
        )
    domain_name = domains.check_domain(domain_name)
    if policy == "paper" and session.dialect == "spark":
        raise ConfigError(
            "policy 'paper' (the seeds' rule, record by record, for reproducing their "
            "figures) runs on DuckDB and PostgreSQL only; on Spark use auto, merge or defer"
        )
    with session.transaction():
        session.lock_family(family)
        src = resolve_source(session, source)
        key = src.column(key, "key")
        sensitive = src.column(sensitive, "sensitive")
        quasi = [src.column(c, "quasi") for c in quasi]
        check_names(family, quasi, [sensitive], key)  # '"age"' and 'age' are one column
        if not NUMERIC.search(src.columns[sensitive].lower()):
            raise ConfigError(
                f"sensitive column {sensitive!r} is {src.columns[sensitive]}; (k,e) needs a "
                "numeric column (cast it in a view, or use the lHD model for categories)"
            )
        last = catalog.latest(session, family)
        if last is not None and last.model != "ke":
            raise ConfigError(f"family {family!r} is an {last.model} family, not (k,e)")
        scope = open_domain(session, src, key, last, domain_name, [sensitive])
        parameters = {
            "source": src.label,
            "key": key,
            "sensitive": sensitive,
            "quasi": quasi,
            "k": k,
            "e": e,
            "policy": policy,
            "domain_attributes": scope.attributes,
            **release_schema(session, family, last),
        }
        check_unchanged(family, last, parameters, ("source", "key", "sensitive", "quasi", "k", "e"))
        version = 1 if last is None else last.version + 1
        table = check_target(session, family, version)
        source_rows = profile_source(session, src, key, sensitive)
        applied = ke_engine.release_ke(
            session, src=src, family=family, key=key, sensitive=sensitive, quasi=quasi, k=k,
            e=e, policy=policy, scope=scope, last=last, version=version,
            table=table, progress=progress,
        )  # fmt: skip
        if applied is not None:
            return record_engine_release(
                session, applied, family, version, table, src, parameters, source_rows, scope,
                last, k, e,
            )  # fmt: skip
        if session.dialect == "spark":  # the row path's SQL is DuckDB's and PostgreSQL's
            raise ConfigError(
                f"domain {scope.name!r} has changed sensitive values and constrains a column "
                f"this release publishes as a quasi-identifier ({', '.join(quasi)}); on Spark "
                "sqlanon cannot release that yet: release it from DuckDB or PostgreSQL, or "
                "leave the constrained column out of quasi"
            )

        q = session.quote_ident
        others = [a for a in scope.attributes if a != sensitive]
        read = render_sql(
            session,
            "ke_read_source",
            key=q(key),
            sensitive=q(sensitive),
            hashed=idents(session, [*quasi, sensitive], "src"),
            **scope.hashes(session, key),
            columns=idents(session, others or [sensitive], "src"),
            source=src.qualified(session),
        )
        # Read only what this release needs (each column of 10^6 rows costs PostgreSQL
        # ~0.1 s): a first version has no earlier state to compare against, and integer
        # keys come as they are (as text they cost 0.4 s more, read and converted back).
        wanted = [
            "record_value AS record_key"
            if INTEGER.search(src.columns[key].lower())
            else "record_key",
            "s",
            "row_hash",
            "value_hash",
        ]
        if last is not None:
            wanted += ["prev_group", "published_before", "known", "changed"]
        if scope.last is not None:
            wanted += ["domain_cell", "value_changed", *(q(a) for a in others)]
        read = f"SELECT {', '.join(wanted)} FROM ({read}\n) AS r"  # noqa: S608
        rows = session.query_arrays(read, scope.read_parameters(family, last))
        keys, values = rows["record_key"], rows["s"].astype(np.float64)
        if progress is not None:
            progress("rows read", int(keys.size))
        bad = ~np.isfinite(values)
        if bad.any():
            shown = ", ".join(str(x) for x in keys[bad][:10])
            raise ConfigError(
                f"sensitive column {sensitive!r} has {int(bad.sum())} NaN or infinite values "
                f"(keys {shown}); fix or filter them"
            )
        if scope.last is None:
            rows["domain_cell"] = np.full(keys.size, -1, dtype=np.int64)
        changes = live.apply_changes(session, scope.name, scope.last, last, src, key, keys, rows)
        ghosts = live.read_ghosts(
            session, scope.name, scope.last, family, last, src, scope.attributes
        )
        live_rows = keys.size
        own_group = np.full(keys.size, -1, dtype=np.int64)
        if last is not None:
            own_group = np.where(rows["published_before"], rows["prev_group"], -1).astype(np.int64)
        if ghosts.count:
            keys = np.concatenate([keys.astype(str).astype(object), ghosts.ids])
            values = np.concatenate([values, ghosts.values[sensitive].astype(np.float64)])
            own_group = np.concatenate(
                [own_group, np.where(ghosts.published_before, ghosts.prev_group, -1)]
            )
        raw_cell = np.concatenate([rows["domain_cell"].astype(np.int64), ghosts.cell])
        prior = domains.read_cells(session, scope.last, raw_cell)
        attribute_values = {sensitive: values}
        for a in others:
            attribute_values[a] = (
                np.concatenate([np.asarray(rows[a], dtype=object), ghosts.values[a]])
                if ghosts.count
                else rows[a]
            )
        chains = live.chains(session, scope.name, keys)

        def planned(keep: np.ndarray) -> tuple[np.ndarray, ke_plan.KePlan]:
            idx = np.flatnonzero(keep)
            p = ke_incremental.plan_in_cells(
                values[idx], prior.select(idx), sensitive, k, e, policy, own_group=own_group[idx]
            )
            group = np.full(keys.size, -1, dtype=np.int64)
            group[idx] = p.group
            return group, p

        with explaining_paper_cells(session, scope, policy):
            group, plan, cells, chain_held = plan_live(
                planned, prior, Requirement.ke(sensitive, k, e), attribute_values, chains
            )
        if policy != "paper":
            refuse_unsafe(prior, cells, {sensitive: values})
        chosen = group >= 0
        same = unchanged(last, changes, ghosts, rows, chosen)
        if same is not None:
            return same
        if not chosen[:live_rows].any():
            raise InfeasibleError(
                f"no record of {src.label} can be published under k={k}, e={e:g} yet: "
                f"{int((prior.cell >= 0).sum())} were published by earlier releases of domain "
                f"{scope.name!r} in cells that cannot meet it, and the others cannot form a "
                "valid group; lower k or e, or release when more rows have arrived"
            )
        if progress is not None:
            progress("groups built", int(plan.groups))
        ghost_rows = int(chosen[live_rows:].sum())
        write_rows(
            session,
            src,
            key,
            quasi,
            sensitive,
            table,
            keys,
            values,
            group,
            cells,
            rows,
            live_rows,
            ghosts,
        )
        if progress is not None:
            progress("rows written", int(chosen.sum()))
        write_state(
            session, family, version, scope, src, key, keys, live_rows, prior, cells, ghosts
        )
        summary = catalog.Release(
            family=family,
            version=version,
            table_name=table,
            model="ke",
            source=src.label,
            parameters=parameters,
            **left_out_counts(chosen, prior, live_rows),
            groups=int(plan.groups),
            sum_of_errors=float(plan.sum_of_errors),
            source_rows=source_rows,
            metrics={
                "static_optimum": plan.static_optimum,
                # the yardstick of metrics.error_ratio: the same rows, grouped optimally
                "published_optimum": ke_static.static_optimum(values[chosen], k, e),
                **changes.as_metrics(),
                "ghosts": ghost_rows,
                "chain_held_back": chain_held,
            },
            domain=scope.name,
            seq=scope.seq,
        )
        publish(session, summary, _readable(session, table))
    return summary_of(summary)


def record_engine_release(
    session: Session,
    applied: ke_engine.Applied,
    family: str,
    version: int,
    table: str,
    src: Source,
    parameters: dict[str, Any],
    source_rows: int,
    scope: DomainScope,
    last: catalog.Release | None,
    k: int,
    e: float,
) -> dict[str, Any]:
    """The summary of a release the engine path made: its view, grants and catalog row
    (or the latest summary, ``unchanged``, when it would publish nothing new)."""
    if applied.unchanged:
        assert last is not None
        return {**summary_of(last), "unchanged": True}
    plan = applied.plan
    assert plan is not None
    summary = catalog.Release(
        family=family,
        version=version,
        table_name=table,
        model="ke",
        source=src.label,
        parameters=parameters,
        **applied.counts,
        groups=int(plan.groups),
        sum_of_errors=float(plan.sum_of_errors),
        source_rows=source_rows,
        metrics={
            "static_optimum": plan.static_optimum,
            "published_optimum": applied.published_optimum,
            **applied.changes,
            "ghosts": applied.ghosts,
            "chain_held_back": applied.chain_held,
        },
        domain=scope.name,
        seq=scope.seq,
    )
    publish(session, summary, _readable(session, table))
    return summary_of(summary)


def _readable(session: Session, table: str) -> list[str]:
    """What analysts may read of a (k,e) release besides its view: its table and its
    bounds table."""
    return [relation(session, table), bounds_relation(session, table)]


def _check_ke_parameters(k: object, e: object, policy: object) -> tuple[int, float]:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise ConfigError(f"k must be a whole number >= 2, got {k!r}")
    if isinstance(e, bool) or not isinstance(e, (int, float, np.number)):
        raise ConfigError(f"e must be a number >= 0, got {e!r}")
    if math.isnan(float(e)) or float(e) < 0 or math.isinf(float(e)):
        raise ConfigError(f"e must be a finite number >= 0, got {e!r}")
    if policy not in KE_POLICIES:
        raise ConfigError(f"policy must be one of {', '.join(KE_POLICIES)}, got {policy!r}")
    return int(k), float(e)
