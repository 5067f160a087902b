"""Seed 002's comparison attack on lHD releases, and the releases it compares.

Pure numpy. An attacker holding every release intersects, per record and sensitive
attribute, the values published by the classes the record was in
(:func:`comparison_attack`); :func:`comparison_violations` lists the pairs of classes,
one new and one old, that share a record and fewer than ``l`` values (the seed's
pairwise constraint). :class:`EarlierRelease` is one published release seen from a
later candidate set (:meth:`sqlanon.models.lhd_planner.LhdPlan.as_earlier` makes one).

The parameter is called ``l`` as in the paper (hence the ``noqa: E741`` markers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sqlanon.errors import ConfigError

__all__ = [
    "ComparisonAttack",
    "ComparisonViolation",
    "EarlierRelease",
    "comparison_attack",
    "comparison_violations",
]


@dataclass(frozen=True)
class EarlierRelease:
    """The classes of one published release, seen from the current record set.

    ``class_of_record[i]`` is the class id (0..c-1) that record ``i`` of the current
    candidate set (the order of the columns given to
    :func:`~sqlanon.models.lhd_planner.plan_lhd`) had in that release, -1 if that release
    did not publish it. ``class_values[s][c]`` is the set of distinct values class ``c``
    published for sensitive attribute ``s``; it has one entry per sensitive attribute
    that release published, each a sequence over all its classes.
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
