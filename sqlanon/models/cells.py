"""Cells: the one rule behind every release of a domain (MODELS.md, "Cells"). Pure numpy.

A record's **history** is the group or class it was in, in every release of its domain
in order (every family, both models), with "absent" once it was first published;
records with the same history form a **cell**. The attacker can never tell a cell's
records apart, so at best it learns the cell's multiset of values. Hence the rule:
after every release, every cell meets the requirement of every release in its history,
each a :class:`Requirement` (per attribute: a least number of distinct values and a
least spread max - min).

Cells only ever split: a release maps each old cell onto its groups (and "absent"),
and each piece becomes a cell whose requirement is the old one, plus the release's
own when the piece is published. :class:`Cells` holds every record's cell and each
cell's requirement; :meth:`Cells.then` applies one release; :func:`failing_cells` is
the check every release runs before it writes anything.

>>> before = Cells.empty(4)
>>> after = before.then(np.array([0, 0, 1, 1]), Requirement.lhd(["salary"], 2))
>>> after.cell.tolist(), after.attributes, after.distinct.tolist()
([0, 0, 1, 1], ('salary',), [[2], [2]])
>>> failing_cells(before, after, {"salary": np.array([1, 2, 3, 3])}).tolist()
[False, True]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sqlanon.errors import ConfigError

__all__ = ["Cells", "Requirement", "encode_values", "failing_cells", "piece_meets"]


@dataclass(frozen=True)
class Requirement:
    """What a release promises every cell it publishes: per attribute, at least
    ``distinct[a]`` distinct values and (numeric attributes) ``max - min >= spread[a]``.
    """

    distinct: Mapping[str, int]
    spread: Mapping[str, float]

    @staticmethod
    def ke(sensitive: str, k: int, e: float) -> Requirement:
        return Requirement({sensitive: int(k)}, {sensitive: float(e)})

    @staticmethod
    def lhd(sensitive: Iterable[str], l: int) -> Requirement:  # noqa: E741
        return Requirement(dict.fromkeys(sensitive, int(l)), {})

    @property
    def attributes(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.distinct) | set(self.spread)))


@dataclass(frozen=True)
class Cells:
    """Every record's cell after a sequence of releases, and each cell's requirement.

    ``cell[i]``: the cell of record ``i`` (dense ids 0..c-1), -1 when no release has
    published it yet. ``distinct[c, j]`` / ``spread[c, j]``: what cell ``c`` must keep of
    attribute ``attributes[j]`` (0 = nothing).
    """

    cell: np.ndarray
    attributes: tuple[str, ...]
    distinct: np.ndarray  # (cells, attributes) int64
    spread: np.ndarray  # (cells, attributes) float64

    def __post_init__(self) -> None:
        cell = np.asarray(self.cell, dtype=np.int64)
        if cell.ndim != 1 or (cell.size and cell.min() < -1):
            raise ConfigError("cell must be a 1-d array of ids >= -1 (-1 = never published)")
        distinct = np.asarray(self.distinct, dtype=np.int64)
        spread = np.asarray(self.spread, dtype=np.float64)
        # One row of requirements per cell id: given as rows, they keep every cell, also
        # one no record here belongs to (select() of records that miss the highest ids).
        if distinct.ndim == 2:
            count = distinct.shape[0]
        else:
            count = int(cell.max()) + 1 if cell.size else 0
        shape = (count, len(self.attributes))
        distinct = distinct.reshape(shape)
        spread = spread.reshape(shape)
        if cell.size and cell.max() >= count:
            raise ConfigError(f"cell ids go up to {int(cell.max())}; requirements cover {count}")
        object.__setattr__(self, "cell", cell)
        object.__setattr__(self, "distinct", distinct)
        object.__setattr__(self, "spread", spread)

    @staticmethod
    def empty(n: int) -> Cells:
        """``n`` records, none published yet."""
        return Cells(np.full(n, -1, dtype=np.int64), (), np.zeros((0, 0)), np.zeros((0, 0)))

    @property
    def count(self) -> int:
        return int(self.distinct.shape[0])

    def requirement(self, c: int) -> Requirement:
        """What cell ``c`` must keep."""
        d, s = self.distinct[c].tolist(), self.spread[c].tolist()
        return Requirement(
            {a: int(x) for a, x in zip(self.attributes, d, strict=True) if x > 0},
            {a: float(x) for a, x in zip(self.attributes, s, strict=True) if x > 0},
        )

    def widened(self, attributes: Iterable[str]) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
        """Attributes (these and the cells' own, sorted) and the requirement matrices
        over them."""
        names = tuple(sorted(set(self.attributes) | set(attributes)))
        where = [names.index(a) for a in self.attributes]
        distinct = np.zeros((self.count, len(names)), dtype=np.int64)
        spread = np.zeros((self.count, len(names)), dtype=np.float64)
        distinct[:, where] = self.distinct
        spread[:, where] = self.spread
        return names, distinct, spread

    def select(self, rows: np.ndarray) -> Cells:
        """These cells seen from another list of records: ``rows[i]`` is the index here
        of record ``i`` there (-1: a record this state does not know, never published).
        Cell ids and requirements are kept as they are."""
        rows = np.asarray(rows, dtype=np.int64)
        cell = np.where(rows >= 0, np.append(self.cell, -1)[rows], -1)
        return Cells(cell, self.attributes, self.distinct, self.spread)

    def then(self, group: np.ndarray, requirement: Requirement) -> Cells:
        """The cells after one more release that puts record ``i`` in ``group[i]``
        (-1: absent) and promises ``requirement`` to every cell it publishes.

        New cell = (old cell or "new", group or absent), for every record that has
        been published by now; its requirement is the old cell's, plus the release's
        when the cell is published.
        """
        group = np.asarray(group, dtype=np.int64)
        if group.shape != self.cell.shape:
            raise ConfigError(f"group must have one entry per record ({self.cell.size})")
        names, old_d, old_s = self.widened(requirement.attributes)
        seen = (self.cell >= 0) | (group >= 0)
        # (old cell, group) packed into one int64: a 1-d unique sorts 10^6 keys in
        # ~0.1 s, np.unique(axis=1) of the pairs takes seconds.
        width = int(group.max(initial=-1)) + 2
        packed = (self.cell[seen] + 1) * width + (group[seen] + 1)
        keys, inverse = np.unique(packed, return_inverse=True)
        cell = np.full(self.cell.size, -1, dtype=np.int64)
        cell[seen] = inverse.reshape(-1)
        old, grp = keys // width - 1, keys % width - 1
        distinct, spread = _rows(old_d, old), _rows(old_s, old)
        published = grp >= 0
        for j, a in enumerate(names):
            if a in requirement.distinct:
                distinct[published, j] = np.maximum(distinct[published, j], requirement.distinct[a])
            if a in requirement.spread:
                spread[published, j] = np.maximum(spread[published, j], requirement.spread[a])
        return Cells(cell, names, distinct, spread)


def _rows(matrix: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``matrix[ids]`` with a row of zeros for ids -1."""
    padded = np.vstack([matrix, np.zeros((1, matrix.shape[1]), dtype=matrix.dtype)])
    rows: np.ndarray = padded[np.where(ids >= 0, ids, matrix.shape[0])]
    return rows


def encode_values(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Integer codes of ``values``, equal codes for equal values (Python equality, as the
    lHD model compares: ``10000 == 10000.0``)."""
    array = np.asarray(values)
    if array.dtype.kind in "biuf":
        return np.unique(array.astype(np.float64), return_inverse=True)[1].reshape(-1)
    index: dict[Any, int] = {}
    return np.array([index.setdefault(v, len(index)) for v in array.tolist()], dtype=np.int64)


def _piece_stats(
    piece: np.ndarray, codes: np.ndarray, numbers: np.ndarray | None, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per piece 0..count-1: distinct codes, and spread of ``numbers`` (0 without)."""
    nv = int(codes.max()) + 1 if codes.size else 1
    if count * nv <= 4 * piece.size + 4096:
        # few pieces and values: mark each (piece, value) seen, no sort
        seen = np.zeros((count, nv), dtype=bool)
        seen[piece, codes] = True
        distinct = seen.sum(axis=1)
    else:
        keys = np.unique(piece * nv + codes)
        distinct = np.bincount(keys // nv, minlength=count)
    spread = np.zeros(count)
    if numbers is not None and piece.size:
        low = np.full(count, np.inf)
        high = np.full(count, -np.inf)
        np.minimum.at(low, piece, numbers)
        np.maximum.at(high, piece, numbers)
        spread = np.where(high >= low, high - low, 0.0)
    return distinct, spread


def piece_meets(
    piece: np.ndarray,
    count: int,
    need_distinct: np.ndarray,
    need_spread: np.ndarray,
    codes: Sequence[np.ndarray],
    numbers: Sequence[np.ndarray | None],
) -> np.ndarray:
    """Whether each piece 0..count-1 (``piece[i]`` for record i) meets its requirement:
    ``need_distinct[p, j]`` distinct codes of attribute j and ``need_spread[p, j]``
    spread of its numbers. Attributes are given as ``codes[j]`` (:func:`encode_values`)
    and ``numbers[j]`` (float values, None for a non-numeric attribute)."""
    ok = np.ones(count, dtype=bool)
    for j, (c, x) in enumerate(zip(codes, numbers, strict=True)):
        d_need, s_need = need_distinct[:, j], need_spread[:, j]
        if not (d_need > 0).any() and not (s_need > 0).any():
            continue
        wants_spread = bool((s_need > 0).any())
        if wants_spread and x is None:
            raise ConfigError("a spread is required of a non-numeric attribute")
        distinct, spread = _piece_stats(piece, c, x if wants_spread else None, count)
        ok &= distinct >= d_need
        if wants_spread:
            ok &= spread >= s_need
    return ok


def failing_cells(
    before: Cells, after: Cells, values: Mapping[str, Sequence[Any] | np.ndarray]
) -> np.ndarray:
    """Which cells of ``after`` (one more release than ``before``, same records) break
    the rule. A cell that is a whole old cell is checked only on the attributes whose
    requirement grew (the rest it met before, on the same values); a new cell or a
    piece of an old one is checked on everything. ``values`` must hold every attribute
    checked (a missing one raises ``ConfigError``)."""
    if before.cell.shape != after.cell.shape:
        raise ConfigError("before and after must describe the same records")
    n_after = after.count
    failing = np.zeros(n_after, dtype=bool)
    if n_after == 0:
        return failing
    member = after.cell >= 0
    cells = after.cell[member]
    old = before.cell[member]
    size = np.bincount(cells, minlength=n_after)
    old_of = np.full(n_after, -1, dtype=np.int64)
    old_of[cells] = old
    old_size = np.bincount(before.cell[before.cell >= 0], minlength=before.count)
    whole = (old_of >= 0) & (size == np.append(old_size, -1)[old_of])
    _, prev_d, prev_s = before.widened(after.attributes)
    had_d, had_s = _rows(prev_d, old_of), _rows(prev_s, old_of)
    check_d = np.where(whole[:, None] & (after.distinct <= had_d), 0, after.distinct)
    check_s = np.where(whole[:, None] & (after.spread <= had_s), 0.0, after.spread)
    codes: list[np.ndarray] = []
    numbers: list[np.ndarray | None] = []
    for j, a in enumerate(after.attributes):
        needed = bool((check_d[:, j] > 0).any() or (check_s[:, j] > 0).any())
        if not needed:
            codes.append(np.zeros(cells.size, dtype=np.int64))
            numbers.append(None)
            continue
        if a not in values:
            raise ConfigError(f"the cell check needs the values of {a!r}")
        column = np.asarray(values[a])
        if column.shape[0] != member.size:
            raise ConfigError(f"values of {a!r} must have one entry per record")
        codes.append(encode_values(column[member]))
        wants = bool((check_s[:, j] > 0).any())
        numbers.append(column[member].astype(np.float64) if wants else None)
    return ~piece_meets(cells, n_after, check_d, check_s, codes, numbers)
