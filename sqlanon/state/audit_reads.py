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

The records stay in the engine (issue 27): each release's reads go to a temporary
table (``audit_read.sql``), the checks that stop the audit (lost values, keys not
unique, values that differ between reads) run there, and the driver reads one row per
distinct history, what every release showed of a record (its group or absence) with
its values, and how many records share it (``audit_histories.sql``). Records with the
same history and values are interchangeable to every check of the attacker, which
weighs each entry by its records; an incarnation of a changed person (``sqlanon.links``)
stays an entry of its own for the chain check, and so does every record when the
owner asks for the keys (``records=True``).

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


def _stage(
    session: Session, chosen: Sequence[catalog.Release], promised: Sequence[Any], every: list[str]
) -> list[dict[int, str]]:
    """Fill ``_sqlanon_audit`` (in the engine) with what each release published: per
    record its group and its value of each attribute, and where it was found (a live
    record's from the source now, a ghost's as the domain keeps it). What a release
    published must be found for every record; what other releases of the audit
    published (the chain check compares every attribute) where it can be. Returns,
    per attribute, the type of its column in each release's source that has it."""
    q = session.quote_ident
    session.execute("DROP TABLE IF EXISTS _sqlanon_audit")
    session.execute(sqltext.load(session.dialect, "audit_reads_table"))
    template = sqltext.load(session.dialect, "audit_read")
    types: list[dict[int, str]] = [{} for _ in every]
    for position, (r, (_, published)) in enumerate(zip(chosen, promised, strict=True)):
        p = r.parameters
        source = resolve_source(session, p["source"])
        for j, a in enumerate(every):
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
            session.execute(text, [r.family, r.version, r.domain, a, position, j, required])
            types[j][position] = source.columns[a]
    return types


def _refuse_unreadable(
    session: Session, chosen: Sequence[catalog.Release], every: list[str]
) -> None:
    """Refuse published records whose values are lost, and keys that are not unique."""
    found = session.query_dicts(sqltext.load(session.dialect, "audit_problems"))
    for row in found:
        r, a = chosen[int(row["position"])], every[int(row["attribute"])]
        p = r.parameters
        if int(row["lost"]):
            what = (
                f"ghost(s) (deleted or changed records) {r.family} v{r.version} published "
                f"have no kept value of {a!r}"
                if int(row["only_ghosts"])
                else f"record(s) {r.family} v{r.version} published are no longer in {p['source']}"
            )
            raise ConfigError(
                f"{int(row['lost'])} {what} (e.g. key {row['example']!r}): the audit needs "
                "the true values of every published record"
            )
        raise ConfigError(
            f"the key {p['key']!r} of {p['source']} is not unique any more: the audit "
            "cannot tell which row was published"
        )


def _refuse_changed_values(
    session: Session,
    chosen: Sequence[catalog.Release],
    every: list[str],
    types: list[dict[int, str]],
) -> None:
    """A record read again must have the same value (NULL equals NULL), compared as each
    source types it. The engine sends only the reads that differ as text."""
    rows = session.query(sqltext.load(session.dialect, "audit_value_conflicts"))
    first: dict[tuple[str, int], Any] = {}
    for key, j, position, text in rows:
        j, position = int(j), int(position)
        value = _typed(np.array([text], dtype=object), types[j][position])[0]
        value = value.item() if hasattr(value, "item") else value
        old = first.setdefault((key, j), value)
        if old is not value and old != value and not (_missing(old) and _missing(value)):
            r = chosen[position]
            raise ConfigError(
                f"record {key!r} has {every[j]} = {value!r} in the source of "
                f"{r.family} v{r.version} and {old!r} in an earlier release's: the audit "
                "assumes a record's values do not change"
            )


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


def _histories(
    session: Session, releases: int, every: list[str], records: bool
) -> dict[str, np.ndarray]:
    """The audit's records, one entry per distinct history and values (its number of
    records in ``records``; ``own_key`` for an incarnation of a changed person, or for
    every record when ``records``): groups ``h0``.. per release, values ``v0``.."""
    q = session.quote_ident
    history = [q(f"h{t}") for t in range(releases)]
    values = [q(f"v{j}") for j in range(len(every))]
    a = q("a")
    text = sqltext.render(
        sqltext.load(session.dialect, "audit_histories"),
        history=sqltext.pivot("max", f"{a}.{q('group_id')}", f"{a}.{q('position')}", history),
        values=sqltext.pivot("min", f"{a}.{q('value')}", f"{a}.{q('attribute')}", values),
        names=", ".join(history + values),
    )
    return session.query_arrays(text, [records])


def _group_ids(column: np.ndarray) -> np.ndarray:
    """A release's group per entry, -1 where the release did not publish it (NULL:
    NaN in a float column, None in an object one)."""
    if column.dtype.kind in "iu":
        return column.astype(np.int64)
    if column.dtype.kind == "f":
        return np.where(np.isnan(column), -1, column).astype(np.int64)
    return np.array([-1 if _missing(g) else int(g) for g in column.tolist()], dtype=np.int64)


def _column(text: np.ndarray, types: dict[int, str]) -> np.ndarray:
    """One attribute's values (text, None where unread) as the attacker compares them:
    float64 (NaN for NULL) when every source has it as a number, else text."""
    if types and all(_NUMERIC.search(t.lower()) for t in types.values()):
        return np.array([np.nan if v is None else float(v) for v in text.tolist()])
    return np.array([None if _missing(v) else v for v in text.tolist()], dtype=object)


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


def _audit(
    session: Session, chosen: Sequence[catalog.Release], records: bool
) -> list[dict[str, Any]]:
    promised = [_requirement(r) for r in chosen]
    every = sorted({a for _, published in promised for a in published})
    try:
        types = _stage(session, chosen, promised, every)
        _refuse_unreadable(session, chosen, every)
        _refuse_changed_values(session, chosen, every, types)
        entries = _histories(session, len(chosen), every, records)
    finally:
        session.execute("DROP TABLE IF EXISTS _sqlanon_audit")
    weights = np.asarray(entries["records"]).astype(np.int64)
    keys = np.asarray(entries["own_key"], dtype=object)
    attacked = []
    for t, (requirement, published) in enumerate(promised):
        group = _group_ids(np.asarray(entries[f"h{t}"]))
        attacked.append(AttackedRelease(group, requirement, published))
    columns = {
        a: _column(np.asarray(entries[f"v{j}"], dtype=object), types[j])
        for j, a in enumerate(every)
        if types[j]
    }
    own = {k: i for i, k in enumerate(keys.tolist()) if not _missing(k)}
    chains = _chains(session, [r.domain for r in chosen], own)
    results = audit_domain(columns, attacked, chains=chains, weights=weights)
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
            row["records"] = {c: sorted(keys[getattr(result, c)].tolist()) for c in _COUNTS}
        out.append(row)
    return out


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)
