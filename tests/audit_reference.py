"""The audit's reads as they were before issue 27, one entry per record: the reference
the aggregated path (``sqlanon.state.audit_reads``, one entry per distinct history) is
compared with. Its SQL is its own (below), independent of the grouping SQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sqlanon import sqltext
from sqlanon.attacker.history import AttackedRelease
from sqlanon.attacker.replay import audit_domain
from sqlanon.errors import ConfigError
from sqlanon.session import Session
from sqlanon.state import catalog
from sqlanon.state.audit_reads import _COUNTS, _requirement
from sqlanon.state.source import INTEGER as _INTEGER
from sqlanon.state.source import NUMERIC as _NUMERIC
from sqlanon.state.source import resolve_source

PUBLISHED_VALUES = """
-- The records one release ($1, $2) published, the group each was published in, and its
-- true value of one column as published (owner only), as text: a ghost's (a deleted
-- record, or the old incarnation of a changed value) as domain $3 keeps it for
-- attribute $4; a live record's from the source, or as kept when the source changed
-- since the domain's last release (the change is not published yet). found is false
-- for a published record that is neither in the source nor a ghost with a kept value.
-- Ordered by key, so that one release's reads of several columns line up.
SELECT m.record_key, m.group_id, coalesce(m.ghost, false) AS ghost,
       CASE WHEN coalesce(m.ghost, false) THEN k.value IS NOT NULL
            ELSE src.{key} IS NOT NULL END AS found,
       CASE WHEN coalesce(m.ghost, false) THEN k.value
            ELSE coalesce(k.value, CAST(src.{column} AS {text_type})) END AS value
FROM sqlanon.members AS m
LEFT JOIN {source} AS src
  ON CAST(src.{key} AS {text_type}) = m.record_key AND NOT coalesce(m.ghost, false)
LEFT JOIN sqlanon.kept_values AS k
  ON k.domain = $3 AND k.record_key = m.record_key AND k.attribute = $4
WHERE m.family = $1 AND m.version = $2 AND m.status = 'published'
ORDER BY m.record_key
"""


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
    template = sqltext.spell(PUBLISHED_VALUES, session.dialect)
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


def audit_per_record(
    session: Session, chosen: Sequence[catalog.Release], records: bool
) -> list[dict[str, Any]]:
    """The audit as sqlanon ran it before issue 27: one entry per record."""
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
