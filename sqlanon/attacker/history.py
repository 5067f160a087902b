"""The releases of a domain as the attacker sees them, the cells they make, the cell check.

Pure numpy. A record's history is its group in every release so far ("absent" once it
was first published); records with the same history form a cell (:class:`DomainCells`),
whose requirement is the union of the requirements of the releases that published it.
The cell check (:func:`cells_below_requirement`) is the worst case: a cell whose own
multiset misses its requirement exposes its records (see :mod:`sqlanon.attacker`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sqlanon.attacker.encoding import Encoded
from sqlanon.errors import ConfigError
from sqlanon.models.cells import Requirement

__all__ = ["AttackedRelease", "DomainCells", "cells_below_requirement", "requirement_rows"]


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


@dataclass
class DomainCells:
    """Every record's cell (-1: not published yet) and each cell's requirement per
    attribute (``need_distinct``, ``need_spread``: cells x attributes)."""

    cell: np.ndarray
    need_distinct: np.ndarray
    need_spread: np.ndarray

    @staticmethod
    def empty(n: int, attributes: int) -> DomainCells:
        """``n`` records, none published yet."""
        return DomainCells(
            np.full(n, -1, dtype=np.int64),
            np.zeros((0, attributes), dtype=np.int64),
            np.zeros((0, attributes), dtype=np.float64),
        )

    @property
    def count(self) -> int:
        return int(self.need_distinct.shape[0])

    def then(self, group: np.ndarray, distinct: np.ndarray, spread: np.ndarray) -> DomainCells:
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
        return DomainCells(cell, need_d, need_s)


def cells_below_requirement(
    cells: DomainCells, attributes: Sequence[str], encoded: list[Encoded]
) -> np.ndarray:
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


def requirement_rows(
    r: AttackedRelease, attributes: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """``r``'s requirement over ``attributes``, as :meth:`DomainCells.then` takes it."""
    distinct = np.array([r.requirement.distinct.get(a, 0) for a in attributes], dtype=np.int64)
    spread = np.array([r.requirement.spread.get(a, 0.0) for a in attributes], dtype=np.float64)
    return distinct, spread
