"""Publish the next (k,e)-anonymous version of a family: the checks, then the release
pipeline (:mod:`~sqlanon.release.pipeline`) on the engine path
(:mod:`~sqlanon.release.ke_engine`), or on the row path (:mod:`~sqlanon.release.ke_rows`)
for the seeds' ``paper`` policy and what the engine path declines."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.hierarchy import check_dataset
from sqlanon.release import ke_engine, ke_rows, pipeline
from sqlanon.release.domain_scope import open_domain
from sqlanon.release.ke_job import KeJob
from sqlanon.session import Session
from sqlanon.state import catalog, domains
from sqlanon.state.source import (
    NUMERIC,
    check_names,
    check_target,
    check_unchanged,
    profile_source,
    release_schema,
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
    dry_run: bool = False,
    dataset: str | None = None,
) -> dict[str, Any]:
    """Publish the next (k,e)-anonymous version of ``family`` from ``source``.

    The release composes with every earlier release of its domain (``domain_name``, or
    decided as :mod:`sqlanon.state.domains` says): old cells stay whole or absent whole, and a
    cell that cannot meet (k,e) is held back. Returns a summary: version, table, rows
    published, groups, rows held back (never published yet) and suppressed (published
    before), sum of errors, and the static optimum of the current table. ``progress``,
    if given, is called as ``progress(stage, count)`` after each long step: "rows read",
    "groups built", "rows written".

    ``dry_run``: read and plan exactly as the release would (same refusals), write
    nothing, and return the summary it would return, marked ``dry_run``, with why
    records are left out, the planner's utility and what the domain would constrain
    (:func:`sqlanon.release.pipeline.preview_of`).
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
    if dataset is not None:
        dataset = check_dataset(dataset)
    if policy == "paper" and session.dialect == "spark":
        raise ConfigError(
            "policy 'paper' (the seeds' rule, record by record, for reproducing their "
            "figures) runs on DuckDB and PostgreSQL only; on Spark use auto, merge or defer"
        )

    def body() -> dict[str, Any]:
        session.lock_family(family)
        job = _job(
            session, source, family, key, sensitive, quasi, k, e, policy, progress, domain_name,
            dry_run, dataset,
        )  # fmt: skip
        return pipeline.release(session, job, ke_engine.release_ke, ke_rows.STEPS)

    return pipeline.transaction(session, body, dry_run=bool(dry_run))


def _job(
    session: Session,
    source: str,
    family: str,
    key: str,
    sensitive: str,
    quasi: list[str],
    k: int,
    e: float,
    policy: str,
    progress: Callable[[str, int], None] | None,
    domain_name: str | None,
    dry_run: bool,
    dataset: str | None = None,
) -> KeJob:
    """The release's job, inside its transaction once its family is locked: the source
    and its columns checked, its domain decided, the version's table name free."""
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
    scope = open_domain(session, src, key, last, domain_name, [sensitive], dataset)
    parameters = {
        "source": src.label,
        # what the source is (a copy, view or dbt model of): names a new domain and
        # (lHD) the hierarchies its quasi-identifiers are looked up under
        "dataset": src.table if dataset is None else dataset,
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
    return KeJob(
        src=src, family=family, key=key, quasi=quasi, scope=scope, last=last,
        version=version, table=table, parameters=parameters,
        source_rows=profile_source(session, src, key, sensitive), progress=progress,
        sensitive=sensitive, k=k, e=e, policy=policy, dry_run=dry_run,
    )  # fmt: skip


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
