"""One lHD release encoded as integers, and the cell rule on would-be classes.

Pure numpy. :class:`LhdProblem` holds the QI codes per hierarchy level, the sensitive
value codes, and the cell rule as pieces (every record's old cell and what a piece of
each must keep); :meth:`LhdProblem.units` merges identical records into weighted units.
The helpers below it say at which levels records share an ancestor, which would-be
classes are valid, and what a class costs in precision loss; every algorithm
(:mod:`~sqlanon.models.lhd_greedy`, :mod:`~sqlanon.models.lhd_scalable`,
:mod:`~sqlanon.models.lhd_refine`) plans with them.

The parameter is called ``l`` as in the paper (hence the ``noqa: E741`` markers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sqlanon.errors import ConfigError, InfeasibleError
from sqlanon.hierarchy import Hierarchy
from sqlanon.models.cells import Cells, piece_meets

__all__ = [
    "UNIT_SINGLES",
    "LhdProblem",
    "class_loss",
    "common_levels",
    "failing_records",
    "group_validity",
    "is_valid",
    "lca_levels",
]


#: Records of a unit of identical records planned one by one (the rest as one entry):
#: on 200,000 Adult-like rows, 2 gives a precision loss within 2.5% of planning every
#: record alone (1: 5%, none: 20%) at a third of its time (BENCHMARKS.md, lhd-units).
UNIT_SINGLES = 2


@dataclass
class LhdProblem:
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
    # The chain rule (MODELS.md, "Changing tables"): a piece meets its requirement
    # counting only its never-changed members (False: a record of a changed person's
    # chain, a ghost of an old incarnation or a new one). None: every record counts.
    counted: np.ndarray | None = None

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
        changed: Sequence[bool] | np.ndarray | None = None,
        anticipate: Mapping[str, tuple[int, float]] | None = None,
    ) -> LhdProblem:
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
        problem._set_cells(
            prior if prior is not None else Cells.empty(n), sensitive, checked, anticipate or {}
        )
        if changed is not None:
            flags = np.asarray(changed, dtype=bool)
            if flags.shape != (n,):
                raise ConfigError(f"changed must hold one flag per record ({n})")
            problem.counted = ~flags if flags.any() else None
        return problem

    def _set_cells(
        self,
        prior: Cells,
        sensitive: Mapping[str, Sequence[Any] | np.ndarray],
        checked: Mapping[str, Sequence[Any] | np.ndarray],
        anticipate: Mapping[str, tuple[int, float]],
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
        # A piece of new records also meets what other families of the domain will ask
        # of it (``anticipate``: attribute -> (distinct, spread)), so that they can
        # publish it later; only attributes whose values the planner has count.
        ahead = {a: need for a, need in anticipate.items() if a in sensitive or a in checked}
        names, distinct, spread = prior.widened([*self.sensitive, *ahead])
        keep_d = np.vstack([distinct[ids], np.zeros((1, len(names)), np.int64)])
        keep_s = np.vstack([spread[ids], np.zeros((1, len(names)))])
        need_d = keep_d.copy()
        for s in self.sensitive:
            need_d[:, names.index(s)] = np.maximum(need_d[:, names.index(s)], self.l)
        need_s = keep_s.copy()
        for a, (least, span) in ahead.items():
            j = names.index(a)
            need_d[-1, j] = max(need_d[-1, j], int(least))
            need_s[-1, j] = max(need_s[-1, j], float(span))
        self.need_distinct, self.need_spread = need_d, need_s
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
            wants_spread = bool((need_s[:, j] > 0).any())
            self.check_numbers.append(
                np.asarray(column, dtype=np.float64) if wants_spread else None
            )
        if self.new_cell:
            self.newest = np.where(old, self.piece_cell, -1)
            self.atom = np.where(old, self.piece_cell, self.new_cell + np.arange(self.n))

    def units(self) -> tuple[LhdProblem, np.ndarray]:
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
        if self.counted is not None:
            columns.append(self.counted.astype(np.int64))
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
            counted=None if self.counted is None else self.counted[rows],
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
        ok = self.pieces_meet(
            piece, keys.size, idx, self.need_distinct[cell], self.need_spread[cell]
        )
        return piece, ok

    def pieces_meet(
        self,
        piece: np.ndarray,
        count: int,
        idx: np.ndarray,
        need_distinct: np.ndarray,
        need_spread: np.ndarray,
    ) -> np.ndarray:
        """:func:`~sqlanon.models.cells.piece_meets` for records ``idx`` in pieces
        ``piece`` (0..count-1), counting only the never-changed records (``counted``):
        a piece of changed records alone meets nothing."""
        if self.counted is not None:
            mask = self.counted[idx]
            piece, idx = piece[mask], idx[mask]
        return piece_meets(
            piece,
            count,
            need_distinct,
            need_spread,
            [c[idx] for c in self.check_codes],
            [None if x is None else x[idx] for x in self.check_numbers],
        )

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


def lca_levels(problem: LhdProblem, block: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Per row of ``block`` (rows of ``flat_codes``) and QI: the lowest level at which
    the row shares its ancestor with ``ref``. In a tree, sharing the ancestor at a level
    means sharing it at every level above, so the level is the count of unequal ones."""
    equal = np.add.reduceat(block == ref, problem.offsets, axis=-1, dtype=np.int64)
    levels: np.ndarray = problem.depths - equal
    return levels


def common_levels(problem: LhdProblem, idx: np.ndarray) -> np.ndarray:
    """Lowest level per QI at which all records ``idx`` share one ancestor."""
    block = problem.flat_codes[idx]
    same = (block == block[0]).all(axis=0)
    levels: np.ndarray = problem.depths - np.add.reduceat(same, problem.offsets, dtype=np.int64)
    return levels


def group_validity(problem: LhdProblem, idx: np.ndarray, group: np.ndarray, k: int) -> np.ndarray:
    """For records ``idx`` split into groups ``group`` (0..k-1): which groups are valid
    classes (every piece of an old cell, and the piece of new records, meets what it
    must: l-diverse in every published SA, and the old cell's own requirement)."""
    piece, ok = problem.piece_ok(idx, group, k)
    valid = np.ones(k, dtype=bool)
    valid[group[~ok[piece]]] = False
    return valid


def failing_records(problem: LhdProblem, members: np.ndarray) -> np.ndarray:
    """Which records of one would-be class break it: those of its pieces that fail."""
    piece, ok = problem.piece_ok(members, np.zeros(members.size, dtype=np.int64), 1)
    failing: np.ndarray = ~ok[piece]
    return failing


def is_valid(problem: LhdProblem, members: np.ndarray) -> bool:
    """Whether the records ``members`` form a valid class."""
    return bool(group_validity(problem, members, np.zeros(members.size, dtype=np.int64), 1)[0])


def class_loss(problem: LhdProblem, members: np.ndarray, levels: np.ndarray) -> float:
    """Precision loss (unnormalised) of a class of ``members`` published at ``levels``."""
    return float(problem.size(members) * (levels / problem.heights).sum())


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
