"""The audit: replay an attacker holding every version of a family.

The attacks themselves are pure (``sqlanon.audit_core`` for (k,e)); this module reads
what they need from the catalog, the private state and the source. It runs with the
data owner's rights: it needs the true values to tell what an attacker could learn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sqlanon import audit_core, catalog, sqltext
from sqlanon.backends.base import Session
from sqlanon.errors import ConfigError
from sqlanon.release import resolve_source


def audit_family(session: Session, family: str) -> list[dict[str, Any]]:
    """One row per version of ``family``: records exposed so far, and by which check."""
    sqltext.check_family(family)
    versions = catalog.require_family(session, family)
    if versions[0].model == "lhd":
        return _audit_lhd_family(session, versions)
    return audit_versions(session, [(r.family, r.version) for r in versions])


def audit_versions(session: Session, refs: Sequence[tuple[str, int]]) -> list[dict[str, Any]]:
    """Audit a history made of any (family, version) releases of one source, in order.

    Independent re-releases (a new family per version) are audited this way too: the
    attacker links records across families exactly as across versions.
    """
    releases = {(r.family, r.version): r for r in catalog.releases(session)}
    missing = [ref for ref in refs if (ref[0], ref[1]) not in releases]
    if missing:
        raise ConfigError(f"no such releases: {missing}")
    chosen = [releases[(ref[0], ref[1])] for ref in refs]
    models = {r.model for r in chosen}
    if "lhd" in models:
        return _lhd_refs(session, refs, chosen)
    if models != {"ke"}:
        raise ConfigError(f"the audit covers (k,e) families here; got models {sorted(models)}")
    first = chosen[0].parameters
    for r in chosen:
        same = all(r.parameters[p] == first[p] for p in ("key", "sensitive", "k", "e"))
        if not same:
            raise ConfigError("audited releases must share key, sensitive, k and e")
    src = resolve_source(session, chosen[-1].parameters["source"])
    q = session.quote_ident
    text = sqltext.render(
        sqltext.load(session.dialect, "ke_audit_history"),
        sensitive=q(first["sensitive"]),
        key=q(first["key"]),
        source=src.qualified(session),
    )
    history = []
    for position, r in enumerate(chosen, start=1):
        rows = session.query_arrays(text, [r.family, r.version])
        history.append(
            audit_core.KeVersion(
                version=position,
                keys=np.asarray(rows["record_key"], dtype=object),
                group=np.asarray(rows["group_id"], dtype=np.int64),
                values=np.asarray(rows["s"], dtype=np.float64),
            )
        )
    results = audit_core.audit_ke_history(history, first["k"], first["e"])
    return [
        {"family": ref[0], "version": ref[1], **_row(result)}
        for ref, result in zip(refs, results, strict=True)
    ]


def _lhd_refs(
    session: Session, refs: Sequence[tuple[str, int]], chosen: Sequence[catalog.Release]
) -> list[dict[str, Any]]:
    # Records are linked by key across the releases given, even of different sources
    # (two copies of one table released independently).
    lhd = [r for r in chosen if r.model == "lhd"]
    sensitive = sorted({s for r in lhd for s in r.parameters["sensitive"]})
    results = audit_lhd_history(session, chosen, min(r.parameters["l"] for r in lhd), sensitive)
    for result in results:
        result.pop("_exposed")
    return [
        {"family": ref[0], "version": ref[1], **result}
        for ref, result in zip(refs, results, strict=True)
    ]


def _row(result: Any) -> dict[str, Any]:
    return {
        "exposed": int(result.exposed),
        "newly_exposed": int(result.newly_exposed),
        **{f"by_{check}": int(n) for check, n in result.by_check.items()},
    }


def audit_lhd_history(
    session: Session,
    history: Sequence[catalog.Release],
    l: int,  # noqa: E741
    sensitive: Sequence[str],
) -> list[dict[str, Any]]:
    """One row per prefix of ``history`` (releases of one source, oldest first): records
    an attacker holding those releases pins to fewer than ``l`` values of a sensitive
    attribute in ``sensitive``, by one pair of releases (``by_comparison``, MODELS.md's
    pairwise constraint) or by intersecting all of them per cell (``by_cell``)."""
    from sqlanon.models.lhd import comparison_attack, comparison_violations
    from sqlanon.release_lhd import earlier_release

    published = [
        session.query(sqltext.load(session.dialect, "lhd_published_classes"), [r.family, r.version])
        for r in history
    ]
    keys = np.array(sorted({k for rows in published for k, _ in rows}), dtype=object)
    releases = []
    for r in history:
        names = r.parameters["sensitive"]
        names = [names] if isinstance(names, str) else names
        releases.append(earlier_release(session, r, [s for s in names if s in sensitive], keys))
    by_pair = np.zeros(keys.size, dtype=bool)
    before = np.zeros(keys.size, dtype=bool)
    rows = []
    for i, new in enumerate(releases):
        for old in releases[:i]:
            bad = {(v.new_class, v.old_class) for v in comparison_violations(new, [old], l)}
            if bad:
                pairs = zip(new.class_of_record.tolist(), old.class_of_record.tolist(), strict=True)
                by_pair |= np.array([p in bad for p in pairs], dtype=bool)
        by_cell = np.zeros(keys.size, dtype=bool)
        by_cell[comparison_attack(releases[: i + 1], l).exposed_records] = True
        exposed = by_pair | by_cell
        rows.append(
            {
                "exposed": int(exposed.sum()),
                "newly_exposed": int((exposed & ~before).sum()),
                "by_comparison": int(by_pair.sum()),
                "by_cell": int(by_cell.sum()),
                "_exposed": exposed,
            }
        )
        before = exposed
    return rows


def _audit_lhd_family(
    session: Session, versions: Sequence[catalog.Release]
) -> list[dict[str, Any]]:
    """Each version of an lHD family against every release of its source, up to it, that
    shares a sensitive attribute (other families and (k,e) releases included)."""
    from sqlanon.release_lhd import related_releases

    first = versions[0].parameters
    history = [r for r, _ in related_releases(session, first["source"], first["sensitive"])]
    results = audit_lhd_history(session, history, first["l"], first["sensitive"])
    out = []
    previous: np.ndarray | None = None
    for r, result in zip(history, results, strict=True):
        if r.family != versions[0].family:
            continue
        exposed = result.pop("_exposed")
        newly = exposed if previous is None else exposed & ~previous
        previous = exposed
        out.append(
            {"family": r.family, "version": r.version, **result, "newly_exposed": int(newly.sum())}
        )
    return out
