"""An attacker written for the tests, sharing nothing with sqlanon's planners or audit.

It holds every release of one domain (every family, both models) and, at worst, every
group's membership (MODELS.md, "Cells"). Records are numbered 0..n-1 over the whole
sequence; a release gives each record its group (-1: absent: not yet arrived, held back
or suppressed), the attributes it published and its requirement (per attribute, a
least number of distinct values and a least spread max - min).

Three checks, each returning a :class:`Verdict` (records below their requirement):

- :func:`cell_check`: the worst case of the cell rule. A record's history is its group in
  every release, "absent" once it was first published; records with the same history
  form a cell; a cell must meet the union of the requirements of the releases that
  published it (the maximum per attribute).
- :func:`subtraction_attack`: known multisets per attribute (every group, and the
  records that arrived between two releases: the difference of their totals); a known
  multiset strictly contained (by records) in another is subtracted from it, to a fixed
  point; a record's candidates are the intersection of the distinct values of the known
  multisets holding it. Checks that the true value stays a candidate.
- :func:`exact_attack`: on tiny cases, every assignment of the records' true value
  tuples (a permutation) under which every group shows the multiset it published (an lHD
  class shows its rows' sensitive values jointly, a (k,e) group one attribute) is a
  possible world; a record's candidates are the values it takes over the possible worlds.
  The real attacker, who does not know the values are a permutation of the true ones,
  is at least this uncertain: 0 flagged here is sound.

Values are compared with Python equality (``10000 == 10000.0``, ``"1" != 1``).

>>> values = {"v": [100, 900, 110, 910]}
>>> r1 = Release.lhd([0, 0, 1, 1], ["v"], 2)  # the age-30 class {100, 900}
>>> r2 = Release.ke([0, 1, 0, 1], "v", 2, 5)  # (k,e) group {100, 110}
>>> sorted(cell_check(values, [r1, r2]).flagged)
[0, 1, 2, 3]
>>> subtraction_attack(values, [r1, r2]).candidates[0, "v"]
frozenset({100})
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Values = Mapping[str, Sequence[Any]]


@dataclass(frozen=True)
class Release:
    """One release: ``group[r]`` (-1 absent), the published attributes (an lHD class
    shows them jointly per row), and the requirement of every cell it publishes."""

    group: tuple[int, ...]
    attributes: tuple[str, ...]
    distinct: Mapping[str, int]
    spread: Mapping[str, float] = field(default_factory=dict)
    label: str = ""

    @staticmethod
    def of(
        group: Iterable[int],
        attributes: Iterable[str],
        distinct: Mapping[str, int],
        spread: Mapping[str, float] | None = None,
        label: str = "",
    ) -> Release:
        return Release(
            tuple(int(g) for g in np.asarray(list(group)).reshape(-1)),
            tuple(attributes),
            dict(distinct),
            dict(spread or {}),
            label,
        )

    @staticmethod
    def ke(group: Iterable[int], sensitive: str, k: int, e: float, label: str = "") -> Release:
        return Release.of(group, [sensitive], {sensitive: k}, {sensitive: e}, label)

    @staticmethod
    def lhd(
        group: Iterable[int],
        sensitive: Iterable[str],
        l: int,  # noqa: E741
        label: str = "",
    ) -> Release:
        names = list(sensitive)
        return Release.of(group, names, dict.fromkeys(names, l), None, label)

    def groups(self) -> dict[int, list[int]]:
        """Group id -> its records, in record order."""
        out: dict[int, list[int]] = {}
        for r, g in enumerate(self.group):
            if g >= 0:
                out.setdefault(g, []).append(r)
        return out


@dataclass(frozen=True)
class Observation:
    """What one group of one release showed: its records and the multiset of its rows'
    values of ``attributes`` (tuples, jointly)."""

    release: int
    records: frozenset[int]
    attributes: tuple[str, ...]
    rows: Counter[tuple[Any, ...]]


@dataclass
class Verdict:
    """Records below their requirement: ``flagged[r]`` lists why (attribute, what).
    ``candidates[r, a]``: the attacker's candidate values (attacks only)."""

    flagged: dict[int, list[str]] = field(default_factory=dict)
    candidates: dict[tuple[int, str], frozenset[Any]] = field(default_factory=dict)
    truncated: bool = False

    def flag(self, record: int, why: str) -> None:
        self.flagged.setdefault(record, []).append(why)

    def describe(self, limit: int = 10) -> str:
        shown = sorted(self.flagged.items())[:limit]
        return f"{len(self.flagged)} record(s) below their requirement: {shown}"


def _size(releases: Sequence[Release]) -> int:
    sizes = {len(r.group) for r in releases}
    if len(sizes) > 1:
        raise ValueError(f"every release must give a group to every record: sizes {sizes}")
    return sizes.pop() if sizes else 0


def observations(values: Values, releases: Sequence[Release]) -> list[Observation]:
    """Every group's published multiset, computed from the true values."""
    out = []
    for i, release in enumerate(releases):
        for members in release.groups().values():
            rows = Counter(tuple(values[a][r] for a in release.attributes) for r in members)
            out.append(Observation(i, frozenset(members), release.attributes, rows))
    return out


def requirements(releases: Sequence[Release]) -> list[dict[str, tuple[int, float]]]:
    """Per record: attribute -> (least distinct, least spread), the maximum over the
    releases that published it."""
    need: list[dict[str, tuple[int, float]]] = [{} for _ in range(_size(releases))]
    for release in releases:
        for r, g in enumerate(release.group):
            if g >= 0:
                _raise(need[r], release)
    return need


def _raise(need: dict[str, tuple[int, float]], release: Release) -> None:
    for a in set(release.distinct) | set(release.spread):
        d, s = need.get(a, (0, 0.0))
        need[a] = (max(d, release.distinct.get(a, 0)), max(s, release.spread.get(a, 0.0)))


def _below(values: Iterable[Any], least_distinct: int, least_spread: float) -> str | None:
    """Why these values fail (distinct count, spread), None when they do not."""
    distinct = set(values)
    if len(distinct) < least_distinct:
        return f"{len(distinct)} distinct {sorted(distinct, key=repr)} < {least_distinct}"
    if least_spread > 0:
        numbers = [float(v) for v in distinct]
        if not numbers or max(numbers) - min(numbers) < least_spread:
            spread = max(numbers) - min(numbers) if numbers else 0.0
            return f"spread {spread:g} < {least_spread:g}"
    return None


def histories(releases: Sequence[Release]) -> list[tuple[int | None, ...] | None]:
    """Per record: its group in every release, -1 for absent after its first
    publication, None before it; None for a record never published."""
    out: list[tuple[int | None, ...] | None] = []
    for r in range(_size(releases)):
        entries: list[int | None] = []
        published = False
        for release in releases:
            g = release.group[r]
            published = published or g >= 0
            entries.append(g if g >= 0 else (-1 if published else None))
        out.append(tuple(entries) if published else None)
    return out


def cells(releases: Sequence[Release]) -> list[list[int]]:
    """Records with the same history, in order of their first record."""
    by_history: dict[tuple[int | None, ...], list[int]] = {}
    for r, history in enumerate(histories(releases)):
        if history is not None:
            by_history.setdefault(history, []).append(r)
    return list(by_history.values())


def cell_check(values: Values, releases: Sequence[Release]) -> Verdict:
    """Every record whose cell breaks the union of its releases' requirements."""
    verdict = Verdict()
    need = requirements(releases)
    for members in cells(releases):
        # every member of a cell was published by the same releases: one requirement
        for a, (d, s) in sorted(need[members[0]].items()):
            why = _below((values[a][r] for r in members), d, s)
            if why is not None:
                for r in members:
                    verdict.flag(r, f"cell {members} {a}: {why}")
    return verdict


def _mask(records: Iterable[int]) -> int:
    bits = 0
    for r in records:
        bits |= 1 << r
    return bits


def _covers(groups: Sequence[int], mask: int) -> bool:
    """Whether the groups inside ``mask`` (disjoint: one release's) are all of it."""
    union = 0
    for g in groups:
        if g & mask == g:
            union |= g
    return union == mask


def _members(mask: int) -> list[int]:
    out, r = [], 0
    while mask:
        if mask & 1:
            out.append(r)
        mask >>= 1
        r += 1
    return out


def subtraction_attack(
    values: Values,
    releases: Sequence[Release],
    observed: Sequence[Observation] | None = None,
    max_known: int = 1_000,
    with_totals: bool = True,
) -> Verdict:
    """Subtract known multisets to a fixed point, intersect, flag records below their
    requirement. ``observed`` (default: :func:`observations`) is what was published;
    ``values`` gives the true values, which must stay candidates (AssertionError if not).

    The fixed point can hold exponentially many sets (a class refined into m pieces
    yields all 2^m unions of pieces), so a derived set that is exactly a union of groups
    of one release is not kept: its multiset is their sum, subtracting it is subtracting
    them one by one, and it narrows no candidate (lost: a group of a third release that
    straddles those groups, inside their union). Sets are processed smallest first and
    no more than ``max_known`` derived sets are kept per attribute (besides every
    published group); ``verdict.truncated`` says when that stopped the search early
    (every set found is still a true fact).
    """
    observed = observations(values, releases) if observed is None else observed
    known: dict[str, dict[int, Counter[Any]]] = {}
    full: set[str] = set()
    verdict = Verdict()

    def learn(attribute: str, mask: int, multiset: Counter[Any], derived: bool = True) -> None:
        if sum(multiset.values()) != mask.bit_count():
            raise AssertionError(
                f"{attribute}: records {_members(mask)} but multiset {dict(multiset)}"
            )
        table = known.setdefault(attribute, {})
        if mask in table:
            if table[mask] != multiset:
                raise AssertionError(
                    f"{attribute}: records {_members(mask)} published as "
                    f"{dict(table[mask])} and as {dict(multiset)}"
                )
            return
        if derived and any(_covers(groups, mask) for groups in by_release[attribute].values()):
            return  # a union of one release's groups: nothing new (see the docstring)
        if len(table) >= max_known + len(observed):
            verdict.truncated = True
            full.add(attribute)
            return
        table[mask] = multiset
        heapq.heappush(queue, (mask.bit_count(), len(table), attribute, mask))

    queue: list[tuple[int, int, str, int]] = []  # (size, order, attribute, records)
    by_release: dict[str, dict[int, list[int]]] = {}  # attribute -> release -> groups
    totals: dict[tuple[int, str], tuple[int, Counter[Any]]] = {}
    for o in observed:
        for j, a in enumerate(o.attributes):
            multiset: Counter[Any] = Counter()
            for row, count in o.rows.items():
                multiset[row[j]] += count
            mask = _mask(o.records)
            by_release.setdefault(a, {}).setdefault(o.release, []).append(mask)
            learn(a, mask, multiset, derived=False)
            total_mask, total = totals.get((o.release, a), (0, Counter()))
            totals[o.release, a] = (total_mask | mask, total + multiset)
    if with_totals:
        # a release's total is the sum of its groups; a total inside a later one gives the
        # records that arrived in between (the totals themselves would make every union
        # of groups a known set: exponentially many)
        for (i, a), (mask, total) in totals.items():
            for (j, b), (later, later_total) in totals.items():
                if a == b and i != j and later != mask and later & mask == mask:
                    if total - later_total:
                        raise AssertionError(f"{a}: release {i}'s total is not inside {j}'s")
                    learn(a, later & ~mask, later_total - total)

    while queue:
        _, _, a, mask = heapq.heappop(queue)
        if a in full:
            continue  # the table is full: what the rest would find could not be kept
        table = known[a]
        multiset = table[mask]
        for other, theirs in list(table.items()):
            if other != mask and other & mask == mask:  # mask inside other
                small, big, small_ms, big_ms = mask, other, multiset, theirs
            elif other != mask and other & mask == other:  # other inside mask
                small, big, small_ms, big_ms = other, mask, theirs, multiset
            else:
                continue
            if big & ~small in table:
                continue  # known already (and checked when it was learned)
            if small_ms - big_ms:
                raise AssertionError(
                    f"{a}: records {_members(small)} show {dict(small_ms)}, not inside "
                    f"{dict(big_ms)} of records {_members(big)}"
                )
            learn(a, big & ~small, big_ms - small_ms)

    need = requirements(releases)
    for a, table in known.items():
        common: dict[int, frozenset[Any]] = {}
        for mask, multiset in table.items():
            distinct = frozenset(multiset)
            for r in _members(mask):
                common[r] = common[r] & distinct if r in common else distinct
        for r, candidates in common.items():
            verdict.candidates[r, a] = candidates
            if values[a][r] not in candidates:
                raise AssertionError(
                    f"record {r}'s true {a} {values[a][r]!r} is not among its candidates "
                    f"{sorted(candidates, key=repr)}"
                )
    for r, by_attribute in enumerate(need):
        for a, (d, s) in sorted(by_attribute.items()):
            why = _below(verdict.candidates.get((r, a), frozenset()), d, s)
            if why is not None:
                verdict.flag(r, f"{a}: {why}")
    return verdict


def exact_attack(
    values: Values,
    releases: Sequence[Release],
    observed: Sequence[Observation] | None = None,
    max_records: int = 7,
) -> Verdict:
    """The possibilistic attacker over permutations of the published records' true value
    tuples (every attribute any release published). Refuses more than ``max_records``
    published records (ValueError)."""
    observed = observations(values, releases) if observed is None else observed
    records = sorted(set().union(*(o.records for o in observed))) if observed else []
    if len(records) > max_records:
        raise ValueError(f"{len(records)} published records > max_records={max_records}")
    names = sorted({a for o in observed for a in o.attributes})
    truth = {r: tuple(values[a][r] for a in names) for r in records}
    where = [[names.index(a) for a in o.attributes] for o in observed]
    holding: dict[int, list[int]] = {r: [] for r in records}
    for i, o in enumerate(observed):
        if sum(o.rows.values()) != len(o.records):
            raise AssertionError(f"observation {i}: {len(o.records)} records, rows {o.rows}")
        for r in o.records:
            holding[r].append(i)
    # most constrained records first: the search prunes earlier
    order = sorted(records, key=lambda r: -len(holding[r]))
    pool = Counter(truth.values())
    used: list[Counter[tuple[Any, ...]]] = [Counter() for _ in observed]
    chosen: dict[int, tuple[Any, ...]] = {}
    possible: dict[int, set[tuple[Any, ...]]] = {r: set() for r in records}

    def search(depth: int) -> None:
        if depth == len(order):
            for r, t in chosen.items():
                possible[r].add(t)
            return
        r = order[depth]
        for t in [t for t, c in pool.items() if c > 0]:
            shown = [(i, tuple(t[j] for j in where[i])) for i in holding[r]]
            if any(used[i][row] >= observed[i].rows[row] for i, row in shown):
                continue
            pool[t] -= 1
            for i, row in shown:
                used[i][row] += 1
            chosen[r] = t
            search(depth + 1)
            del chosen[r]
            for i, row in shown:
                used[i][row] -= 1
            pool[t] += 1

    search(0)
    verdict = Verdict()
    need = requirements(releases)
    for r in records:
        if truth[r] not in possible[r]:
            raise AssertionError(f"record {r}'s true values {truth[r]} are not a candidate")
        for j, a in enumerate(names):
            verdict.candidates[r, a] = frozenset(t[j] for t in possible[r])
        for a, (d, s) in sorted(need[r].items()):
            why = _below(verdict.candidates[r, a], d, s)
            if why is not None:
                verdict.flag(r, f"{a}: {why}")
    return verdict


# ---------------------------------------------------------------- histories with changes
#
# The attacker of MODELS.md "Changing tables", exactly, on tiny histories. It works on
# incarnations: a person who never changed is one incarnation; a deleted record is one
# incarnation that goes on as a ghost (an ordinary member of later groups); a person
# whose sensitive values changed is a chain of incarnations, each earlier one a ghost.
# Besides every group's members and published multiset, the attacker knows each link
# of a chain and which attribute positions changed across it (not to what).

Incarnation = Any  # any hashable id


@dataclass(frozen=True)
class Published:
    """One group or class of one release: its members (incarnation ids, ghosts
    included) and the multiset of their rows' tuples, projected on the release's
    attribute positions (a (k,e) group: one position; an lHD class: every sensitive
    attribute it published, jointly per row)."""

    members: tuple[Incarnation, ...]
    rows: Counter[tuple[Any, ...]]


@dataclass(frozen=True)
class Publication:
    """One release: the attribute positions it publishes, its groups, and what it
    promises each of its members per position (least distinct values, least spread)."""

    positions: tuple[int, ...]
    groups: tuple[Published, ...]
    distinct: Mapping[int, int]
    spread: Mapping[int, float] = field(default_factory=dict)

    @staticmethod
    def of(
        truth: Mapping[Incarnation, tuple[Any, ...]],
        positions: Iterable[int],
        groups: Iterable[Iterable[Incarnation]],
        distinct: Mapping[int, int],
        spread: Mapping[int, float] | None = None,
    ) -> Publication:
        """The publication of ``groups`` (lists of members) showing the true tuples."""
        where = tuple(positions)
        published = tuple(
            Published(tuple(members), Counter(tuple(truth[m][p] for p in where) for m in members))
            for members in (list(g) for g in groups)
        )
        return Publication(where, published, dict(distinct), dict(spread or {}))


@dataclass(frozen=True)
class History:
    """Everything the attacker holds, plus the truth to check it against.

    ``truth[x]``: incarnation x's true full tuple (every attribute position; used only to
    build the search domain and to check that the truth stays a candidate).
    ``releases``: the publications in order. ``links``: (earlier, later, positions that
    changed) for consecutive incarnations of one person; across a link the tuples are
    equal on every other position and different on every changed one.
    """

    truth: Mapping[Incarnation, tuple[Any, ...]]
    releases: Sequence[Publication]
    links: Sequence[tuple[Incarnation, Incarnation, frozenset[int]]] = ()


class _Other:
    """A value no release showed (an incarnation's never-published position may hold
    anything); two of them, so a link's 'different' can always be met there."""

    def __init__(self, i: int) -> None:
        self.i = i

    def __repr__(self) -> str:
        return f"other{self.i}"


_OTHERS = (_Other(0), _Other(1))


def exact_candidates(history: History) -> dict[Incarnation, set[tuple[Any, ...]]]:
    """Every incarnation's possible full tuples: those it takes in some assignment of a
    tuple to every incarnation under which every group shows exactly its published
    multiset and every link holds. Values per position: those any release showed or the
    truth holds, and two stand-ins for "anything else". Backtracking with the groups'
    remaining counts as the pruning; tiny histories only (~8 incarnations)."""
    truth = dict(history.truth)
    names = list(truth)
    width = len(next(iter(truth.values()))) if truth else 0
    domain: list[set[Any]] = [{t[p] for t in truth.values()} | set(_OTHERS) for p in range(width)]
    groups: list[tuple[tuple[int, ...], Published]] = []
    for release in history.releases:
        for g in release.groups:
            if sum(g.rows.values()) != len(g.members):
                raise AssertionError(f"group {g.members} has rows {dict(g.rows)}")
            groups.append((release.positions, g))
            for row in g.rows:
                for p, v in zip(release.positions, row, strict=True):
                    domain[p].add(v)
    in_groups: dict[Incarnation, list[int]] = {x: [] for x in names}
    for i, (_, g) in enumerate(groups):
        for x in g.members:
            in_groups[x].append(i)
    linked: dict[Incarnation, list[tuple[Incarnation, frozenset[int]]]] = {x: [] for x in names}
    for old, new, changed in history.links:
        linked[old].append((new, frozenset(changed)))
        linked[new].append((old, frozenset(changed)))

    # each (group, row) is a slot holding as many incarnations as the row's count
    slot_of: dict[tuple[int, tuple[Any, ...]], int] = {}
    capacity: list[int] = []
    for i, (_, g) in enumerate(groups):
        for row, count in g.rows.items():
            slot_of[i, row] = len(capacity)
            capacity.append(count)
    # a position no group of x shows is free for an x without links: no constraint
    # reads it, so x is searched with its true value there and takes any value after
    free: dict[Incarnation, list[int]] = {}
    for x in names:
        shown = {p for i in in_groups[x] for p in groups[i][0]}
        free[x] = [] if linked[x] else [p for p in range(width) if p not in shown]
    slots: dict[Incarnation, dict[tuple[Any, ...], tuple[int, ...]]] = {x: {} for x in names}
    for x in names:
        pinned = [{truth[x][p]} if p in free[x] else values for p, values in enumerate(domain)]
        for t in _product(pinned):
            keys = [(i, tuple(t[p] for p in groups[i][0])) for i in in_groups[x]]
            if all(k in slot_of for k in keys):
                slots[x][t] = tuple(slot_of[k] for k in keys)
    allowed = {x: list(slots[x]) for x in names}
    # most constrained first, then whatever shares a group or a link with the chosen
    order: list[Incarnation] = []
    while len(order) < len(names):
        placed = set(order)

        def ties(x: Incarnation, placed: set[Incarnation] = placed) -> int:
            mates = {m for i in in_groups[x] for m in groups[i][1].members}
            return len(mates & placed) + sum(y in placed for y, _ in linked[x])

        rest = [x for x in names if x not in placed]
        order.append(min(rest, key=lambda x: (-ties(x), len(allowed[x]), len(in_groups[x]))))

    used = [0] * len(capacity)
    chosen: dict[Incarnation, tuple[Any, ...]] = {}

    def fits(x: Incarnation, t: tuple[Any, ...]) -> bool:
        for y, changed in linked[x]:
            if y in chosen:
                u = chosen[y]
                for p in range(width):
                    if (t[p] == u[p]) == (p in changed):
                        return False
        return all(used[s] < capacity[s] for s in slots[x][t])

    def search(depth: int, options: Mapping[Incarnation, list[tuple[Any, ...]]]) -> bool:
        if depth == len(order):
            return True
        x = order[depth]
        for t in options[x]:
            if not fits(x, t):
                continue
            for s in slots[x][t]:
                used[s] += 1
            chosen[x] = t
            found = search(depth + 1, options)
            for s in slots[x][t]:
                used[s] -= 1
            if found:
                return True  # `chosen` keeps the whole world
            del chosen[x]
        return False

    possible: dict[Incarnation, set[tuple[Any, ...]]] = {x: set() for x in names}
    for x in names:
        for t in allowed[x]:
            if t in possible[x]:
                continue  # seen in an earlier world
            chosen.clear()
            if search(0, {**allowed, x: [t]}):
                for y, u in chosen.items():
                    possible[y].add(u)
    for x in names:
        if truth[x] not in possible[x]:
            raise AssertionError(f"incarnation {x!r}'s true tuple {truth[x]} is not a candidate")
        if free[x]:
            possible[x] = {
                tuple(u if p in free[x] else t[p] for p, u in enumerate(any_free))
                for t in possible[x]
                for any_free in _product(domain)
            }
    return possible


def _product(domain: Sequence[set[Any]]) -> Iterable[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = [()]
    for values in domain:
        out = [t + (v,) for t in out for v in sorted(values, key=repr)]
    return out


def exact_exposed(
    history: History, candidates: Mapping[Incarnation, set[tuple[Any, ...]]] | None = None
) -> dict[Incarnation, list[str]]:
    """Incarnations whose candidate values of a position fall below what a release that
    published them promised there (fewer distinct values, or a smaller spread); why."""
    candidates = exact_candidates(history) if candidates is None else candidates
    need: dict[Incarnation, dict[int, tuple[int, float]]] = {}
    for release in history.releases:
        for g in release.groups:
            for x in g.members:
                mine = need.setdefault(x, {})
                for p in set(release.distinct) | set(release.spread):
                    d, s = mine.get(p, (0, 0.0))
                    mine[p] = (
                        max(d, release.distinct.get(p, 0)),
                        max(s, release.spread.get(p, 0.0)),
                    )
    exposed: dict[Incarnation, list[str]] = {}
    for x, by_position in need.items():
        for p, (d, s) in sorted(by_position.items()):
            why = _below({t[p] for t in candidates[x]}, d, s)
            if why is not None:
                exposed.setdefault(x, []).append(f"position {p}: {why}")
    return exposed
