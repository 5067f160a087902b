"""lHD-diversity with local recoding over generalization hierarchies (seed 002, MODELS.md).

Input of one release: the raw QI columns (Gamma) with their hierarchies, the sensitive
columns (Delta), ``l``, and the cells the earlier releases of the domain left the records
in (:class:`sqlanon.models.cells.Cells`: every family, both models). Output
(:class:`LhdPlan`): the class of every record (-1 = absent) and, per class, the level
each QI is published at (the lowest level at which all members share one ancestor).

Guarantee of every plan, whatever the algorithm (MODELS.md, the lHD cell rule): a class
is a union of **pieces**, its records of one old cell or its records no release has
published yet; every piece has at least ``l`` distinct values of every sensitive
attribute published now and meets its old cell's own requirement (other attributes,
(k,e) spreads) on the multiset of its values. A piece becomes a cell, so after the
release every cell meets the requirement of every release in its history. Records of an
old cell left out (absence is visible) form a piece too, which must still meet the old
cell's requirement. This implies the seed's comparison constraint and covers the
multiset attacker the seed's set-based constraint misses (appended records in an old
class must be l-diverse among themselves). An old cell that cannot meet this release's
``l`` as a whole (e.g. a sensitive attribute it never published) is left out whole.

Algorithms:

- ``greedy``: seed 002's Algorithm 1. Seed a class with the first unassigned record, add
  the record that raises the class's precision loss least until the class is valid
  (while a piece is not, only records of that piece's cell can mend it); classes that
  cannot be completed leave their records to be merged into the nearest class holding a
  valid piece of their cell, else left out. Ties in precision loss go to a record that
  brings a value its piece still lacks (the paper leaves ties open). With no earlier
  release this is the paper's greedy. O(n^2); for small tables.
- ``scalable``: top-down specialization with local recoding. A partition at common
  levels ``lv`` is split, on the QI that specializes the most records (weighted by
  1/height), into the hierarchy children one level below ``lv``. Records of one old cell
  move together when a split would cut them, and children that are not valid shed the
  pieces that break them; shed records form a pool that is a part of its own or joins
  the smallest child it keeps valid. A partition stops when no QI gives two valid
  parts; final partitions of up to 400 records are then re-cut by the greedy when that
  places all of them at a lower precision loss. About O(n * total hierarchy height *
  |Gamma|) plus the small greedy runs.
- ``refine`` (needs old cells, else it plans all records together as below): each old
  cell is planned on its own (greedy alone up to 12 records, greedy and scalable up to
  2,000, the lower precision loss kept; scalable above) into l-diverse pieces, which are
  then valid by construction; the new records are planned together the same way.
  Records no piece can hold join the valid class holding a piece of their cell whose
  precision loss grows least, else are left out.
- ``auto``: up to 2,000 records greedy and scalable, above that scalable; with old cells,
  refine too. Keeps the lowest precision loss among the plans within
  ``max_suppression``, the lower DM on a tie.

Identical records (equal QI values, equal values of every attribute checked, the same
old cell) form a **unit**, planned as up to ``UNIT_SINGLES`` entries of one record and
one entry of the rest, each weighted by its records (:meth:`_Problem.units`): a class
that needs the unit's value can take one record of it, as the record-by-record greedy
does, while the rest stays together. The planner's cost follows the distinct records,
not the rows, and a caller that counted the records in the database (``weight``) gets
the plan of the rows. The size limits above count entries. The price, measured in
BENCHMARKS.md (``lhd-units``): a precision loss a few percent above planning every
record alone on tables with many identical records.

Records left out are **held back** when no release has published them yet (offered
again next time) and **suppressed** when one has. More than ``max_suppression`` of the
records left out raises :class:`InfeasibleError`.

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
from sqlanon.models.cells import Cells, piece_meets

GREEDY_MAX_ROWS = 2000
REFINE_MAX_ROWS = 400
SMALL_PART_ROWS = 12  # parts up to this size: the greedy alone (scalable costs per call)
ALGORITHMS = ("auto", "greedy", "scalable", "refine")
#: Records of a unit of identical records planned one by one (the rest as one entry):
#: on 200,000 Adult-like rows, 2 gives a precision loss within 2.5% of planning every
#: record alone (1: 5%, none: 20%) at a third of its time (BENCHMARKS.md, lhd-units).
UNIT_SINGLES = 2


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
    class_labels: tuple[tuple[str | None, ...], ...]  # None: NULL, the missing value's branch
    class_values: Mapping[str, tuple[frozenset[Any], ...]]
    heights: tuple[int, ...]
    suppressed: int  # absent now, published by an earlier release of the domain
    precision_loss: float
    dm: int
    held_back: int = 0  # absent now, never published yet: offered again next time
    # Per given entry (see plan_lhd's ``weight``) and rank j of its records: the class of
    # the record of rank j, the last column for every rank from UNIT_SINGLES on (-1:
    # left out, or no such record). Records one by one: column 0 is ``class_id``.
    rank_class: np.ndarray | None = None

    @property
    def absent(self) -> int:
        """Records not in this release (suppressed or held back)."""
        return self.suppressed + self.held_back

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
    prior: Cells | None = None,
    algorithm: str = "auto",
    max_suppression: float = 0.05,
    checked: Mapping[str, Sequence[Any] | np.ndarray] | None = None,
    weight: Sequence[int] | np.ndarray | None = None,
) -> LhdPlan:
    """Partition the records into lHD-diverse classes (see the module docstring).

    ``quasi``/``sensitive`` map column names to equal-length value arrays (records in
    the same order); ``hierarchies`` must cover every QI column. ``prior``: the cells
    the earlier releases of the domain left these records in (None: a first release);
    ``checked`` the values of the attributes those cells constrain that this release
    does not publish (every piece of an old cell must keep them). ``weight[i]``: the
    number of identical records entry i stands for (a caller that counted them in the
    database); the plan is the one of the records one by one, given in that order (see
    :meth:`_Problem.units`); ``class_id`` is then the class of each entry's first
    record and ``rank_class`` that of each of its records by rank.
    """
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    if not 0.0 <= max_suppression <= 1.0:
        raise ConfigError(f"max_suppression must be in [0, 1], got {max_suppression}")
    given = _Problem.build(quasi, sensitive, hierarchies, l, prior, checked or {}, weight)
    problem, entry = given.units()
    active = np.flatnonzero(problem.placeable())
    if algorithm == "auto":
        names = ["greedy", "scalable"] if problem.n <= GREEDY_MAX_ROWS else ["scalable"]
        if problem.newest is not None:
            names.append("refine")
    else:
        names = [algorithm]
    plans = [
        _finish(
            problem,
            _checked(problem, _keep_absent_valid(problem, _ALGORITHM[name](problem, active))),
            name,
        )
        for name in names
    ]
    records = problem.records
    allowed = [p for p in plans if p.absent <= max_suppression * records]
    if allowed:
        # equal precision loss (to rounding): the finer partition (lower DM)
        plan = min(allowed, key=lambda p: (round(p.precision_loss, 12), p.dm))
    else:
        plan = min(plans, key=lambda p: p.absent)
        raise InfeasibleError(
            f"{plan.algorithm} would leave out {plan.absent} of {records} records "
            f"({plan.absent / records:.1%}: {plan.suppressed} published before, "
            f"{plan.held_back} new) > max_suppression={max_suppression}; lower l, publish "
            "fewer sensitive attributes, or raise max_suppression"
        )
    by_rank = np.where(entry >= 0, np.append(plan.class_id, -1)[entry], -1)
    return replace(plan, class_id=by_rank[:, 0], rank_class=by_rank)


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
    """The release encoded as integers: QI codes per level, SA value codes, and the cell
    rule as pieces: every record's old cell (``piece_cell``; the records no release has
    published share one more id, ``new_cell``) and what a piece of each must keep."""

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
    piece_cell: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    new_cell: int = 0
    # Per checked attribute (the published SA and the attributes old cells constrain):
    # value codes, and float values where some cell needs a spread (else None).
    check_codes: list[np.ndarray] = field(default_factory=list)
    check_numbers: list[np.ndarray | None] = field(default_factory=list)
    # Per cell id (0..new_cell) and checked attribute: what a piece published now must
    # hold (the old requirement and this release's l), and what a piece left out keeps.
    need_distinct: np.ndarray = field(default_factory=lambda: np.zeros((1, 0), np.int64))
    need_spread: np.ndarray = field(default_factory=lambda: np.zeros((1, 0)))
    keep_distinct: np.ndarray = field(default_factory=lambda: np.zeros((1, 0), np.int64))
    keep_spread: np.ndarray = field(default_factory=lambda: np.zeros((1, 0)))
    # Scalable algorithm: the records of one old cell move together when a split would
    # cut them (None without old cells). Refine: old cell per record, -1 = new.
    atom: np.ndarray | None = None
    newest: np.ndarray | None = None
    # Records each entry stands for (all 1 until :meth:`units` merges identical ones).
    weight: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def records(self) -> int:
        return int(self.weight.sum())

    def size(self, idx: np.ndarray) -> int:
        """Records the entries ``idx`` stand for."""
        return int(self.weight[idx].sum())

    @classmethod
    def build(
        cls,
        quasi: Mapping[str, Sequence[Any] | np.ndarray],
        sensitive: Mapping[str, Sequence[Any] | np.ndarray],
        hierarchies: Mapping[str, Hierarchy],
        l: int,  # noqa: E741
        prior: Cells | None,
        checked: Mapping[str, Sequence[Any] | np.ndarray],
        weight: Sequence[int] | np.ndarray | None = None,
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
        weights = np.ones(n, dtype=np.int64) if weight is None else np.asarray(weight)
        if weights.shape != (n,) or (n and (weights.dtype.kind not in "iu" or weights.min() < 1)):
            raise ConfigError(f"weight must hold one positive integer per record ({n})")
        if int(weights.sum()) < l:
            raise InfeasibleError(
                f"l={l} needs at least {l} records; the release has {int(weights.sum())}"
            )
        hs = tuple(hierarchies[q] for q in quasi)
        codes = [h.encode(quasi[q]) for q, h in zip(quasi, hs, strict=True)]
        sa_codes, sa_values = [], []
        for s, column in sensitive.items():
            values = np.asarray(column, dtype=object)
            for v in values.tolist():
                if v is None or v != v:
                    raise ConfigError(
                        f'sensitive column "{s}" has a missing value; fill or drop it first'
                    )
            coded, distinct = _sorted_codes(values)
            if len(distinct) < l:
                raise InfeasibleError(
                    f'l={l} needs {l} distinct values of "{s}"; the data has {len(distinct)}'
                )
            sa_codes.append(coded)
            sa_values.append(distinct)
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
            weight=weights.astype(np.int64),
        )
        problem._set_cells(prior if prior is not None else Cells.empty(n), sensitive, checked)
        return problem

    def _set_cells(
        self,
        prior: Cells,
        sensitive: Mapping[str, Sequence[Any] | np.ndarray],
        checked: Mapping[str, Sequence[Any] | np.ndarray],
    ) -> None:
        if prior.cell.size != self.n:
            raise ConfigError(
                f"prior has {prior.cell.size} records; give one per record ({self.n})"
            )
        old = prior.cell >= 0
        ids, dense = np.unique(prior.cell[old], return_inverse=True)
        self.new_cell = int(ids.size)
        self.piece_cell = np.full(self.n, self.new_cell, dtype=np.int64)
        self.piece_cell[old] = dense.reshape(-1)
        names, distinct, spread = prior.widened(self.sensitive)
        keep_d = np.vstack([distinct[ids], np.zeros((1, len(names)), np.int64)])
        keep_s = np.vstack([spread[ids], np.zeros((1, len(names)))])
        need_d = keep_d.copy()
        for s in self.sensitive:
            need_d[:, names.index(s)] = np.maximum(need_d[:, names.index(s)], self.l)
        self.need_distinct, self.need_spread = need_d, keep_s.copy()
        self.keep_distinct, self.keep_spread = keep_d, keep_s
        self.check_codes, self.check_numbers = [], []
        for j, a in enumerate(names):
            if a in self.sensitive:
                column: Sequence[Any] | np.ndarray = sensitive[a]
                codes = self.sa_codes[self.sensitive.index(a)]
            elif a in checked:
                column = checked[a]
                if len(column) != self.n:
                    raise ConfigError(f"checked values of {a!r} must have one entry per record")
                codes = _sorted_codes(np.asarray(column, dtype=object))[0]
            elif not (keep_d[:, j] > 0).any() and not (keep_s[:, j] > 0).any():
                column, codes = [], np.zeros(self.n, dtype=np.int64)
            else:
                raise ConfigError(
                    f"earlier releases constrain {a!r}; give its values (checked) to plan"
                )
            self.check_codes.append(codes)
            wants_spread = bool((keep_s[:, j] > 0).any())
            self.check_numbers.append(
                np.asarray(column, dtype=np.float64) if wants_spread else None
            )
        if self.new_cell:
            self.newest = np.where(old, self.piece_cell, -1)
            self.atom = np.where(old, self.piece_cell, self.new_cell + np.arange(self.n))

    def units(self) -> tuple[_Problem, np.ndarray]:
        """The problem over units, and where each given record went.

        A unit is a set of identical records (equal QI values, equal values of every
        checked attribute, the published sensitive ones included, and the same old
        cell), in the order of its first record. It is planned as up to
        :data:`UNIT_SINGLES` entries of one record (its first ones) and one entry of the
        rest, each weighted by its records: so a class that needs a unit's value can
        take one record of it (as the seed's greedy does, record by record) while the
        rest stays together, and the planner's cost follows the distinct records, not
        the rows. Nothing published or kept tells identical records apart, so which of
        them goes where is a matter of numbering; the records of a unit are ranked in
        the order given (entry by entry, ``weight`` records each).

        Returns the unit problem and, per given entry ``i`` and rank ``j`` among its
        records (``j`` = :data:`UNIT_SINGLES`: that rank and all after), the unit
        problem's entry holding it (-1: no such record). Records one by one, all
        distinct: the problem is the given one.
        """
        columns = [c[:, 0] for c in self.codes] + self.sa_codes + self.check_codes
        columns.append(self.piece_cell)
        key = np.stack(columns, axis=1) if self.n else np.zeros((0, len(columns)), np.int64)
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        # units in the order their first record came
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        first, inverse = first[order], rank[inverse.reshape(-1)]
        weight = np.bincount(inverse, weights=self.weight, minlength=first.size).astype(np.int64)
        # where each given entry's records start among its unit's records
        by_unit = np.argsort(inverse, kind="stable")
        before = np.cumsum(self.weight[by_unit]) - self.weight[by_unit]
        offset = np.empty(self.n, dtype=np.int64)
        offset[by_unit] = before - (np.cumsum(weight) - weight)[inverse[by_unit]]
        # entries of each unit: `singles` records of their own, then the rest (if any)
        singles = np.minimum(weight, UNIT_SINGLES)
        parts = singles + (weight > singles)
        starts = np.cumsum(parts) - parts
        entry_unit = np.repeat(np.arange(first.size), parts)
        single = np.arange(entry_unit.size) - starts[entry_unit] < singles[entry_unit]
        entry_weight = np.where(single, 1, weight[entry_unit] - singles[entry_unit])
        ranks = np.arange(UNIT_SINGLES + 1)
        at = offset[:, None] + ranks[None, :]
        entry = starts[inverse][:, None] + np.minimum(at, singles[inverse][:, None])
        exists = np.where(ranks < UNIT_SINGLES, ranks[None, :] < self.weight[:, None], False)
        exists[:, UNIT_SINGLES] = self.weight > UNIT_SINGLES
        entry = np.where(exists, entry, -1)
        rows = first[entry_unit]
        units = replace(
            self,
            n=int(rows.size),
            codes=[c[rows] for c in self.codes],
            flat_codes=self.flat_codes[rows],
            sa_codes=[c[rows] for c in self.sa_codes],
            piece_cell=self.piece_cell[rows],
            check_codes=[c[rows] for c in self.check_codes],
            check_numbers=[None if x is None else x[rows] for x in self.check_numbers],
            weight=entry_weight.astype(np.int64),
        )
        if self.newest is not None and self.atom is not None:
            old = units.piece_cell < units.new_cell
            units.newest = np.where(old, units.piece_cell, -1)
            units.atom = np.where(old, units.piece_cell, units.new_cell + np.arange(units.n))
        return units, entry

    def piece_ok(
        self, idx: np.ndarray, group: np.ndarray, count: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """For records ``idx`` in groups ``group`` (0..count-1): whether each (group,
        old cell) piece meets what it must, as (piece of every record, ok per piece)."""
        piece: np.ndarray = group
        keys: np.ndarray = np.arange(count)
        if self.new_cell or not np.bincount(group, minlength=count).all():
            # (with no old cells and no empty group a piece is a group: no sort needed)
            pair = group * (self.new_cell + 1) + self.piece_cell[idx]
            keys, inverse = np.unique(pair, return_inverse=True)
            piece = inverse.reshape(-1)
        cell = keys % (self.new_cell + 1)
        ok = piece_meets(
            piece,
            keys.size,
            self.need_distinct[cell],
            self.need_spread[cell],
            [c[idx] for c in self.check_codes],
            [None if x is None else x[idx] for x in self.check_numbers],
        )
        return piece, ok

    def placeable(self) -> np.ndarray:
        """Records that can be in some valid class: those of an old cell that meets, as a
        whole, its requirement and this release's l (a cell never grows), and the new."""
        whole = self.piece_ok(np.arange(self.n), np.zeros(self.n, dtype=np.int64), 1)
        piece, ok = whole
        new = self.piece_cell == self.new_cell
        active: np.ndarray = ok[piece] | new
        for s, name in enumerate(self.sensitive):
            distinct = np.unique(self.sa_codes[s][active]).size
            if distinct < self.l:
                raise InfeasibleError(
                    f'l={self.l} needs {self.l} distinct values of "{name}" among records the '
                    f"earlier releases leave placeable; there are {distinct}"
                )
        return active


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
    """A class under construction: its members and the level of each QI."""

    def __init__(self, problem: _Problem, seed: int) -> None:
        self.problem = problem
        self.members = [seed]
        self.levels = np.zeros(len(problem.codes), dtype=np.int64)

    def add(self, r: int, levels: np.ndarray) -> None:
        self.members.append(r)
        self.levels = levels

    def failing(self) -> np.ndarray:
        """Old-cell ids (``piece_cell``) whose piece in this class is not yet valid."""
        members = np.asarray(self.members, dtype=np.int64)
        piece, ok = self.problem.piece_ok(members, np.zeros(members.size, dtype=np.int64), 1)
        return np.unique(self.problem.piece_cell[members[~ok[piece]]])

    def lacks(self, r: int) -> bool:
        """Whether record r brings a sensitive value its piece lacks."""
        cells = self.problem.piece_cell
        same = [m for m in self.members if cells[m] == cells[r]]
        return any(
            int(codes[r]) not in set(codes[same].tolist()) for codes in self.problem.sa_codes
        )

    def accepts(self, r: int) -> bool:
        """Whether adding record r keeps this (valid) class valid: r joins a valid piece
        of its own cell (values only add), never starts one of a single record."""
        cells = self.problem.piece_cell
        return bool((cells[np.asarray(self.members)] == cells[r]).any())


def _greedy(problem: _Problem, idx: np.ndarray) -> list[np.ndarray]:
    """Seed 002's greedy over the records ``idx``; returns the classes (global record
    indices). Records in no class are left out (suppressed or held back).

    Under the cell rule a class is valid when each of its pieces (its records of one old
    cell, or its new records) is; while a piece is not, the next record is the cheapest
    of those that can mend it (of that piece's cell). With no earlier release every
    record is new and this is the paper's greedy."""
    heights = problem.heights[:, None]
    block = problem.flat_codes[idx]
    remaining = np.ones(idx.size, dtype=bool)
    counts = [
        np.bincount(c[idx], minlength=len(v))
        for c, v in zip(problem.sa_codes, problem.sa_values, strict=True)
    ]
    distinct_left = [int((c > 0).sum()) for c in counts]
    cell_of = problem.piece_cell[idx]

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
        while failing.size:
            usable = np.where(np.isin(cell_of, failing), cost, np.inf)
            best = usable.min()
            if best == np.inf:
                break
            ties = np.flatnonzero(usable == best)
            if ties.size > 1:
                helpful = [current.lacks(int(idx[t])) for t in ties[:64].tolist()]
                i = int(ties[int(np.argmax(helpful))])
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
        if failing.size:
            leftovers.extend(current.members)
            continue
        done.append(current)
    _merge_leftovers(problem, done, leftovers)
    return [np.array(sorted(c.members), dtype=np.int64) for c in done]


def _merge_leftovers(problem: _Problem, done: list[_GreedyClass], leftovers: list[int]) -> None:
    """Put each leftover record into the class whose precision loss grows least among
    those that stay valid with it; records no class accepts stay out."""
    if not done:
        return
    seeds = np.array([c.members[0] for c in done], dtype=np.int64)
    for r in sorted(leftovers):
        levels = np.stack([c.levels for c in done])
        sizes = np.array([problem.size(np.asarray(c.members)) for c in done], dtype=np.float64)
        lca = _lca_levels(problem, problem.flat_codes[seeds], problem.flat_codes[r])
        grown = np.maximum(levels, lca)
        before = sizes * (levels / problem.heights).sum(axis=1)
        after = (sizes + problem.weight[r]) * (grown / problem.heights).sum(axis=1)
        for k in np.argsort(after - before, kind="stable").tolist():
            if done[k].accepts(r):
                done[k].add(r, grown[k])
                break


def _group_validity(problem: _Problem, idx: np.ndarray, group: np.ndarray, k: int) -> np.ndarray:
    """For records ``idx`` split into groups ``group`` (0..k-1): which groups are valid
    classes (every piece of an old cell, and the piece of new records, meets what it
    must: l-diverse in every published SA, and the old cell's own requirement)."""
    piece, ok = problem.piece_ok(idx, group, k)
    valid = np.ones(k, dtype=bool)
    valid[group[~ok[piece]]] = False
    return valid


def _failing_records(problem: _Problem, members: np.ndarray) -> np.ndarray:
    """Which records of one would-be class break it: those of its pieces that fail."""
    piece, ok = problem.piece_ok(members, np.zeros(members.size, dtype=np.int64), 1)
    failing: np.ndarray = ~ok[piece]
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
        return (valid, problem.size(idx)) if len(valid) >= 2 else None
    if _is_valid(problem, pool):
        return ([*valid, pool], sum(problem.size(v) for v in valid)) if valid else None
    if len(valid) < 2:
        return None
    for j in sorted(range(len(valid)), key=lambda j: problem.size(valid[j])):
        merged = np.concatenate([valid[j], pool])
        if _is_valid(problem, merged):
            parts = [v for i, v in enumerate(valid) if i != j] + [merged]
            return parts, sum(problem.size(v) for i, v in enumerate(valid) if i != j)
    return None


def _top_down(problem: _Problem, idx: np.ndarray) -> list[np.ndarray]:
    """Top-down specialization, then the greedy inside every small final partition
    (kept only when it places every record and lowers the precision loss)."""
    idx = idx[~_failing_records(problem, idx)] if idx.size else idx
    if idx.size == 0:
        return []  # no valid piece: everything left out (suppressed or held back)
    final: list[np.ndarray] = []
    stack = [idx]
    while stack:
        part = stack.pop()
        levels = _common_levels(problem, part)
        best: list[np.ndarray] | None = None
        best_gain, best_q = 0.0, -1
        # The split of the most records specialized per unit of height wins, the lowest
        # QI on a tie. A QI's gain is at most the part's records over its height: try
        # the highest bounds first and skip the QIs that cannot win (same choice).
        size = problem.size(part)
        for q in sorted(np.flatnonzero(levels > 0).tolist(), key=lambda q: problem.heights[q]):
            bound = size / problem.heights[q]
            if bound < best_gain or (bound == best_gain and q > best_q):
                continue
            split = _split(problem, part, q, int(levels[q]))
            if split is None:
                continue
            gain = split[1] / problem.heights[q]
            if gain > best_gain or (gain == best_gain and best is not None and q < best_q):
                best, best_gain, best_q = split[0], gain, q
        if best is None:
            final.extend(_refine(problem, np.sort(part), levels))
        else:
            stack.extend(best)
    return final


def _loss(problem: _Problem, members: np.ndarray, levels: np.ndarray) -> float:
    return float(problem.size(members) * (levels / problem.heights).sum())


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
    placed = sum(problem.size(c) for c in classes)
    loss = sum(_loss(problem, c, _common_levels(problem, c)) for c in classes)
    return loss + (problem.size(idx) - placed) * len(problem.quasi)


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
        key=lambda cs: (
            round(_planned_loss(problem, idx, cs), 9),
            sum(problem.size(c) ** 2 for c in cs),
        ),
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
    among those it keeps valid; the others stay out. A record keeps a class valid when
    the class holds a piece of the record's own cell: adding a value to a valid piece
    keeps it valid, and no other piece changes."""
    if not classes or leftovers.size == 0:
        return classes
    classes = list(classes)
    levels = np.stack([_common_levels(problem, c) for c in classes])
    seeds = problem.flat_codes[np.array([c[0] for c in classes], dtype=np.int64)]
    sizes = np.array([problem.size(c) for c in classes], dtype=np.float64)
    holds = [set(problem.piece_cell[c].tolist()) for c in classes]
    for r in leftovers.tolist():
        cell = int(problem.piece_cell[r])
        options = [k for k, h in enumerate(holds) if cell in h]
        if not options:
            continue
        grown = np.maximum(
            levels[options], _lca_levels(problem, seeds[options], problem.flat_codes[r])
        )
        w = problem.weight[r]
        growth = (sizes[options] + w) * (grown / problem.heights).sum(axis=1) - sizes[options] * (
            levels[options] / problem.heights
        ).sum(axis=1)
        best = int(np.argmin(growth))
        k = options[best]
        classes[k] = np.append(classes[k], r)
        levels[k], sizes[k] = grown[best], sizes[k] + w
    return [np.sort(c) for c in classes]


def _keep_absent_valid(problem: _Problem, classes: list[np.ndarray]) -> list[np.ndarray]:
    """Records of an old cell left out while others of it are published split the cell
    (absence is visible): the left-out piece must still meet the cell's requirement.
    When it does not, its records join the class holding the cell's published piece
    whose precision loss grows least (always valid, see ``_place_leftovers``)."""
    placed = np.zeros(problem.n, dtype=bool)
    for c in classes:
        placed[c] = True
    old = problem.piece_cell < problem.new_cell
    shown = np.unique(problem.piece_cell[placed & old])
    absent = np.flatnonzero(~placed & old)
    absent = absent[np.isin(problem.piece_cell[absent], shown)]
    if absent.size == 0:
        return classes
    keys, piece = np.unique(problem.piece_cell[absent], return_inverse=True)
    ok = piece_meets(
        piece.reshape(-1),
        keys.size,
        problem.keep_distinct[keys],
        problem.keep_spread[keys],
        [c[absent] for c in problem.check_codes],
        [None if x is None else x[absent] for x in problem.check_numbers],
    )
    return _place_leftovers(problem, classes, absent[~ok[piece.reshape(-1)]])


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
        key=lambda i: (
            [(label is not None, label or "") for label in labels[i]],  # NULL sorts first
            [sorted(map(repr, v)) for v in values[i]],
        ),
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
    w = problem.weight
    absent = int(w[~published].sum())
    held_back = int(w[~published & (problem.piece_cell == problem.new_cell)].sum())
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
        suppressed=absent - held_back,
        precision_loss=precision_loss(
            class_levels[class_id[published]], heights, absent, w[published]
        ),
        dm=discernibility([problem.size(c) for c in classes], absent),
        held_back=held_back,
    )


def _sorted_codes(values: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """Codes of ``values`` (an object array) numbered in sorted order of the values,
    equal codes for equal values (Python equality: ``10000 == 10000.0``), and the
    distinct values by code. Values of types that do not compare (mixed) are ordered by
    type name and ``repr``: either way the codes depend on the values, not on the order
    they come in."""
    try:
        distinct, codes = np.unique(values, return_inverse=True)
        return codes.reshape(-1).astype(np.int64), distinct.tolist()
    except TypeError:
        index: dict[Any, int] = {}
        first = np.array([index.setdefault(v, len(index)) for v in values.tolist()], np.int64)
        order = sorted(index, key=lambda v: (type(v).__name__, repr(v)))
        rank = np.empty(len(order), dtype=np.int64)
        rank[[index[v] for v in order]] = np.arange(len(order))
        return rank[first], order
