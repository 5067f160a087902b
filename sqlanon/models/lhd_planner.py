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

``recoding='global'`` replaces the algorithms by a search of the generalization
lattice (:mod:`sqlanon.models.lhd_global`, ARX's full-domain recoding): one level per QI
for the whole release, the node of lowest precision loss within ``max_suppression``;
its classes are the groups of records with equal labels at that node, pieces that fail
left out as above.

Identical records (equal QI values, equal values of every attribute checked, the same
old cell) form a **unit**, planned as up to ``UNIT_SINGLES`` entries of one record and
one entry of the rest, each weighted by its records
(:meth:`sqlanon.models.lhd_problem.LhdProblem.units`): a class that needs the unit's
value can take one record of it, as the record-by-record greedy does, while the rest
stays together. The planner's cost follows the distinct records,
not the rows, and a caller that counted the records in the database (``weight``) gets
the plan of the rows. The size limits above count entries. The price, measured in
BENCHMARKS.md (``lhd-units``): a precision loss a few percent above planning every
record alone on tables with many identical records.

Records left out are **held back** when no release has published them yet (offered
again next time) and **suppressed** when one has. ``left_out_before`` records the caller
already left out (the chain rule) count against ``max_suppression`` too: a plan is
within it when its records left out plus those stay at most ``max_suppression`` of all
(the records given plus ``left_out_before``). When no plan is, :class:`InfeasibleError`
(``over_budget='raise'``), or the plan leaving out the fewest (``'least'``: the caller
decides, e.g. a release that adds the chain rule's records and refuses with all of them).

The parameter is called ``l`` as in the paper (hence the ``noqa: E741`` markers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sqlanon.errors import ConfigError, InfeasibleError, UnsafeReleaseError
from sqlanon.hierarchy import Hierarchy
from sqlanon.metrics import discernibility, precision_loss
from sqlanon.models.cells import Cells
from sqlanon.models.lhd_comparison import EarlierRelease
from sqlanon.models.lhd_global import full_domain
from sqlanon.models.lhd_greedy import GREEDY_MAX_ROWS, greedy
from sqlanon.models.lhd_problem import LhdProblem, common_levels, group_validity
from sqlanon.models.lhd_refine import keep_absent_valid, refine_earlier
from sqlanon.models.lhd_scalable import top_down

__all__ = ["ALGORITHMS", "RECODINGS", "SLACK", "LhdPlan", "plan_lhd"]

ALGORITHMS = ("auto", "greedy", "scalable", "refine")
#: ``local``: each class publishes its own levels; ``global``: one level per QI.
RECODINGS = ("local", "global")

#: Records compared with ``max_suppression * records`` may fall short of it by float
#: rounding (a fraction given to 4 decimals, rounded up, times the records).
SLACK = 1e-6


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
    left_out_before: int = 0,
    over_budget: str = "raise",
    changed: Sequence[bool] | np.ndarray | None = None,
    whole: Sequence[bool] | np.ndarray | None = None,
    recoding: str = "local",
    anticipate: Mapping[str, tuple[int, float]] | None = None,
) -> LhdPlan:
    """Partition the records into lHD-diverse classes (see the module docstring).

    ``quasi``/``sensitive`` map column names to equal-length value arrays (records in
    the same order); ``hierarchies`` must cover every QI column. ``prior``: the cells
    the earlier releases of the domain left these records in (None: a first release);
    ``checked`` the values of the attributes those cells constrain that this release
    does not publish (every piece of an old cell must keep them). ``weight[i]``: the
    number of identical records entry i stands for (a caller that counted them in the
    database); the plan is the one of the records one by one, given in that order (see
    :meth:`LhdProblem.units`); ``class_id`` is then the class of each entry's first
    record and ``rank_class`` that of each of its records by rank. ``changed[i]``:
    record i belongs to a changed person's chain (MODELS.md, "Changing tables"); every
    piece then meets its requirement on its never-changed records alone, as the chain
    rule asks, so that an old cell holding a changed record is split, not left out.
    ``whole[i]``: record i's old cell must not be split (:func:`keep_whole`).
    ``recoding='global'``: one level per QI for the whole release
    (:mod:`sqlanon.models.lhd_global`; then ``algorithm`` must stay ``'auto'``).
    ``anticipate``: attribute -> (distinct values, spread) a piece of new records must
    also hold, what other families of the domain will ask of it to publish it later
    (an attribute among ``sensitive`` or ``checked``; others are ignored).
    """
    _check_arguments(algorithm, max_suppression, over_budget, recoding)
    given = LhdProblem.build(
        quasi, sensitive, hierarchies, l, prior, checked or {}, weight, changed, anticipate
    )
    problem, entry = given.units()
    active = np.flatnonzero(problem.placeable())
    kept = _kept_whole(given, whole)
    if recoding == "global":
        names: list[str] = []  # one plan, the lattice search's, below
    elif algorithm == "auto":
        names = ["greedy", "scalable"] if problem.n <= GREEDY_MAX_ROWS else ["scalable"]
        if problem.newest is not None:
            names.append("refine")
    else:
        names = [algorithm]
    plans = [
        _finish(
            problem,
            _checked(
                problem,
                keep_whole(
                    problem, keep_absent_valid(problem, _ALGORITHM[name](problem, active)), kept
                ),
            ),
            name,
        )
        for name in names
    ]
    records = problem.records
    budget = max_suppression * (records + left_out_before) + SLACK
    if recoding == "global":
        node = full_domain(problem, active, budget - left_out_before)
        # a kept cell is left out whole when split: moved, its labels would not be the node's
        classes = keep_whole(problem, node.classes, kept, move=False)
        plans.append(_finish(problem, _checked(problem, classes), "global", node.levels))
    allowed = [p for p in plans if p.absent + left_out_before <= budget]
    if allowed:
        # equal precision loss (to rounding): the finer partition (lower DM)
        plan = min(allowed, key=lambda p: (round(p.precision_loss, 12), p.dm))
    else:
        plan = min(plans, key=lambda p: (p.absent, round(p.precision_loss, 12), p.dm))
    if not allowed and over_budget == "raise":
        raise InfeasibleError(
            f"{plan.algorithm} would leave out {plan.absent} of {records} records "
            f"({plan.absent / records:.1%}: {plan.suppressed} published before, "
            f"{plan.held_back} new) > max_suppression={max_suppression}; lower l, publish "
            "fewer sensitive attributes, or raise max_suppression"
        )
    by_rank = np.where(entry >= 0, np.append(plan.class_id, -1)[entry], -1)
    return replace(plan, class_id=by_rank[:, 0], rank_class=by_rank)


_ALGORITHM = {"greedy": greedy, "scalable": top_down, "refine": refine_earlier}


def _check_arguments(
    algorithm: str, max_suppression: float, over_budget: str, recoding: str
) -> None:
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    if not 0.0 <= max_suppression <= 1.0:
        raise ConfigError(f"max_suppression must be in [0, 1], got {max_suppression}")
    if over_budget not in ("raise", "least"):
        raise ConfigError(f"over_budget must be 'raise' or 'least', got {over_budget!r}")
    if recoding not in RECODINGS:
        raise ConfigError(
            f"recoding must be 'local' (each class its own levels) or 'global' (one level "
            f"per quasi-identifier for the whole release), got {recoding!r}"
        )
    if recoding == "global" and algorithm != "auto":
        raise ConfigError(
            f"algorithm={algorithm!r} plans local recoding; recoding='global' searches the "
            "levels itself: leave algorithm 'auto'"
        )


def _kept_whole(given: LhdProblem, whole: Sequence[bool] | np.ndarray | None) -> np.ndarray:
    """The old cells (``piece_cell`` ids) of the records ``whole`` flags."""
    if whole is None:
        return np.zeros(0, dtype=np.int64)
    flags = np.asarray(whole, dtype=bool)
    if flags.shape != (given.n,):
        raise ConfigError(f"whole must hold one flag per record ({given.n})")
    return np.unique(given.piece_cell[flags & (given.piece_cell < given.new_cell)])


def keep_whole(
    problem: LhdProblem, classes: list[np.ndarray], cells: np.ndarray, move: bool = True
) -> list[np.ndarray]:
    """``classes`` with every old cell of ``cells`` (ids of ``piece_cell``) whole again:
    all its records in the class that held most of them, or all left out when the cell
    as a whole misses what a piece must meet now, or none of it was placed, or it was
    split and may not be moved (``move``: False, global recoding). A cell kept
    whole is the cell the last release left (the chain rule held for it then); taking a
    whole piece out of a class leaves the class's other pieces as valid as they were."""
    if cells.size == 0:
        return classes
    class_of = np.full(problem.n, -1, dtype=np.int64)
    for i, members in enumerate(classes):
        class_of[members] = i
    for cell in cells.tolist():
        members = np.flatnonzero(problem.piece_cell == cell)
        ok = problem.pieces_meet(
            np.zeros(members.size, dtype=np.int64),
            1,
            members,
            problem.need_distinct[[cell]],
            problem.need_spread[[cell]],
        )
        placed = class_of[members] >= 0
        target = -1
        split = np.unique(class_of[members]).size > 1
        if ok[0] and placed.any() and (move or not split):
            counts = np.bincount(class_of[members][placed], weights=problem.weight[members][placed])
            target = int(counts.argmax())
        class_of[members] = target
    return [c for i in range(len(classes)) if (c := np.flatnonzero(class_of == i)).size]


def _checked(problem: LhdProblem, classes: list[np.ndarray]) -> list[np.ndarray]:
    """Re-check every class from scratch before anything is published."""
    if classes:
        idx = np.concatenate(classes)
        group = np.repeat(np.arange(len(classes)), [c.size for c in classes])
        if (
            np.unique(idx).size != idx.size
            or not group_validity(problem, idx, group, len(classes)).all()
        ):
            raise UnsafeReleaseError(
                "internal error: a planned lHD class breaks l-diversity or the comparison "
                "constraint; nothing was published; please report this with the input"
            )
    return classes


def _distinct_values(problem: LhdProblem, classes: list[np.ndarray]) -> list[list[frozenset[Any]]]:
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


def _finish(
    problem: LhdProblem,
    classes: list[np.ndarray],
    algorithm: str,
    node: np.ndarray | None = None,
) -> LhdPlan:
    """The plan of ``classes``, each published at the lowest levels its members share
    (local recoding), or all at the levels ``node`` (global)."""
    levels = [common_levels(problem, c) if node is None else node for c in classes]
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
