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
    if models != {"ke"}:
        raise ConfigError(f"the audit covers (k,e) families here; got models {sorted(models)}")
    first = chosen[0].parameters
    for r in chosen:
        same = all(r.parameters[p] == first[p] for p in ("source", "key", "sensitive", "k", "e"))
        if not same:
            raise ConfigError("audited releases must share source, key, sensitive, k and e")
    src = resolve_source(session, first["source"])
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


def _row(result: Any) -> dict[str, Any]:
    return {
        "exposed": int(result.exposed),
        "newly_exposed": int(result.newly_exposed),
        **{f"by_{check}": int(n) for check, n in result.by_check.items()},
    }
