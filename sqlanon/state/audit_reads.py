"""The audit: replay the attacker of a domain over every release of it.

A domain is the people behind a source (MODELS.md, "Cells"): its releases, of every
family and both models, compose, so the audit of a family is the audit of its domain.
The attack is pure (:func:`sqlanon.attacker.replay.audit_domain`); this module reads what
it needs: the domain's releases in order (the catalog), the group each release
published each record in (``sqlanon.members``, status 'published'; never the
planner's ``cell_id``: the attacker is independent of the planner's bookkeeping), the
true values of every sensitive attribute the releases published, and the chains of
changed values (``sqlanon.links``). It runs with the data owner's rights.

Live tables (MODELS.md, "Changing tables"): a published record deleted since, or the
old incarnation of a changed value, is a ghost: it keeps its place in every release
under its ghost id, an ordinary member of its groups, and its values come from
``sqlanon.kept_values``; a live record's come from each release's source (or from
``sqlanon.kept_values`` when the source changed after the domain's last release: the
audit replays what was published).

One row per release of the domain, in order::

    {"family": "patients_ke", "version": 2, "seq": 3, "model": "ke",
     "domain": "main.patients", "exposed": 2, "newly_exposed": 2, "by_cell": 2,
     "by_subtraction": 2, "by_comparison": 0, "by_chain": 0,
     "subtraction_complete": true}

``exposed`` counts the records an attacker holding the releases up to this one pins
below a requirement by any check (at this release or before), ``newly_exposed`` those
first exposed here; ``by_<check>`` what each check finds with these releases (see
:mod:`sqlanon.attacker`). With ``records=True`` each row also has ``records``: the
keys behind each count (owner only: keys are private).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sqlanon import sqltext
from sqlanon.attacker.history import AttackedRelease
from sqlanon.attacker.replay import audit_domain
from sqlanon.errors import ConfigError
from sqlanon.models.cells import Requirement
from sqlanon.session import Session
from sqlanon.state import catalog
from sqlanon.state.source import INTEGER as _INTEGER
from sqlanon.state.source import NUMERIC as _NUMERIC
from sqlanon.state.source import resolve_source

_COUNTS = ("exposed", "newly_exposed", "by_cell", "by_subtraction", "by_comparison", "by_chain")


def audit_family(session: Session, family: str, records: bool = False) -> list[dict[str, Any]]:
    """The audit of ``family``'s domain: one row per release of the domain (every
    family), so that what other families' releases give away shows."""
    family = sqltext.check_family(family)
    catalog.require_family(session, family)
    return audit_domain_of(session, family, records=records)


def audit_domain_of(
    session: Session, family_or_domain: str, records: bool = False
) -> list[dict[str, Any]]:
    """One row per release of a domain, in the domain's order. ``family_or_domain``
    names a release family (its domain is audited) or a domain."""
    every = catalog.releases(session)
    domains = {r.domain for r in every if r.family == family_or_domain}
    if not domains:
        domains = {r.domain for r in every if r.domain == family_or_domain}
    if not domains:
        families = sorted({r.family for r in every})
        raise ConfigError(
            f"no release family or domain {family_or_domain!r}; known families: "
            f"{', '.join(families) or 'none yet'}"
        )
    return _audit(session, _in_order(session, [r for r in every if r.domain in domains]), records)


def audit_versions(
    session: Session, refs: Sequence[tuple[str, int]], records: bool = False
) -> list[dict[str, Any]]:
    """Audit the given ``(family, version)`` releases as one history, in the order given,
    whatever their domains: records are linked by key. Independent re-releases (a new
    family, or a copy of the table, per version) are audited this way."""
    releases = {(r.family, r.version): r for r in catalog.releases(session)}
    missing = [tuple(ref) for ref in refs if (ref[0], ref[1]) not in releases]
    if missing:
        raise ConfigError(f"no such releases: {missing}")
    return _audit(session, [releases[(ref[0], ref[1])] for ref in refs], records)


def _in_order(session: Session, releases: list[catalog.Release]) -> list[catalog.Release]:
    """A domain's releases by ``seq``; by creation when some have none (made before
    domains existed)."""
    if all(r.seq > 0 for r in releases):
        return sorted(releases, key=lambda r: r.seq)
    made = session.query(sqltext.load(session.dialect, "releases_by_creation"))
    position = {(f, int(v)): i for i, (f, v) in enumerate(made)}
    return sorted(releases, key=lambda r: position[(r.family, r.version)])


def _requirement(r: catalog.Release) -> tuple[Requirement, tuple[str, ...]]:
    """What the release promised, and the sensitive attributes it published."""
    p = r.parameters
    if r.model == "ke":
        return Requirement.ke(p["sensitive"], p["k"], p["e"]), (p["sensitive"],)
    if r.model == "lhd":
        names = p["sensitive"]
        names = (names,) if isinstance(names, str) else tuple(names)
        return Requirement.lhd(names, p["l"]), names
    raise ConfigError(f"{r.family} v{r.version}: the audit knows no model {r.model!r}")


def _read(
    session: Session, r: catalog.Release, published: Sequence[str], others: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Keys (ghost ids for ghosts) and groups of the records ``r`` published, and their
    values of each attribute with where they were found: a live record's from the
    source now, a ghost's as the domain keeps it. ``published`` (what ``r`` published)
    must be found for every record; ``others`` (what other releases of the audit
    published: the chain check compares every attribute) where they can be."""
    p = r.parameters
    source = resolve_source(session, p["source"])
    q = session.quote_ident
    template = sqltext.load(session.dialect, "audit_published_values")
    keys = groups = np.zeros(0, dtype=object)
    values = {}
    for a in [*published, *(a for a in others if a not in published)]:
        required = a in published
        if a not in source.columns:
            if not required:
                continue
            raise ConfigError(
                f"{r.family} v{r.version} published {a!r}, which {p['source']} no longer "
                "has: the audit needs its true values"
            )
        text = sqltext.render(
            template, key=q(p["key"]), column=q(a), source=source.qualified(session)
        )
        rows = session.query_arrays(text, [r.family, r.version, r.domain, a])
        keys = np.asarray(rows["record_key"], dtype=object)
        groups = np.asarray(rows["group_id"]).astype(np.int64)
        found = np.asarray(rows["found"], dtype=bool)
        if required and not found.all():
            lost = ~found
            ghost = np.asarray(rows["ghost"], dtype=bool)
            what = (
                f"ghost(s) (deleted or changed records) {r.family} v{r.version} published "
                f"have no kept value of {a!r}"
                if ghost[lost].all()
                else f"record(s) {r.family} v{r.version} published are no longer in {p['source']}"
            )
            raise ConfigError(
                f"{int(lost.sum())} {what} (e.g. key {keys[lost][0]!r}): the audit needs the "
                "true values of every published record"
            )
        if np.unique(keys).size != keys.size:
            raise ConfigError(
                f"the key {p['key']!r} of {p['source']} is not unique any more: the audit "
                "cannot tell which row was published"
            )
        values[a] = (_typed(np.asarray(rows["value"], dtype=object), source.columns[a]), found)
    return keys, groups, values


def _typed(text: np.ndarray, column_type: str) -> np.ndarray:
    """Values read as text (as the domain keeps them) back as the column's type:
    numbers as int64 or float64, anything else as text (equal values, equal text)."""
    kind = column_type.lower()
    if _INTEGER.search(kind):
        try:
            return np.array([int(v) for v in text.tolist()], dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            pass
    if _NUMERIC.search(kind):
        return np.array([np.nan if v is None else float(v) for v in text.tolist()])
    return text


def _chains(
    session: Session, domains: Sequence[str | None], index: dict[str, int]
) -> list[tuple[int, ...]]:
    """The changed people's incarnations among the audited records, oldest first
    (``sqlanon.links`` of each domain); incarnations never published are left out."""
    out = []
    for name in sorted({d for d in domains if d is not None}):
        after = dict(session.query(sqltext.load(session.dialect, "live_links"), [name]))
        for start in sorted(set(after) - set(after.values())):
            path = [start]
            while path[-1] in after and len(path) <= len(after):
                path.append(after[path[-1]])
            chain = tuple(index[x] for x in path if x in index)
            if len(chain) >= 2:
                out.append(chain)
    return out


class _Values:
    """One attribute over the domain's records, filled release by release; a record
    read again must have the same value (NULL equals NULL)."""

    def __init__(self, name: str, n: int) -> None:
        self.name = name
        self.read = np.zeros(n, dtype=bool)
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.first = np.full(n, None, dtype=object)

    def add(
        self, rows: np.ndarray, column: np.ndarray, r: catalog.Release, keys: np.ndarray
    ) -> None:
        boxed = column.astype(object)
        again = self.read[rows]
        old, new = self.first[rows[again]], boxed[again]
        differ = np.flatnonzero(old != new)
        for i in differ.tolist():
            if not (_missing(old[i]) and _missing(new[i])):
                raise ConfigError(
                    f"record {keys[rows[again][i]]!r} has {self.name} = {new[i]!r} in the "
                    f"source of {r.family} v{r.version} and {old[i]!r} in an earlier "
                    "release's: the audit assumes a record's values do not change"
                )
        self.first[rows[~again]] = boxed[~again]
        self.read[rows] = True
        self.parts.append((rows, column))

    def column(self) -> np.ndarray:
        """Numbers as float64 (NaN where unread or NULL) when every read was numeric,
        else objects (None where unread)."""
        if self.parts and all(c.dtype.kind in "biuf" for _, c in self.parts):
            out = np.full(self.read.size, np.nan)
            for rows, column in self.parts:
                out[rows] = column
            return out
        return self.first


def _audit(
    session: Session, chosen: Sequence[catalog.Release], records: bool
) -> list[dict[str, Any]]:
    promised = [_requirement(r) for r in chosen]
    every = sorted({a for _, published in promised for a in published})
    reads = [
        _read(session, r, published, every)
        for r, (_, published) in zip(chosen, promised, strict=True)
    ]
    keys, index = np.unique(
        np.concatenate([k for k, _, _ in reads] or [np.zeros(0, dtype=object)]).astype(str),
        return_inverse=True,
    )
    n = keys.size
    attacked = []
    values: dict[str, _Values] = {}
    offset = 0
    for r, (requirement, published), (read_keys, groups, read_values) in zip(
        chosen, promised, reads, strict=True
    ):
        rows = index[offset : offset + read_keys.size]
        offset += read_keys.size
        group = np.full(n, -1, dtype=np.int64)
        group[rows] = groups
        attacked.append(AttackedRelease(group, requirement, published))
        for a, (column, found) in read_values.items():
            values.setdefault(a, _Values(a, n)).add(rows[found], column[found], r, keys)
    columns = {a: v.column() for a, v in values.items()}
    chains = _chains(session, [r.domain for r in chosen], {k: i for i, k in enumerate(keys)})
    results = audit_domain(columns, attacked, chains=chains)
    out = []
    for position, (r, result) in enumerate(zip(chosen, results, strict=True), start=1):
        row: dict[str, Any] = {
            "family": r.family,
            "version": r.version,
            "seq": r.seq or position,
            "model": r.model,
            "domain": r.domain,
            **result.counts(),
            "subtraction_complete": result.subtraction_complete,
        }
        if records:
            row["records"] = {c: keys[getattr(result, c)].tolist() for c in _COUNTS}
        out.append(row)
    return out


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)
