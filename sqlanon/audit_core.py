"""The attacker of a domain, replayed over every release of it. Pure numpy.

A domain is the people behind a source (MODELS.md, "Cells"). Its attacker holds every
release of the domain, of every family and both models, and links them by person
(at worst it knows every group's or class's membership). Records are numbered
0..n-1 across the whole domain; ``values[a][i]`` is record ``i``'s true value of
attribute ``a`` and each :class:`AttackedRelease` gives every record's group (-1:
absent), the sensitive attributes the release published (each group's multiset of
them is public) and its :class:`~sqlanon.models.cells.Requirement`.

After each release (each prefix of the list) four checks run, each naming the
records it exposes:

- ``cell`` (the worst case, the rule sqlanon enforces): a record's history is its group
  in every release so far, with "absent" once it was first published; records with the
  same history form a cell; a cell's requirement is the union (per attribute: the
  largest number of distinct values, the largest spread) of the requirements of the
  releases that published it. A cell whose multiset of some required attribute has
  fewer distinct values, or a smaller spread (max - min), than required exposes its
  records.
- ``subtraction`` (the multiset attacker): every group of every release is a known set
  (its records, and per published attribute its multiset). Whenever known set A's
  records lie strictly inside known set B's and both know attribute a, B - A is known,
  with multiset B_a - A_a; repeated to a fixed point. A record's candidates for a are
  the intersection of the distinct values of every known set holding it that knows a;
  fewer distinct candidates than required, or a candidate spread below the required
  spread, exposes it.
- ``comparison`` (seed 002's comparison attack, over every release): the same with the
  groups only, no subtraction.
- ``chain`` (MODELS.md, "Changing tables", the chain rule's worst case): ``chains``
  lists each changed person's incarnations, oldest first (a ghost of an old value,
  then the next, ...); the attacker knows that consecutive incarnations differ on the
  attributes whose values differ and agree on the others. Only incarnations published
  by then count. An incarnation's candidates are the tuples (every audited attribute)
  of its cell's never-changed members that extend along its chain to a compatible
  tuple of a never-changed cellmate of every other incarnation; fewer distinct values
  (or a smaller spread) than its cell's requirement exposes it, and a cell holding an
  incarnation whose never-changed members alone miss the requirement exposes all its
  members. Ghosts of deleted records are never-changed members like any other.

The first three checks nest: ``comparison`` ⊆ ``subtraction`` ⊆ ``cell``. Every known set is a union
of cells (cells refine every group, and a difference of unions of cells is one), so a
record's candidates always contain its own cell's values: when its cell meets the
requirement, no known set can expose it. The audit uses this to attack only the records
of failing cells (``shortcut``), which is exact; with ``shortcut=False`` it attacks every
record, which tests use to check the nesting itself.

The subtraction works on cells, not records, and indexes known sets by the cells they
hold, so that finding the sets inside or around a new one looks only at sets sharing a
cell with it. Its work is bounded by ``max_derived`` derived sets per prefix (by default
``DERIVED_PER_GROUP`` per group, within ``MIN_DERIVED``..``MAX_DERIVED``); a prefix
that reaches it reports ``subtraction_complete=False`` (its ``by_subtraction`` is then a
lower bound; ``by_cell``, the worst case, and so ``exposed`` stay exact).

>>> from sqlanon.models.cells import Requirement
>>> v = {"s": np.array([1887, 1887, 1740, 1485, 1977, 1902])}
>>> v1 = AttackedRelease(np.array([0, 0, 0, 0, 0, -1]), Requirement.lhd(["s"], 3))
>>> v2 = AttackedRelease(np.array([0, 0, 0, 0, 0, 0]), Requirement.lhd(["s"], 3))
>>> counts = audit_domain(v, [v1, v2])[1].counts()
>>> [counts[c] for c in ("exposed", "by_cell", "by_subtraction", "by_comparison", "by_chain")]
[1, 1, 1, 0, 0]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from numbers import Number
from typing import Any

import numpy as np

from sqlanon.errors import ConfigError
from sqlanon.models.cells import Requirement

__all__ = [
    "CHECKS",
    "DERIVED_PER_GROUP",
    "MAX_DERIVED",
    "MIN_DERIVED",
    "AttackedRelease",
    "DomainAudit",
    "audit_domain",
    "candidates",
]

CHECKS = ("cell", "subtraction", "comparison", "chain")

#: The subtraction's budget per prefix, in derived known sets: this many per group,
#: at least ``MIN_DERIVED`` and at most ``MAX_DERIVED`` (see above).
DERIVED_PER_GROUP = 20
MIN_DERIVED = 2_000
MAX_DERIVED = 200_000


@dataclass(frozen=True)
class AttackedRelease:
    """One release as the attacker sees it: ``group[i]`` is record ``i``'s group or class
    (-1: absent), ``requirement`` what the release promised, ``attributes`` the sensitive
    attributes it published (the requirement's always count as published)."""

    group: np.ndarray
    requirement: Requirement
    attributes: tuple[str, ...] = ()

    @property
    def published(self) -> frozenset[str]:
        return frozenset(self.attributes) | frozenset(self.requirement.attributes)


@dataclass(frozen=True)
class DomainAudit:
    """What the attacker learns from the releases up to one: per record, whether each
    check exposes it there, ``exposed`` (any check, at this release or an earlier one)
    and ``newly_exposed`` (first exposed here)."""

    by_cell: np.ndarray
    by_subtraction: np.ndarray
    by_comparison: np.ndarray
    exposed: np.ndarray
    newly_exposed: np.ndarray
    subtraction_complete: bool = True
    by_chain: np.ndarray | None = None  # None: no chain was given

    def counts(self) -> dict[str, int]:
        return {
            "exposed": int(self.exposed.sum()),
            "newly_exposed": int(self.newly_exposed.sum()),
            "by_cell": int(self.by_cell.sum()),
            "by_subtraction": int(self.by_subtraction.sum()),
            "by_comparison": int(self.by_comparison.sum()),
            "by_chain": 0 if self.by_chain is None else int(self.by_chain.sum()),
        }


# ------------------------------------------------------------------------------ values


@dataclass(frozen=True)
class _Encoded:
    """One attribute: a code per record (equal values, equal codes, Python equality:
    ``10000 == 10000.0``) and, for numbers, each code's value (NaN for NULL)."""

    codes: np.ndarray
    size: int
    numbers: np.ndarray | None

    @staticmethod
    def of(name: str, column: np.ndarray | Sequence[Any]) -> _Encoded:
        array = np.asarray(column)
        if array.dtype.kind == "O" and all(_is_number(v) for v in array.tolist()):
            array = np.array([np.nan if v is None else float(v) for v in array.tolist()])
        if array.dtype.kind in "biuf":
            x = array.astype(np.float64)
            uniques, codes = np.unique(x, return_inverse=True)
            return _Encoded(codes.reshape(-1).astype(np.int64), uniques.size, uniques)
        if array.dtype.kind not in "OUS":
            raise ConfigError(f"values of {name!r}: unsupported type {array.dtype}")
        index: dict[Any, int] = {}
        codes = np.array([index.setdefault(v, len(index)) for v in array.tolist()], np.int64)
        return _Encoded(codes, len(index), None)


def _is_number(value: Any) -> bool:
    return value is None or (
        isinstance(value, Number | Decimal) and not isinstance(value, bool | np.bool_)
    )


def _decoder(column: np.ndarray | Sequence[Any], encoded: _Encoded) -> list[Any]:
    """The value of each code (the first record holding it)."""
    array = np.asarray(column)
    first = np.full(encoded.size, -1, dtype=np.int64)
    order = np.arange(encoded.codes.size)[::-1]
    first[encoded.codes[order]] = order
    return [array[i].item() if hasattr(array[i], "item") else array[i] for i in first]


def _spread(encoded: _Encoded, codes: Any) -> float:
    """max - min of the numbers of ``codes`` (NULLs ignored; 0 when none)."""
    if encoded.numbers is None:
        return 0.0
    x = encoded.numbers[np.fromiter(codes, dtype=np.int64)]
    x = x[~np.isnan(x)]
    return float(x.max() - x.min()) if x.size else 0.0


# ------------------------------------------------------------------------------- cells


@dataclass
class _Cells:
    """Every record's cell (-1: not published yet) and each cell's requirement per
    attribute (``need_distinct``, ``need_spread``: cells x attributes)."""

    cell: np.ndarray
    need_distinct: np.ndarray
    need_spread: np.ndarray

    @staticmethod
    def empty(n: int, attributes: int) -> _Cells:
        """``n`` records, none published yet."""
        return _Cells(
            np.full(n, -1, dtype=np.int64),
            np.zeros((0, attributes), dtype=np.int64),
            np.zeros((0, attributes), dtype=np.float64),
        )

    @property
    def count(self) -> int:
        return int(self.need_distinct.shape[0])

    def then(self, group: np.ndarray, distinct: np.ndarray, spread: np.ndarray) -> _Cells:
        """After one more release: new cell = (old cell or "new", group or absent) for
        every record published by now; a published cell adds the release's requirement."""
        seen = (self.cell >= 0) | (group >= 0)
        dense_group = np.full(group.size, -1, dtype=np.int64)
        published = group >= 0
        dense_group[published] = np.unique(group[published], return_inverse=True)[1]
        width = int(dense_group.max()) + 2 if group.size else 1
        key = (self.cell[seen] + 1) * width + (dense_group[seen] + 1)
        keys, inverse = np.unique(key, return_inverse=True)
        cell = np.full(group.size, -1, dtype=np.int64)
        cell[seen] = inverse.reshape(-1)
        old = keys // width - 1
        in_group = keys % width - 1 >= 0
        pad_d = np.vstack([self.need_distinct, np.zeros_like(distinct)[None, :]])
        pad_s = np.vstack([self.need_spread, np.zeros_like(spread)[None, :]])
        need_d = pad_d[np.where(old >= 0, old, self.count)]
        need_s = pad_s[np.where(old >= 0, old, self.count)]
        need_d[in_group] = np.maximum(need_d[in_group], distinct)
        need_s[in_group] = np.maximum(need_s[in_group], spread)
        return _Cells(cell, need_d, need_s)


def _failing_cells(cells: _Cells, attributes: Sequence[str], encoded: list[_Encoded]) -> np.ndarray:
    """Cells whose own multiset misses their requirement."""
    failing = np.zeros(cells.count, dtype=bool)
    member = cells.cell >= 0
    ids = cells.cell[member]
    for j, a in enumerate(attributes):
        need_d, need_s = cells.need_distinct[:, j], cells.need_spread[:, j]
        if not (need_d > 0).any() and not (need_s > 0).any():
            continue
        enc = encoded[j]
        codes = enc.codes[member]
        pairs = np.unique(ids * enc.size + codes)
        failing |= np.bincount(pairs // enc.size, minlength=cells.count) < need_d
        if (need_s > 0).any():
            if enc.numbers is None:
                raise ConfigError(f"a spread is required of {a!r}, which is not numeric")
            x = enc.numbers[codes]
            low = np.full(cells.count, np.inf)
            high = np.full(cells.count, -np.inf)
            np.fmin.at(low, ids, x)
            np.fmax.at(high, ids, x)
            failing |= np.where(high >= low, high - low, 0.0) < need_s
    return failing


# ------------------------------------------------------------------------- known sets

_Known = dict[frozenset[int], frozenset[str]]  # a set of cells -> the attributes it knows


def _group_sets(cells: _Cells, releases: Sequence[AttackedRelease]) -> _Known:
    """Every group of every release as the set of cells it holds (equal sets merged)."""
    known: _Known = {}
    for r in releases:
        published = r.group >= 0
        if not published.any():
            continue
        group = np.unique(r.group[published], return_inverse=True)[1].reshape(-1)
        pairs = np.unique(group.astype(np.int64) * cells.count + cells.cell[published])
        bounds = np.flatnonzero(np.r_[True, np.diff(pairs // cells.count) != 0, True])
        members = (pairs % cells.count).tolist()
        attributes = r.published
        ends = bounds.tolist()
        for start, end in zip(ends[:-1], ends[1:], strict=True):
            cell_set = frozenset(members[start:end])
            known[cell_set] = known.get(cell_set, frozenset()) | attributes
    return known


def _subtract_to_fixed_point(groups: _Known, max_derived: int) -> tuple[_Known, bool]:
    """Add B - A for known A strictly inside known B (sharing attributes) until nothing
    new comes, or ``max_derived`` sets were added (then False).

    Sets are processed in the order they became known (the groups, then what one
    subtraction gives, then two...): measured on independent re-releases of the seeds'
    experiment, a budget of a few sets per group then already reaches the candidates of
    the whole fixed point, while the fixed point itself grows about twofold per release.
    Each set, when processed, is compared with the sets processed before it: those inside
    it are registered under their least cell (which it must hold), those around it all
    hold its rarest cell. So every pair is looked at once; a set whose attributes grow
    is processed again.
    """
    known = dict(groups)
    queue = deque(known)
    by_cell: dict[int, list[frozenset[int]]] = {}
    by_least: dict[int, list[frozenset[int]]] = {}
    processed: set[frozenset[int]] = set()
    derived = 0
    while queue:
        x = queue.popleft()
        known_x, size = known[x], len(x)
        found = []
        for c in x:
            for s in by_least.get(c, ()):
                if len(s) < size and s < x:
                    found.append((x - s, known_x & known[s]))
        rare = min(x, key=lambda c: len(by_cell.get(c, ())))
        for s in by_cell.get(rare, ()):
            if len(s) > size and x < s:
                found.append((s - x, known_x & known[s]))
        if x not in processed:
            processed.add(x)
            by_least.setdefault(min(x), []).append(x)
            for c in x:
                by_cell.setdefault(c, []).append(x)
        for difference, attributes in found:
            if not attributes:
                continue
            before = known.get(difference)
            if before is None:
                if derived >= max_derived:
                    return known, False
                derived += 1
                known[difference] = attributes
                queue.append(difference)
            elif not attributes <= before:
                known[difference] = before | attributes
                queue.append(difference)
    return known, True


@dataclass
class _Attack:
    """Candidates of chosen cells against a collection of known sets."""

    known: _Known
    attributes: Sequence[str]
    encoded: list[_Encoded]
    cell_codes: list[list[frozenset[int]]]
    _codes: dict[tuple[frozenset[int], int], frozenset[int]] = field(default_factory=dict)

    def sets_holding(self, cells: Sequence[int]) -> dict[int, list[frozenset[int]]]:
        wanted = set(cells)
        holding: dict[int, list[frozenset[int]]] = {c: [] for c in cells}
        for s in self.known:
            for c in s & wanted if len(s) > len(wanted) else (c for c in s if c in wanted):
                holding[c].append(s)
        return holding

    def codes(self, s: frozenset[int], j: int) -> frozenset[int]:
        found = self._codes.get((s, j))
        if found is None:
            per_cell = self.cell_codes[j]
            found = frozenset().union(*(per_cell[c] for c in s))
            self._codes[(s, j)] = found
        return found

    def candidates(self, j: int, holding: Sequence[frozenset[int]]) -> frozenset[int] | None:
        a = self.attributes[j]
        out: frozenset[int] | None = None
        for s in holding:
            if a in self.known[s]:
                codes = self.codes(s, j)
                out = codes if out is None else out & codes
        return out

    def exposed(self, cells: _Cells, chosen: np.ndarray) -> np.ndarray:
        """Which ``chosen`` cells some attribute's candidates leave below requirement."""
        out = np.zeros(cells.count, dtype=bool)
        holding = self.sets_holding(chosen.tolist())
        for c in chosen.tolist():
            for j in range(len(self.attributes)):
                need_d = int(cells.need_distinct[c, j])
                need_s = float(cells.need_spread[c, j])
                if need_d <= 0 and need_s <= 0:
                    continue
                found = self.candidates(j, holding[c])
                if found is None:
                    continue
                if len(found) < need_d or (need_s > 0 and _spread(self.encoded[j], found) < need_s):
                    out[c] = True
                    break
        return out


def _cell_codes(cells: _Cells, encoded: list[_Encoded]) -> list[list[frozenset[int]]]:
    """Per attribute, each cell's set of value codes."""
    member = cells.cell >= 0
    ids = cells.cell[member]
    out = []
    for enc in encoded:
        pairs = np.unique(ids * enc.size + enc.codes[member])
        owner = pairs // enc.size
        bounds = np.searchsorted(owner, np.arange(cells.count + 1))
        codes = (pairs % enc.size).tolist()
        out.append([frozenset(codes[bounds[c] : bounds[c + 1]]) for c in range(cells.count)])
    return out


# ---------------------------------------------------------------------------- chains


def _validate_chains(chains: Sequence[Sequence[int]], n: int) -> list[tuple[int, ...]]:
    out = [tuple(int(r) for r in chain) for chain in chains]
    every = [r for chain in out for r in chain]
    if any(r < 0 or r >= n for r in every):
        raise ConfigError(f"a chain names a record outside 0..{n - 1}")
    if len(set(every)) != len(every):
        raise ConfigError("a record appears in more than one chain, or twice in one")
    return out


def _chain_exposed(
    cells: _Cells, encoded: list[_Encoded], chains: Sequence[tuple[int, ...]]
) -> np.ndarray:
    """Per record: exposed by the chain rule's worst case (see the module docstring),
    with the cells as they are after this release. Plain sets of code tuples: the
    cells that hold an incarnation are small."""
    exposed = np.zeros(cells.cell.size, dtype=bool)
    published = [tuple(r for r in chain if cells.cell[r] >= 0) for chain in chains]
    published = [chain for chain in published if len(chain) >= 2]
    if not published:
        return exposed
    changed = {r for chain in published for r in chain}
    touched = {int(cells.cell[r]) for r in changed}
    width = len(encoded)

    def row(r: int) -> tuple[int, ...]:
        return tuple(int(e.codes[r]) for e in encoded)

    tuples: dict[int, set[tuple[int, ...]]] = {c: set() for c in touched}
    for r in np.flatnonzero(cells.cell >= 0).tolist():
        c = int(cells.cell[r])
        if c in touched and r not in changed:
            tuples[c].add(row(r))

    def below(cell: int, candidates: set[tuple[int, ...]]) -> bool:
        for j in range(width):
            need_d = int(cells.need_distinct[cell, j])
            need_s = float(cells.need_spread[cell, j])
            codes = {t[j] for t in candidates}
            if len(codes) < need_d or (need_s > 0 and _spread(encoded[j], codes) < need_s):
                return True
        return False

    for c in touched:
        if below(c, tuples[c]):
            exposed[cells.cell == c] = True

    def compatible(u: tuple[int, ...], t: tuple[int, ...], differ: frozenset[int]) -> bool:
        return all((u[j] == t[j]) != (j in differ) for j in range(width))

    for chain in published:
        rows = [row(r) for r in chain]
        differ = [
            frozenset(j for j in range(width) if a[j] != b[j])
            for a, b in zip(rows, rows[1:], strict=False)
        ]
        domains = [set(tuples[int(cells.cell[r])]) for r in chain]
        for j, link in enumerate(differ):  # forward, then backward: exact on a path
            domains[j + 1] = {
                t for t in domains[j + 1] if any(compatible(u, t, link) for u in domains[j])
            }
        for j in reversed(range(len(differ))):
            domains[j] = {
                t for t in domains[j] if any(compatible(t, u, differ[j]) for u in domains[j + 1])
            }
        for r, found in zip(chain, domains, strict=True):
            if below(int(cells.cell[r]), found):
                exposed[r] = True
    return exposed


# ---------------------------------------------------------------------------- the audit


def _validate(
    values: Mapping[str, np.ndarray | Sequence[Any]], releases: Sequence[AttackedRelease]
) -> tuple[int, list[str], list[np.ndarray]]:
    groups = [np.asarray(r.group) for r in releases]
    sizes = {g.shape for g in groups}
    if len(sizes) > 1 or any(g.ndim != 1 for g in groups):
        raise ConfigError(f"every release needs one group per record; got shapes {sorted(sizes)}")
    if any(g.size and g.dtype.kind not in "iu" for g in groups):
        raise ConfigError("group ids must be integers (-1: absent)")
    n = groups[0].size if groups else 0
    attributes = sorted(set().union(*(r.published for r in releases)) if releases else set())
    for a in attributes:
        if a not in values:
            raise ConfigError(f"a release published {a!r}: the audit needs its values")
        if len(values[a]) != n:
            raise ConfigError(f"values of {a!r} must have one entry per record ({n})")
    return n, attributes, [g.astype(np.int64) for g in groups]


def _budget(groups: int) -> int:
    return min(MAX_DERIVED, max(MIN_DERIVED, DERIVED_PER_GROUP * groups))


def _requirement_rows(
    r: AttackedRelease, attributes: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    distinct = np.array([r.requirement.distinct.get(a, 0) for a in attributes], dtype=np.int64)
    spread = np.array([r.requirement.spread.get(a, 0.0) for a in attributes], dtype=np.float64)
    return distinct, spread


def audit_domain(
    values: Mapping[str, np.ndarray | Sequence[Any]],
    releases: Sequence[AttackedRelease],
    *,
    shortcut: bool = True,
    max_derived: int | None = None,
    chains: Sequence[Sequence[int]] = (),
) -> list[DomainAudit]:
    """One :class:`DomainAudit` per prefix of ``releases`` (the attacker holding
    releases 1..t), for the records 0..n-1 of the domain (see the module docstring).
    ``chains``: each changed person's incarnations (records), oldest first."""
    n, attributes, groups = _validate(values, releases)
    chains = _validate_chains(chains, n)
    encoded = [_Encoded.of(a, values[a]) for a in attributes]
    cells = _Cells.empty(n, len(attributes))
    exposed = np.zeros(n, dtype=bool)
    out = []
    for t, r in enumerate(releases):
        cells = cells.then(groups[t], *_requirement_rows(r, attributes))
        failing = _failing_cells(cells, attributes, encoded)
        chosen = np.flatnonzero(failing) if shortcut else np.arange(cells.count)
        by_comparison = np.zeros(cells.count, dtype=bool)
        by_subtraction = np.zeros(cells.count, dtype=bool)
        complete = True
        if chosen.size:
            prefix = [
                AttackedRelease(g, x.requirement, x.attributes)
                for g, x in zip(groups[: t + 1], releases[: t + 1], strict=True)
            ]
            group_sets = _group_sets(cells, prefix)
            codes = _cell_codes(cells, encoded)
            by_comparison = _Attack(group_sets, attributes, encoded, codes).exposed(cells, chosen)
            budget = _budget(len(group_sets)) if max_derived is None else max_derived
            known, complete = _subtract_to_fixed_point(group_sets, budget)
            by_subtraction = _Attack(known, attributes, encoded, codes).exposed(cells, chosen)
        # Per record (cell -1, never published: the appended False).
        flags = [
            np.append(per_cell, False)[cells.cell]
            for per_cell in (failing, by_subtraction, by_comparison)
        ]
        by_chain = _chain_exposed(cells, encoded, chains)
        now = exposed | flags[0] | flags[1] | flags[2] | by_chain
        out.append(
            DomainAudit(flags[0], flags[1], flags[2], now, now & ~exposed, complete, by_chain)
        )
        exposed = now
    return out


def candidates(
    values: Mapping[str, np.ndarray | Sequence[Any]],
    releases: Sequence[AttackedRelease],
    attack: str = "subtraction",
    *,
    max_derived: int | None = None,
) -> dict[str, list[frozenset[Any] | None]]:
    """What the attacker holding all of ``releases`` narrows each record's value of each
    published attribute to (``attack``: "subtraction" or "comparison"); None where no
    release published that attribute of the record."""
    if attack not in ("subtraction", "comparison"):
        raise ConfigError(f"attack must be 'subtraction' or 'comparison', not {attack!r}")
    n, attributes, groups = _validate(values, releases)
    encoded = [_Encoded.of(a, values[a]) for a in attributes]
    cells = _Cells.empty(n, len(attributes))
    for g, r in zip(groups, releases, strict=True):
        cells = cells.then(g, *_requirement_rows(r, attributes))
    prefix = [
        AttackedRelease(g, r.requirement, r.attributes)
        for g, r in zip(groups, releases, strict=True)
    ]
    known = _group_sets(cells, prefix)
    if attack == "subtraction":
        budget = _budget(len(known)) if max_derived is None else max_derived
        known, _ = _subtract_to_fixed_point(known, budget)
    attack_sets = _Attack(known, attributes, encoded, _cell_codes(cells, encoded))
    holding = attack_sets.sets_holding(list(range(cells.count)))
    out: dict[str, list[frozenset[Any] | None]] = {}
    for j, a in enumerate(attributes):
        decode = _decoder(values[a], encoded[j])
        per_cell = []
        for c in range(cells.count):
            found = attack_sets.candidates(j, holding[c])
            per_cell.append(None if found is None else frozenset(decode[v] for v in found))
        out[a] = [per_cell[c] if c >= 0 else None for c in cells.cell.tolist()]
    return out
