"""lHD-diversity with local recoding over generalization hierarchies (seed 002, MODELS.md).

Input of one release: the raw QI columns (Gamma) with their hierarchies, the sensitive
columns (Delta), ``l``, and the earlier releases of the same source. Output
(:class:`LhdPlan`): the class of every record (-1 = suppressed) and, per class, the level
each QI is published at (the lowest level at which all members share one ancestor).

Guarantees of every plan, whatever the algorithm:

- every class has at least ``l`` distinct values of every published sensitive attribute;
- **cell rule** (implies the pairwise comparison constraint of MODELS.md): for every
  sensitive attribute s published now and every record r of a class c,
  ``|distinct_s(c) ∩ P_s(r)| >= l`` where ``P_s(r)`` is the intersection, over the earlier
  releases that published s and r, of the values r's class published there. With one
  earlier release this *is* the pairwise rule ``|distinct(c) ∩ distinct(o)| >= l`` for
  every new class c and old class o sharing a record; with more it also covers an
  attacker who intersects three or more releases (which :func:`comparison_attack` does).

Algorithms:

- ``greedy``: seed 002's Algorithm 1. Seed a class with the first unassigned record, add
  the record that raises the class's precision loss least until the class is l-diverse
  and meets the comparison constraint; when no class can be completed, the leftovers are
  merged into the nearest class that stays valid, else suppressed. Ties in precision loss
  go to a record that brings a value the class still lacks (the paper leaves ties open).
  O(n^2); for small tables.
- ``scalable``: top-down specialization with local recoding. A partition at common
  levels ``lv`` is split, on the QI that specializes the most records (weighted by
  1/height), into the hierarchy children one level below ``lv``. Records of one class of
  the newest earlier release move together when a split would cut them, and children
  that are not valid shed the records that break them; shed records form a pool that is
  a part of its own or joins the smallest child it keeps valid. A partition stops when
  no QI gives two valid parts; final partitions of up to 400 records are then re-cut by
  the greedy when that places all of them at a lower precision loss. About
  O(n * total hierarchy height * |Gamma|) plus the small greedy runs.
- ``refine`` (needs an earlier release sharing a sensitive attribute, else it plans all
  records together as below): each class o of the newest such release, restricted to the
  current records, is planned on its own with every earlier release still checked
  (greedy alone up to 12 records, greedy and scalable up to 2,000, the lower precision
  loss kept; scalable above); the records that release did not publish (new ones) are
  planned together the same way. An l-diverse piece c of o has
  ``distinct(c) ⊆ distinct(o)`` when the values are unchanged, so it meets the rule
  against o by construction, where planning all records at once has to mix o with other
  classes to keep l common values. Records no piece can hold (a shrunken class, a clash
  with an older release) join the valid class whose precision loss grows least, else are
  suppressed. Records are grouped by class with one sort; the greedy's O(m^2) only runs
  on classes of m <= 2,000 records, so the total is at most O(2,000 * n) plus scalable's
  near-linear cost on the larger classes.
- ``auto``: up to 2,000 records greedy and scalable, above that scalable; with an earlier
  release sharing a sensitive attribute, refine too. Keeps the lowest precision loss among
  the plans within ``max_suppression``, the lower DM on a tie (the faithful greedy
  degrades when earlier releases or several sensitive attributes constrain it).

Records are suppressed only when they cannot be placed: the earlier releases already
narrow one of their sensitive values to fewer than ``l`` candidates present in the data,
or (greedy) no class can take them. More than ``max_suppression`` of the records
suppressed raises :class:`InfeasibleError`.

The parameter is called ``l`` as in the paper (hence the ``noqa: E741`` markers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sqlanon.errors import ConfigError, InfeasibleError, UnsafeReleaseError
from sqlanon.hierarchy import Hierarchy
from sqlanon.metrics import discernibility, precision_loss

GREEDY_MAX_ROWS = 2000
REFINE_MAX_ROWS = 400
SMALL_PART_ROWS = 12  # parts up to this size: the greedy alone (scalable costs per call)
ALGORITHMS = ("auto", "greedy", "scalable", "refine")


@dataclass(frozen=True)
class EarlierRelease:
    """The classes of one published release, seen from the current record set.

    ``class_of_record[i]`` is the class id (0..c-1) that record ``i`` of the current
    candidate set (the order of the columns given to :func:`plan_lhd`) had in that
    release, -1 if that release did not publish it. ``class_values[s][c]`` is the set of
    distinct values class ``c`` published for sensitive attribute ``s``; it has one entry
    per sensitive attribute that release published, each a sequence over all its classes.
    Values are compared with Python equality (``10000 == 10000.0``, ``"10000" != 10000``).
    """

    class_of_record: np.ndarray
    class_values: Mapping[str, Sequence[frozenset[Any]]]

    def __post_init__(self) -> None:
        ids = np.asarray(self.class_of_record)
        if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
            raise ConfigError("class_of_record must be a 1-d integer array (-1 = not published)")
        counts = {s: len(v) for s, v in self.class_values.items()}
        if len(set(counts.values())) > 1:
            raise ConfigError(f"class_values must list every class for every attribute: {counts}")
        n_classes = next(iter(counts.values()), 0)
        if ids.size and (ids.min() < -1 or ids.max() >= n_classes):
            raise ConfigError(
                f"class_of_record holds ids outside -1..{n_classes - 1}; "
                "give class_values for every class id used"
            )
        object.__setattr__(self, "class_of_record", ids.astype(np.int64))


@dataclass(frozen=True)
class LhdPlan:
    """An lHD-diverse release plan.

    ``class_id[i]``: class of record i (0..c-1), -1 if suppressed. Per class ``c``:
    ``class_levels[c, j]`` the level QI ``quasi[j]`` is published at,
    ``class_labels[c][j]`` its label there, ``class_values[s][c]`` the distinct values of
    sensitive attribute ``s``. Classes are numbered by published labels, not record order.
    """

    quasi: tuple[str, ...]
    sensitive: tuple[str, ...]
    l: int  # noqa: E741
    algorithm: str
    class_id: np.ndarray
    class_levels: np.ndarray
    class_labels: tuple[tuple[str, ...], ...]
    class_values: Mapping[str, tuple[frozenset[Any], ...]]
    heights: tuple[int, ...]
    suppressed: int
    precision_loss: float
    dm: int

    @property
    def n_classes(self) -> int:
        return len(self.class_labels)

    @property
    def levels(self) -> np.ndarray:
        """Published level per record and QI, shape (n, |Gamma|); -1 for suppressed."""
        out = np.full((self.class_id.size, len(self.quasi)), -1, dtype=np.int64)
        published = self.class_id >= 0
        out[published] = self.class_levels[self.class_id[published]]
        return out

    def labels(self, qi: str) -> np.ndarray:
        """Published label of ``qi`` per record (object array; None for suppressed)."""
        j = self.quasi.index(qi)
        per_class = np.array([lab[j] for lab in self.class_labels] + [None], dtype=object)
        labels: np.ndarray = per_class[self.class_id]
        return labels

    def as_earlier(self, rows: np.ndarray | None = None) -> EarlierRelease:
        """This release as an :class:`EarlierRelease` for the next one. ``rows[i]`` is
        the index in this plan of record i of the next candidate set (-1 if new)."""
        ids = self.class_id
        if rows is not None:
            rows = np.asarray(rows, dtype=np.int64)
            ids = np.where(rows >= 0, np.append(self.class_id, -1)[rows], -1)
        return EarlierRelease(ids, {s: list(v) for s, v in self.class_values.items()})


@dataclass(frozen=True)
class ComparisonAttack:
    """What an attacker holding every release learns by intersecting (seed 002, 2.2).

    ``cell_of_record[i]``: records in the same class in every release share a cell (the
    attacker can never tell them apart); -1 for a record in no release.
    ``cell_candidates[s][k]``: values of ``s`` still possible for cell ``k`` (intersection
    of the values its classes published), None when no release published ``s`` for it.
    ``exposed[s][i]``: fewer than ``l`` candidates remain for record i.
    """

    l: int  # noqa: E741
    cell_of_record: np.ndarray
    cell_candidates: Mapping[str, tuple[frozenset[Any] | None, ...]]
    exposed: Mapping[str, np.ndarray]

    def candidates(self, record: int, sensitive: str) -> frozenset[Any] | None:
        cell = int(self.cell_of_record[record])
        return None if cell < 0 else self.cell_candidates[sensitive][cell]

    @property
    def exposed_records(self) -> np.ndarray:
        """Indices of records exposed in at least one sensitive attribute."""
        any_exposed = np.zeros(self.cell_of_record.size, dtype=bool)
        for flags in self.exposed.values():
            any_exposed |= flags
        return np.flatnonzero(any_exposed)


@dataclass(frozen=True)
class ComparisonViolation:
    """A new class and an old class sharing a record whose values for ``sensitive``
    have only ``common`` (< l) values in common."""

    release: int
    new_class: int
    old_class: int
    sensitive: str
    common: int


def plan_lhd(
    quasi: Mapping[str, Sequence[Any] | np.ndarray],
    sensitive: Mapping[str, Sequence[Any] | np.ndarray],
    hierarchies: Mapping[str, Hierarchy],
    l: int,  # noqa: E741
    earlier: Sequence[EarlierRelease] = (),
    algorithm: str = "auto",
    max_suppression: float = 0.05,
) -> LhdPlan:
    """Partition the records into lHD-diverse classes (see the module docstring).

    ``quasi``/``sensitive`` map column names to equal-length value arrays (records in
    the same order); ``hierarchies`` must cover every QI column.
    """
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    if not 0.0 <= max_suppression <= 1.0:
        raise ConfigError(f"max_suppression must be in [0, 1], got {max_suppression}")
    problem = _Problem.build(quasi, sensitive, hierarchies, l, earlier)
    active = np.flatnonzero(problem.placeable())
    if algorithm == "auto":
        names = ["greedy", "scalable"] if problem.n <= GREEDY_MAX_ROWS else ["scalable"]
        if problem.newest is not None:
            names.append("refine")
    else:
        names = [algorithm]
    plans = [
        _finish(problem, _checked(problem, _ALGORITHM[name](problem, active)), name)
        for name in names
    ]
    allowed = [p for p in plans if p.suppressed <= max_suppression * problem.n]
    if allowed:
        # equal precision loss (to rounding): the finer partition (lower DM)
        plan = min(allowed, key=lambda p: (round(p.precision_loss, 12), p.dm))
    else:
        plan = min(plans, key=lambda p: p.suppressed)
        raise InfeasibleError(
            f"{plan.algorithm} would suppress {plan.suppressed} of {problem.n} records "
            f"({plan.suppressed / problem.n:.1%}) > max_suppression={max_suppression}; "
            "lower l, publish fewer sensitive attributes, or raise max_suppression"
        )
    return plan


def comparison_attack(
    releases: Sequence[EarlierRelease],
    l: int,  # noqa: E741
) -> ComparisonAttack:
    """Replay the comparison attack over ``releases`` (all indexed over the same records).

    A record's candidates for ``s`` are the intersection of the values of ``s`` published
    by the classes it was in, over the releases that published ``s`` and the record.
    """
    if not releases:
        raise ConfigError("comparison_attack needs at least one release")
    n = releases[0].class_of_record.size
    if any(r.class_of_record.size != n for r in releases):
        raise ConfigError("every release's class_of_record must cover the same records")
    ids = np.stack([r.class_of_record for r in releases], axis=1)
    seen = (ids >= 0).any(axis=1)
    cells, cell_of = np.unique(ids[seen], axis=0, return_inverse=True)
    cell_of_record = np.full(n, -1, dtype=np.int64)
    cell_of_record[seen] = cell_of.reshape(-1)
    names = sorted({s for r in releases for s in r.class_values})
    candidates: dict[str, tuple[frozenset[Any] | None, ...]] = {}
    exposed: dict[str, np.ndarray] = {}
    for s in names:
        per_cell: list[frozenset[Any] | None] = []
        for row in cells:
            common: frozenset[Any] | None = None
            for r, cid in zip(releases, row, strict=True):
                if cid >= 0 and s in r.class_values:
                    values = frozenset(r.class_values[s][cid])
                    common = values if common is None else common & values
            per_cell.append(common)
        candidates[s] = tuple(per_cell)
        short = np.array([c is not None and len(c) < l for c in per_cell] + [False])
        exposed[s] = short[cell_of_record]
    return ComparisonAttack(l, cell_of_record, candidates, exposed)


def comparison_violations(
    new: EarlierRelease,
    earlier: Sequence[EarlierRelease],
    l: int,  # noqa: E741
) -> list[ComparisonViolation]:
    """Pairs (new class, old class) sharing a record whose common values of a sensitive
    attribute both publish are fewer than ``l`` (MODELS.md's pairwise constraint)."""
    found: list[ComparisonViolation] = []
    for index, old in enumerate(earlier):
        both = (new.class_of_record >= 0) & (old.class_of_record >= 0)
        pairs = np.unique(np.stack([new.class_of_record[both], old.class_of_record[both]]), axis=1)
        for s in sorted(set(new.class_values) & set(old.class_values)):
            for c, o in pairs.T.tolist():
                common = len(frozenset(new.class_values[s][c]) & frozenset(old.class_values[s][o]))
                if common < l:
                    found.append(ComparisonViolation(index, c, o, s, common))
    return found


@dataclass
class _Problem:
    """The release encoded as integers: QI codes per level, SA value codes, and per SA the
    earlier releases' candidate sets (``prior``) grouped by signature."""

    n: int
    l: int  # noqa: E741
    quasi: tuple[str, ...]
    sensitive: tuple[str, ...]
    hierarchies: tuple[Hierarchy, ...]
    codes: list[np.ndarray]  # per QI: (n, height + 1)
    flat_codes: np.ndarray  # all QI codes side by side: (n, sum of (height + 1))
    offsets: np.ndarray  # first column of each QI in flat_codes
    depths: np.ndarray  # height + 1 per QI
    heights: np.ndarray  # float, per QI
    sa_codes: list[np.ndarray]  # per SA: (n,)
    sa_values: list[list[Any]]  # per SA: code -> value
    prior: list[_Prior | None] = field(default_factory=list)
    # Scalable algorithm only: records of one class of the newest earlier release that
    # shares a sensitive attribute (a class already valid against all older releases)
    # move together when a split would cut them; None without earlier releases.
    atom: np.ndarray | None = None
    # Refine algorithm: class ids (-1 = not published) in that same release.
    newest: np.ndarray | None = None

    @classmethod
    def build(
        cls,
        quasi: Mapping[str, Sequence[Any] | np.ndarray],
        sensitive: Mapping[str, Sequence[Any] | np.ndarray],
        hierarchies: Mapping[str, Hierarchy],
        l: int,  # noqa: E741
        earlier: Sequence[EarlierRelease],
    ) -> _Problem:
        if isinstance(l, bool) or not isinstance(l, int | np.integer) or l < 2:
            raise ConfigError(f"l must be an integer >= 2, got {l!r}")
        if not quasi or not sensitive:
            raise ConfigError("give at least one quasi-identifier and one sensitive column")
        both = sorted(set(quasi) & set(sensitive))
        if both:
            raise ConfigError(f"columns {both} are both quasi-identifier and sensitive")
        missing = [q for q in quasi if q not in hierarchies]
        if missing:
            raise ConfigError(f"no hierarchy for quasi-identifier(s) {missing}; load one per QI")
        lengths = {name: len(col) for name, col in {**quasi, **sensitive}.items()}
        if len(set(lengths.values())) != 1:
            raise ConfigError(f"columns must have the same length: {lengths}")
        n = next(iter(lengths.values()))
        if n < l:
            raise InfeasibleError(f"l={l} needs at least {l} records; the release has {n}")
        hs = tuple(hierarchies[q] for q in quasi)
        codes = [h.encode(quasi[q]) for q, h in zip(quasi, hs, strict=True)]
        sa_codes, sa_values = [], []
        for s, column in sensitive.items():
            index: dict[Any, int] = {}
            values = np.asarray(column, dtype=object).tolist()
            for v in values:
                if v is None or v != v:
                    raise ConfigError(
                        f'sensitive column "{s}" has a missing value; fill or drop it first'
                    )
            coded = np.array([index.setdefault(v, len(index)) for v in values], dtype=np.int64)
            if len(index) < l:
                raise InfeasibleError(
                    f'l={l} needs {l} distinct values of "{s}"; the data has {len(index)}'
                )
            sa_codes.append(coded)
            sa_values.append(list(index))
        for r in earlier:
            if r.class_of_record.size != n:
                raise ConfigError(
                    f"an earlier release's class_of_record has {r.class_of_record.size} "
                    f"entries; give one per current record ({n})"
                )
        problem = cls(
            n=n,
            l=int(l),
            quasi=tuple(quasi),
            sensitive=tuple(sensitive),
            hierarchies=hs,
            codes=codes,
            flat_codes=np.concatenate(codes, axis=1),
            offsets=np.cumsum([0] + [c.shape[1] for c in codes[:-1]]),
            depths=np.array([c.shape[1] for c in codes], dtype=np.int64),
            heights=np.array([h.height for h in hs], dtype=np.float64),
            sa_codes=sa_codes,
            sa_values=sa_values,
        )
        problem.prior = [
            _Prior.build(s, sa_values[i], earlier, n) for i, s in enumerate(problem.sensitive)
        ]
        sharing = [r for r in earlier if set(r.class_values) & set(problem.sensitive)]
        if sharing:
            ids = sharing[-1].class_of_record
            problem.newest = ids
            problem.atom = np.where(ids >= 0, ids, ids.max(initial=0) + 1 + np.arange(n))
        return problem

    def placeable(self) -> np.ndarray:
        """Records that can be in some valid class: iteratively drop records whose prior
        candidates meet the values still present in fewer than l values."""
        active = np.ones(self.n, dtype=bool)
        while True:
            drop = np.zeros(self.n, dtype=bool)
            for s, prior in enumerate(self.prior):
                if prior is None:
                    continue
                present = np.zeros(len(self.sa_values[s]), dtype=bool)
                present[self.sa_codes[s][active]] = True
                hits = np.array(
                    [int(present[list(c)].sum()) for c in prior.candidates], dtype=np.int64
                )
                sig = prior.signature
                drop |= active & (sig >= 0) & (hits[np.maximum(sig, 0)] < self.l)
            if not drop.any():
                break
            active &= ~drop
        for s, name in enumerate(self.sensitive):
            distinct = np.unique(self.sa_codes[s][active]).size
            if distinct < self.l:
                raise InfeasibleError(
                    f'l={self.l} needs {self.l} distinct values of "{name}" among records the '
                    f"earlier releases leave placeable; there are {distinct}"
                )
        return active


@dataclass
class _Prior:
    """Per record, the signature (tuple of its classes in the earlier releases that
    published this SA) and per signature the candidate value codes left by them."""

    signature: np.ndarray  # (n,), -1 = no earlier release published it
    candidates: list[frozenset[int]]
    ptr: np.ndarray  # CSR over signatures
    flat: np.ndarray

    @classmethod
    def build(
        cls, sa: str, values: list[Any], earlier: Sequence[EarlierRelease], n: int
    ) -> _Prior | None:
        relevant = [r for r in earlier if sa in r.class_values]
        if not relevant:
            return None
        code_of = {v: i for i, v in enumerate(values)}
        per_release = [
            [frozenset(code_of[v] for v in vals if v in code_of) for vals in r.class_values[sa]]
            for r in relevant
        ]
        ids = np.stack([r.class_of_record for r in relevant], axis=1)
        seen = (ids >= 0).any(axis=1)
        if not seen.any():
            return None  # none of the current records was published with this SA
        rows, inverse = np.unique(ids[seen], axis=0, return_inverse=True)
        signature = np.full(n, -1, dtype=np.int64)
        signature[seen] = inverse.reshape(-1)
        candidates: list[frozenset[int]] = []
        for row in rows.tolist():
            sets = [per_release[j][cid] for j, cid in enumerate(row) if cid >= 0]
            candidates.append(frozenset.intersection(*sets))
        lengths = np.array([len(c) for c in candidates], dtype=np.int64)
        ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = np.array([v for c in candidates for v in sorted(c)], dtype=np.int64)
        return cls(signature, candidates, ptr, flat)


def _lca_levels(problem: _Problem, block: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Per row of ``block`` (rows of ``flat_codes``) and QI: the lowest level at which
    the row shares its ancestor with ``ref``. In a tree, sharing the ancestor at a level
    means sharing it at every level above, so the level is the count of unequal ones."""
    equal = np.add.reduceat(block == ref, problem.offsets, axis=-1, dtype=np.int64)
    levels: np.ndarray = problem.depths - equal
    return levels


def _common_levels(problem: _Problem, idx: np.ndarray) -> np.ndarray:
    """Lowest level per QI at which all records ``idx`` share one ancestor."""
    block = problem.flat_codes[idx]
    same = (block == block[0]).all(axis=0)
    levels: np.ndarray = problem.depths - np.add.reduceat(same, problem.offsets, dtype=np.int64)
    return levels


class _GreedyClass:
    """A class under construction: its distinct SA values and pending prior signatures."""

    def __init__(self, problem: _Problem, seed: int) -> None:
        self.problem = problem
        self.members = [seed]
        self.present = [np.zeros(len(v), dtype=bool) for v in problem.sa_values]
        self.distinct = [0] * len(problem.sa_values)
        self.values: list[set[int]] = [set() for _ in problem.sa_values]
        self.pending: list[set[int]] = [set() for _ in problem.sa_values]
        self.signatures: list[set[int]] = [set() for _ in problem.sa_values]
        self.levels = np.zeros(len(problem.codes), dtype=np.int64)
        self._absorb(seed)

    def _absorb(self, r: int) -> None:
        for s, codes in enumerate(self.problem.sa_codes):
            v = int(codes[r])
            if not self.present[s][v]:
                self.present[s][v] = True
                self.distinct[s] += 1
                self.values[s].add(v)
            prior = self.problem.prior[s]
            if prior is not None and prior.signature[r] >= 0:
                sig = int(prior.signature[r])
                if sig not in self.signatures[s]:
                    self.signatures[s].add(sig)
                    self.pending[s].add(sig)

    def add(self, r: int, levels: np.ndarray) -> None:
        self.members.append(r)
        self.levels = levels
        self._absorb(r)

    def failing(self) -> list[int]:
        """Sensitive attributes on which the class is not yet valid."""
        out = []
        for s in range(len(self.values)):
            if self.distinct[s] < self.problem.l:
                out.append(s)
                continue
            prior = self.problem.prior[s]
            if prior is not None and self.pending[s]:
                # values only grow, so a signature that passed once passes for good
                self.pending[s] = {
                    g
                    for g in self.pending[s]
                    if len(prior.candidates[g] & self.values[s]) < self.problem.l
                }
                if self.pending[s]:
                    out.append(s)
        return out

    def accepts(self, r: int) -> bool:
        """Whether adding record r keeps this (valid) class valid."""
        for s, codes in enumerate(self.problem.sa_codes):
            prior = self.problem.prior[s]
            if prior is None or prior.signature[r] < 0:
                continue
            values = self.values[s] | {int(codes[r])}
            if len(prior.candidates[int(prior.signature[r])] & values) < self.problem.l:
                return False
        return True


def _greedy(problem: _Problem, idx: np.ndarray) -> list[np.ndarray]:
    """Seed 002's greedy over the records ``idx``; returns the classes (global record
    indices). Records in no class are suppressed."""
    heights = problem.heights[:, None]
    block = problem.flat_codes[idx]
    remaining = np.ones(idx.size, dtype=bool)
    counts = [
        np.bincount(c[idx], minlength=len(v))
        for c, v in zip(problem.sa_codes, problem.sa_values, strict=True)
    ]
    distinct_left = [int((c > 0).sum()) for c in counts]

    def take(i: int) -> None:
        remaining[i] = False
        for s, sa in enumerate(problem.sa_codes):
            v = sa[idx[i]]
            counts[s][v] -= 1
            if counts[s][v] == 0:
                distinct_left[s] -= 1

    done: list[_GreedyClass] = []
    leftovers: list[int] = []
    for seed in range(idx.size):
        if not remaining[seed]:
            continue
        if min(distinct_left) < problem.l:
            leftovers.extend(idx[remaining].tolist())
            break
        take(seed)
        current = _GreedyClass(problem, int(idx[seed]))
        lca = _lca_levels(problem, block, block[seed]).T
        cost = (lca / heights).sum(axis=0)
        cost[~remaining] = np.inf
        failing = current.failing()
        while failing:
            best = cost.min()
            if best == np.inf:
                break
            ties = np.flatnonzero(cost == best)
            if ties.size > 1:
                helpful = np.zeros(ties.size, dtype=bool)
                for s in failing:
                    helpful |= ~current.present[s][problem.sa_codes[s][idx[ties]]]
                i = int(ties[np.argmax(helpful)])
            else:
                i = int(ties[0])
            take(i)
            levels = np.maximum(current.levels, lca[:, i])
            if (levels != current.levels).any():
                cost = (np.maximum(lca, levels[:, None]) / heights).sum(axis=0)
                cost[~remaining] = np.inf
            else:
                cost[i] = np.inf
            current.add(int(idx[i]), levels)
            failing = current.failing()
        if failing:
            leftovers.extend(current.members)
            break
        done.append(current)
    _merge_leftovers(problem, done, leftovers)
    return [np.array(sorted(c.members), dtype=np.int64) for c in done]


def _merge_leftovers(problem: _Problem, done: list[_GreedyClass], leftovers: list[int]) -> None:
    """Put each leftover record into the class whose precision loss grows least among
    those that stay valid with it; records no class accepts stay out (suppressed)."""
    if not done:
        return
    seeds = np.array([c.members[0] for c in done], dtype=np.int64)
    for r in sorted(leftovers):
        levels = np.stack([c.levels for c in done])
        sizes = np.array([len(c.members) for c in done], dtype=np.float64)
        lca = _lca_levels(problem, problem.flat_codes[seeds], problem.flat_codes[r])
        grown = np.maximum(levels, lca)
        before = sizes * (levels / problem.heights).sum(axis=1)
        after = (sizes + 1) * (grown / problem.heights).sum(axis=1)
        for k in np.argsort(after - before, kind="stable").tolist():
            if done[k].accepts(r):
                done[k].add(r, grown[k])
                break


def _group_validity(problem: _Problem, idx: np.ndarray, group: np.ndarray, k: int) -> np.ndarray:
    """For records ``idx`` split into groups ``group`` (0..k-1): which groups are valid
    classes (l-diverse and meeting the cell rule in every SA)."""
    ok = np.ones(k, dtype=bool)
    for s, codes in enumerate(problem.sa_codes):
        nv = len(problem.sa_values[s])
        keys = np.unique(group * nv + codes[idx])
        ok &= np.bincount(keys // nv, minlength=k) >= problem.l
        prior = problem.prior[s]
        if prior is None:
            continue
        sig = prior.signature[idx]
        has = sig >= 0
        if not has.any():
            continue
        nsig = len(prior.candidates)
        pairs = np.unique(group[has] * nsig + sig[has])
        pair_group, pair_sig = pairs // nsig, pairs % nsig
        start = prior.ptr[pair_sig]
        length = prior.ptr[pair_sig + 1] - start
        pair_of = np.repeat(np.arange(pairs.size), length)
        offset = np.arange(pair_of.size) - np.repeat(np.cumsum(length) - length, length)
        wanted = pair_group[pair_of] * nv + prior.flat[np.repeat(start, length) + offset]
        pos = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
        hits = np.bincount(pair_of, weights=keys[pos] == wanted, minlength=pairs.size)
        ok[pair_group[hits < problem.l]] = False
    return ok


def _failing_records(problem: _Problem, members: np.ndarray) -> np.ndarray:
    """Which records of one would-be class break it: all of them when it is not
    l-diverse, else those whose prior candidates meet its values in fewer than l."""
    failing = np.zeros(members.size, dtype=bool)
    for s, codes in enumerate(problem.sa_codes):
        present = np.zeros(len(problem.sa_values[s]), dtype=bool)
        present[codes[members]] = True
        if int(present.sum()) < problem.l:
            return np.ones(members.size, dtype=bool)
        prior = problem.prior[s]
        if prior is None:
            continue
        sig = prior.signature[members]
        has = sig >= 0
        if not has.any():
            continue
        sigs, back = np.unique(sig[has], return_inverse=True)
        covered = np.concatenate([[0], np.cumsum(present[prior.flat])])
        hits = covered[prior.ptr[sigs + 1]] - covered[prior.ptr[sigs]]
        failing[np.flatnonzero(has)[hits[back.reshape(-1)] < problem.l]] = True
    return failing


def _is_valid(problem: _Problem, members: np.ndarray) -> bool:
    return bool(_group_validity(problem, members, np.zeros(members.size, dtype=np.int64), 1)[0])


def _split(
    problem: _Problem, idx: np.ndarray, q: int, level: int
) -> tuple[list[np.ndarray], int] | None:
    """Split ``idx`` (common level ``level`` on QI q) into valid parts by the children one
    level down; returns the parts and how many records got the finer level.

    Atoms (see ``_Problem.atom``) that span several children go to a pool kept at
    ``level``. A child that is not valid on its own sheds the records that break it
    (repeatedly, since shedding removes values) into the pool; the pool is a part of its
    own when valid, else it joins the smallest child it keeps valid.
    """
    children = problem.codes[q][idx, level - 1]
    pool_parts = []
    if problem.atom is not None:
        _, atom = np.unique(problem.atom[idx], return_inverse=True)
        atom = atom.reshape(-1)
        low = np.full(int(atom.max()) + 1, np.iinfo(np.int64).max)
        high = np.full(low.size, -1)
        np.minimum.at(low, atom, children)
        np.maximum.at(high, atom, children)
        cut = (low != high)[atom]
        pool_parts.append(idx[cut])
        idx, children = idx[~cut], children[~cut]
        if idx.size == 0:
            return None
    _, group = np.unique(children, return_inverse=True)
    group = group.reshape(-1)
    k = int(group.max()) + 1
    ok = _group_validity(problem, idx, group, k)
    valid = [idx[group == g] for g in np.flatnonzero(ok)]
    for g in np.flatnonzero(~ok).tolist():
        members = idx[group == g]
        while members.size:
            failing = _failing_records(problem, members)
            if not failing.any():
                valid.append(members)
                break
            pool_parts.append(members[failing])
            members = members[~failing]
    pool = np.concatenate(pool_parts) if pool_parts else idx[:0]
    if pool.size == 0:
        return (valid, idx.size) if len(valid) >= 2 else None
    if _is_valid(problem, pool):
        return ([*valid, pool], sum(v.size for v in valid)) if valid else None
    if len(valid) < 2:
        return None
    for j in sorted(range(len(valid)), key=lambda j: valid[j].size):
        merged = np.concatenate([valid[j], pool])
        if _is_valid(problem, merged):
            parts = [v for i, v in enumerate(valid) if i != j] + [merged]
            return parts, sum(v.size for i, v in enumerate(valid) if i != j)
    return None


def _top_down(problem: _Problem, idx: np.ndarray) -> list[np.ndarray]:
    """Top-down specialization, then the greedy inside every small final partition
    (kept only when it places every record and lowers the precision loss)."""
    if idx.size == 0:
        return []
    final: list[np.ndarray] = []
    stack = [idx]
    while stack:
        part = stack.pop()
        levels = _common_levels(problem, part)
        best: list[np.ndarray] | None = None
        best_gain = 0.0
        for q in np.flatnonzero(levels > 0).tolist():
            split = _split(problem, part, q, int(levels[q]))
            if split is not None and split[1] / problem.heights[q] > best_gain:
                best, best_gain = split[0], split[1] / problem.heights[q]
        if best is None:
            final.extend(_refine(problem, np.sort(part), levels))
        else:
            stack.extend(best)
    return final


def _loss(problem: _Problem, members: np.ndarray, levels: np.ndarray) -> float:
    return float(members.size * (levels / problem.heights).sum())


def _refine(problem: _Problem, part: np.ndarray, levels: np.ndarray) -> list[np.ndarray]:
    if not levels.any() or not 2 * problem.l <= part.size <= REFINE_MAX_ROWS:
        return [part]
    pieces = _greedy(problem, part)
    if sum(p.size for p in pieces) != part.size:
        return [part]
    refined = sum(_loss(problem, p, _common_levels(problem, p)) for p in pieces)
    return pieces if refined < _loss(problem, part, levels) else [part]


def _planned_loss(problem: _Problem, idx: np.ndarray, classes: list[np.ndarray]) -> float:
    """Precision loss (unnormalised) of ``classes`` over ``idx``; unplaced records count
    as suppressed (every QI at the top)."""
    placed = sum(c.size for c in classes)
    loss = sum(_loss(problem, c, _common_levels(problem, c)) for c in classes)
    return loss + (idx.size - placed) * len(problem.quasi)


def _plan_part(problem: _Problem, idx: np.ndarray) -> list[np.ndarray]:
    """Valid classes over (part of) ``idx``: records that break the whole set are shed
    first (a subset need not be valid), then greedy and scalable as ``auto`` runs them.
    Shed or unplaced records are simply missing from the result."""
    while idx.size:
        failing = _failing_records(problem, idx)
        if not failing.any():
            break
        idx = idx[~failing]
    if idx.size < 2 * problem.l:
        return [idx] if idx.size else []
    options = [] if idx.size <= SMALL_PART_ROWS else [_top_down(problem, idx)]
    if idx.size <= GREEDY_MAX_ROWS:
        options.append(_greedy(problem, idx))
    # equal loss (to rounding): the finer partition, as plan_lhd's auto does
    return min(
        options,
        key=lambda cs: (round(_planned_loss(problem, idx, cs), 9), sum(c.size**2 for c in cs)),
    )


def _refine_earlier(problem: _Problem, idx: np.ndarray) -> list[np.ndarray]:
    """The ``refine`` algorithm (module docstring): plan every class of the newest earlier
    release sharing a sensitive attribute on its own, the records it did not publish
    together, then place the records left over."""
    if problem.newest is None:
        return _plan_part(problem, idx)
    old = problem.newest[idx]
    classes = _plan_part(problem, idx[old < 0])
    covered = idx[old >= 0]
    covered = covered[np.argsort(old[old >= 0], kind="stable")]
    bounds = np.flatnonzero(np.diff(problem.newest[covered])) + 1
    # inside one class of that release every record has the same atom: no atoms here
    inner = replace(problem, atom=None)
    for members in np.split(covered, bounds) if covered.size else []:
        classes.extend(_plan_part(inner, np.sort(members)))
    placed = np.zeros(problem.n, dtype=bool)
    for c in classes:
        placed[c] = True
    leftovers = idx[~placed[idx]]
    return _place_leftovers(problem, classes, leftovers)


def _place_leftovers(
    problem: _Problem, classes: list[np.ndarray], leftovers: np.ndarray
) -> list[np.ndarray]:
    """Put each leftover record into the valid class whose precision loss grows least
    among those it keeps valid; the others stay out (suppressed). Adding a record only
    adds values, so the class stays l-diverse and its other records keep their
    candidates: only the newcomer's own cell rule needs checking."""
    if not classes or leftovers.size == 0:
        return classes
    classes = list(classes)
    levels = np.stack([_common_levels(problem, c) for c in classes])
    seeds = problem.flat_codes[np.array([c[0] for c in classes], dtype=np.int64)]
    sizes = np.array([c.size for c in classes], dtype=np.float64)
    values = [
        [set(codes[c].tolist()) for c in classes] if prior is not None else []
        for codes, prior in zip(problem.sa_codes, problem.prior, strict=True)
    ]

    def accepts(k: int, r: int) -> bool:
        for s, prior in enumerate(problem.prior):
            if prior is None or prior.signature[r] < 0:
                continue
            have = values[s][k] | {int(problem.sa_codes[s][r])}
            if len(prior.candidates[int(prior.signature[r])] & have) < problem.l:
                return False
        return True

    for r in leftovers.tolist():
        grown = np.maximum(levels, _lca_levels(problem, seeds, problem.flat_codes[r]))
        growth = (sizes + 1) * (grown / problem.heights).sum(axis=1) - sizes * (
            levels / problem.heights
        ).sum(axis=1)
        for k in np.argsort(growth, kind="stable").tolist():
            if accepts(k, r):
                classes[k] = np.append(classes[k], r)
                levels[k], sizes[k] = grown[k], sizes[k] + 1
                for s, per_class in enumerate(values):
                    if per_class:
                        per_class[k].add(int(problem.sa_codes[s][r]))
                break
    return [np.sort(c) for c in classes]


_ALGORITHM = {"greedy": _greedy, "scalable": _top_down, "refine": _refine_earlier}


def _checked(problem: _Problem, classes: list[np.ndarray]) -> list[np.ndarray]:
    """Re-check every class from scratch before anything is published."""
    if classes:
        idx = np.concatenate(classes)
        group = np.repeat(np.arange(len(classes)), [c.size for c in classes])
        if (
            np.unique(idx).size != idx.size
            or not _group_validity(problem, idx, group, len(classes)).all()
        ):
            raise UnsafeReleaseError(
                "internal error: a planned lHD class breaks l-diversity or the comparison "
                "constraint; nothing was published; please report this with the input"
            )
    return classes


def _distinct_values(problem: _Problem, classes: list[np.ndarray]) -> list[list[frozenset[Any]]]:
    """Per sensitive attribute, per class: its distinct values."""
    idx = np.concatenate(classes)
    group = np.repeat(np.arange(len(classes)), [c.size for c in classes])
    out = []
    for s, codes in enumerate(problem.sa_codes):
        nv = len(problem.sa_values[s])
        keys = np.unique(group * nv + codes[idx])
        bounds = np.searchsorted(keys // nv, np.arange(len(classes) + 1))
        names = problem.sa_values[s]
        codes_of = (keys % nv).tolist()
        out.append(
            [
                frozenset(names[v] for v in codes_of[bounds[c] : bounds[c + 1]])
                for c in range(len(classes))
            ]
        )
    return out


def _finish(problem: _Problem, classes: list[np.ndarray], algorithm: str) -> LhdPlan:
    levels = [_common_levels(problem, c) for c in classes]
    labels = [
        tuple(
            h.label(int(lv[q]), int(problem.codes[q][c[0], lv[q]]))
            for q, h in enumerate(problem.hierarchies)
        )
        for c, lv in zip(classes, levels, strict=True)
    ]
    values = list(zip(*_distinct_values(problem, classes), strict=True)) if classes else []
    order = sorted(
        range(len(classes)),
        key=lambda i: (labels[i], [sorted(map(repr, v)) for v in values[i]]),
    )
    class_id = np.full(problem.n, -1, dtype=np.int64)
    for new, old in enumerate(order):
        class_id[classes[old]] = new
    class_levels = (
        np.stack([levels[i] for i in order])
        if order
        else np.zeros((0, len(problem.quasi)), dtype=np.int64)
    )
    published = class_id >= 0
    suppressed = int(problem.n - published.sum())
    heights = tuple(h.height for h in problem.hierarchies)
    return LhdPlan(
        quasi=problem.quasi,
        sensitive=problem.sensitive,
        l=problem.l,
        algorithm=algorithm,
        class_id=class_id,
        class_levels=class_levels,
        class_labels=tuple(labels[i] for i in order),
        class_values={
            s: tuple(values[i][j] for i in order) for j, s in enumerate(problem.sensitive)
        },
        heights=heights,
        suppressed=suppressed,
        precision_loss=precision_loss(class_levels[class_id[published]], heights, suppressed),
        dm=discernibility([c.size for c in classes], suppressed),
    )
