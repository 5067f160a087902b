"""Publish the next lHD-diverse version of a family: the checks, then the release
pipeline (:mod:`~sqlanon.release.pipeline`) on the engine path
(:mod:`~sqlanon.release.lhd_engine`), or on the row path
(:mod:`~sqlanon.release.lhd_rows`) for what the engine path declines.

The release composes with every earlier release of the domain (every family, both
models) through the cells they left (MODELS.md, "Cells"), around the pure planner
:func:`sqlanon.models.lhd_planner.plan_lhd`; the hierarchies of its quasi-identifiers come from
the catalog (:mod:`sqlanon.state.hierarchies`). :func:`earlier_release` reads a
published release back as the seed's :class:`EarlierRelease` (distinct values per
class), for the seed's comparison attack.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.hierarchy import check_dataset
from sqlanon.models.lhd_comparison import EarlierRelease
from sqlanon.models.lhd_defer import DEFAULT_POLICY, check_policy
from sqlanon.models.lhd_planner import ALGORITHMS, RECODINGS
from sqlanon.release import lhd_engine, lhd_rows, pipeline
from sqlanon.release.domain_scope import open_domain
from sqlanon.release.lhd_job import LhdJob
from sqlanon.session import Session
from sqlanon.state import catalog, domains
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
    dry_run: bool = False,
    recoding: str = "local",
    dataset: str | None = None,
    policy: str = DEFAULT_POLICY,
) -> dict[str, Any]:
    """Publish the next lHD-diverse version of ``family`` from ``source``.

    The release composes with every earlier release of its domain (``domain_name``, or
    decided as :mod:`sqlanon.state.domains` says) under the cell rule
    (:mod:`sqlanon.models.lhd_planner`).

    Returns the (k,e)-style summary plus ``precision_loss``, ``dm`` and ``suppressed``.
    ``progress``, if given, is called as ``progress(stage, count)`` after each long
    step: "rows read", "groups built" (classes), "rows written". ``dry_run``: plan
    and refuse as the release would, write nothing, return what it would return
    (:func:`sqlanon.release.pipeline.preview_of`). ``recoding``: ``'local'`` (each class
    at the lowest levels its members share) or ``'global'`` (one level per
    quasi-identifier for the whole release, :mod:`sqlanon.models.lhd_global`).
    ``policy``: ``publish`` places every appended record it can now; ``auto`` and
    ``defer`` may hold appended records back (within ``max_suppression``) while they can
    only form wide classes (:mod:`sqlanon.models.lhd_defer`).
    """
    sensitive = _check_lhd_parameters(l, algorithm, max_suppression, sensitive)
    _check_recoding(recoding, algorithm)
    check_policy(policy)
    if not isinstance(key, str):
        raise ConfigError("key must name one column")
    family = sqltext.check_family(family)
    quasi = check_names(family, quasi, sensitive, key)
    if not quasi:
        raise ConfigError("quasi must list at least one column (each needs a hierarchy)")
    domain_name = domains.check_domain(domain_name)
    if dataset is not None:
        dataset = check_dataset(dataset)

    def body() -> dict[str, Any]:
        session.lock_family(family)
        job = _job(
            session, source, family, key, quasi, sensitive, int(l), algorithm,
            float(max_suppression), progress, domain_name, dry_run, recoding, dataset,
            str(policy),
        )  # fmt: skip
        return pipeline.release(session, job, lhd_engine.release, lhd_rows.STEPS)

    return pipeline.transaction(session, body, dry_run=bool(dry_run))


def _job(
    session: Session,
    source: str,
    family: str,
    key: str,
    quasi: list[str],
    sensitive: list[str],
    l: int,  # noqa: E741
    algorithm: str,
    max_suppression: float,
    progress: Callable[[str, int], None] | None,
    domain_name: str | None,
    dry_run: bool,
    recoding: str,
    dataset: str | None,
    policy: str,
) -> LhdJob:
    """The release's job, inside its transaction once its family is locked: the source
    and its columns checked, its domain decided, the version's table name free."""
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
    scope = open_domain(session, src, key, last, domain_name, sensitive, dataset)
    # Attributes earlier releases constrain that this one does not publish: every
    # piece of an old cell must keep them, so they are read (never written).
    checked = [a for a in scope.before if a not in sensitive]
    anticipate = _anticipated(session, scope.name, family)
    parameters = {
        "source": src.label,
        # what the source is (a copy, view or dbt model of): names a new domain and
        # (lHD) the hierarchies its quasi-identifiers are looked up under
        "dataset": src.table if dataset is None else dataset,
        "key": key,
        "quasi": quasi,
        "sensitive": sensitive,
        "l": l,
        "algorithm": algorithm,
        "max_suppression": max_suppression,
        "recoding": recoding,
        "policy": policy,
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
    return LhdJob(
        src=src, family=family, key=key, quasi=quasi, scope=scope, last=last,
        version=version, table=table, parameters=parameters, source_rows=source_rows,
        progress=progress, sensitive=sensitive, checked=checked, l=l, algorithm=algorithm,
        max_suppression=max_suppression, read_sql=read_sql, dry_run=dry_run,
        recoding=recoding, policy=policy, anticipate=anticipate,
    )  # fmt: skip


def _anticipated(session: Session, domain: str, family: str) -> dict[str, tuple[int, float]]:
    """What the other families of ``domain`` ask of a cell, per attribute: (distinct
    values, spread), the most over their newest versions ((k,e): k and e of its
    sensitive attribute; lHD: l of each). A piece of new records planned now meets it
    too, else those families could never publish its records (a cell only shrinks)."""
    newest: dict[str, catalog.Release] = {}
    for r in catalog.domain_releases(session, domain):
        if r.family != family:
            newest[r.family] = r
    found: dict[str, tuple[int, float]] = {}
    for r in newest.values():
        p = r.parameters
        if r.model == "ke":
            asks = {p["sensitive"]: (int(p["k"]), float(p["e"]))}
        else:
            asks = {a: (int(p["l"]), 0.0) for a in p["sensitive"]}
        for a, (least, span) in asks.items():
            was = found.get(a, (0, 0.0))
            found[a] = (max(was[0], least), max(was[1], span))
    return found


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


def _check_recoding(recoding: object, algorithm: object) -> None:
    if recoding not in RECODINGS:
        raise ConfigError(
            "recoding must be 'local' (each class at its own levels) or 'global' (one "
            f"level per quasi-identifier for the whole release), got {recoding!r}"
        )
    if recoding == "global" and algorithm != "auto":
        raise ConfigError(
            f"algorithm {algorithm!r} plans local recoding; recoding 'global' searches the "
            "levels itself: leave algorithm 'auto'"
        )


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
