"""The audit of a domain: every check after every release (see :mod:`sqlanon.attacker`).

Pure numpy. :func:`audit_domain` replays the releases one prefix at a time and reports,
per record, which checks expose it; :func:`candidates` is what the attacker holding all
of them narrows each record's values to.

>>> from sqlanon.models.cells import Requirement
>>> v = {"s": np.array([1887, 1887, 1740, 1485, 1977, 1902])}
>>> v1 = AttackedRelease(np.array([0, 0, 0, 0, 0, -1]), Requirement.lhd(["s"], 3))
>>> v2 = AttackedRelease(np.array([0, 0, 0, 0, 0, 0]), Requirement.lhd(["s"], 3))
>>> counts = audit_domain(v, [v1, v2])[1].counts()
>>> [counts[c] for c in ("exposed", "by_cell", "by_subtraction", "by_comparison", "by_chain")]
[1, 1, 1, 0, 0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sqlanon.attacker.chains import chain_exposed, validate_chains
from sqlanon.attacker.encoding import Encoded, decoder
from sqlanon.attacker.history import (
    AttackedRelease,
    DomainCells,
    cells_below_requirement,
    requirement_rows,
)
from sqlanon.attacker.known_sets import (
    KnownSetAttack,
    cell_codes,
    known_groups,
    subtract_to_fixed_point,
)
from sqlanon.errors import ConfigError

__all__ = [
    "CHECKS",
    "DERIVED_PER_GROUP",
    "MAX_DERIVED",
    "MIN_DERIVED",
    "DomainAudit",
    "audit_domain",
    "candidates",
]

CHECKS = ("cell", "subtraction", "comparison", "chain")

#: The subtraction's budget per prefix, in derived known sets: this many per group,
#: at least ``MIN_DERIVED`` and at most ``MAX_DERIVED`` (see :mod:`sqlanon.attacker`).
DERIVED_PER_GROUP = 20
MIN_DERIVED = 2_000
MAX_DERIVED = 200_000


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
    weights: np.ndarray | None = None  # records per entry (None: one each)

    def counts(self) -> dict[str, int]:
        """How many records each check exposes (entries times their weights)."""

        def count(flags: np.ndarray | None) -> int:
            if flags is None:
                return 0
            return int(flags.sum()) if self.weights is None else int(self.weights[flags].sum())

        return {
            "exposed": count(self.exposed),
            "newly_exposed": count(self.newly_exposed),
            "by_cell": count(self.by_cell),
            "by_subtraction": count(self.by_subtraction),
            "by_comparison": count(self.by_comparison),
            "by_chain": count(self.by_chain),
        }


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


def _validate_weights(
    weights: np.ndarray | Sequence[int], n: int, chains: Sequence[tuple[int, ...]]
) -> np.ndarray:
    out = np.asarray(weights)
    if out.shape != (n,) or (out.size and out.dtype.kind not in "iu"):
        raise ConfigError(f"weights must be one integer per entry ({n})")
    if (out < 1).any():
        raise ConfigError("every entry stands for at least one record (weights >= 1)")
    if any(out[r] != 1 for chain in chains for r in chain):
        raise ConfigError("an incarnation in a chain is one record: its weight must be 1")
    return out.astype(np.int64)


def _budget(groups: int) -> int:
    return min(MAX_DERIVED, max(MIN_DERIVED, DERIVED_PER_GROUP * groups))


def audit_domain(
    values: Mapping[str, np.ndarray | Sequence[Any]],
    releases: Sequence[AttackedRelease],
    *,
    shortcut: bool = True,
    max_derived: int | None = None,
    chains: Sequence[Sequence[int]] = (),
    weights: np.ndarray | Sequence[int] | None = None,
) -> list[DomainAudit]:
    """One :class:`DomainAudit` per prefix of ``releases`` (the attacker holding
    releases 1..t), for the records 0..n-1 of the domain (see :mod:`sqlanon.attacker`).
    ``chains``: each changed person's incarnations (records), oldest first.

    ``weights``: entry ``i`` stands for ``weights[i]`` records with its history and its
    values (each check treats them alike: their cell is one, their values one), so the
    counts are weighted; an incarnation in a chain is an entry of its own (weight 1).
    """
    n, attributes, groups = _validate(values, releases)
    chains = validate_chains(chains, n)
    weight = None if weights is None else _validate_weights(weights, n, chains)
    encoded = [Encoded.of(a, values[a]) for a in attributes]
    cells = DomainCells.empty(n, len(attributes))
    exposed = np.zeros(n, dtype=bool)
    out = []
    for t, r in enumerate(releases):
        cells = cells.then(groups[t], *requirement_rows(r, attributes))
        failing = cells_below_requirement(cells, attributes, encoded)
        chosen = np.flatnonzero(failing) if shortcut else np.arange(cells.count)
        by_comparison = np.zeros(cells.count, dtype=bool)
        by_subtraction = np.zeros(cells.count, dtype=bool)
        complete = True
        if chosen.size:
            prefix = [
                AttackedRelease(g, x.requirement, x.attributes)
                for g, x in zip(groups[: t + 1], releases[: t + 1], strict=True)
            ]
            group_sets = known_groups(cells, prefix)
            codes = cell_codes(cells, encoded)
            by_comparison = KnownSetAttack(group_sets, attributes, encoded, codes).exposed(
                cells, chosen
            )
            budget = _budget(len(group_sets)) if max_derived is None else max_derived
            known, complete = subtract_to_fixed_point(group_sets, budget)
            by_subtraction = KnownSetAttack(known, attributes, encoded, codes).exposed(
                cells, chosen
            )
        # Per record (cell -1, never published: the appended False).
        flags = [
            np.append(per_cell, False)[cells.cell]
            for per_cell in (failing, by_subtraction, by_comparison)
        ]
        by_chain = chain_exposed(cells, encoded, chains)
        now = exposed | flags[0] | flags[1] | flags[2] | by_chain
        out.append(
            DomainAudit(
                flags[0], flags[1], flags[2], now, now & ~exposed, complete, by_chain, weight
            )
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
    encoded = [Encoded.of(a, values[a]) for a in attributes]
    cells = DomainCells.empty(n, len(attributes))
    for g, r in zip(groups, releases, strict=True):
        cells = cells.then(g, *requirement_rows(r, attributes))
    prefix = [
        AttackedRelease(g, r.requirement, r.attributes)
        for g, r in zip(groups, releases, strict=True)
    ]
    known = known_groups(cells, prefix)
    if attack == "subtraction":
        budget = _budget(len(known)) if max_derived is None else max_derived
        known, _ = subtract_to_fixed_point(known, budget)
    attack_sets = KnownSetAttack(known, attributes, encoded, cell_codes(cells, encoded))
    holding = attack_sets.sets_holding(list(range(cells.count)))
    out: dict[str, list[frozenset[Any] | None]] = {}
    for j, a in enumerate(attributes):
        decode = decoder(values[a], encoded[j])
        per_cell = []
        for c in range(cells.count):
            found = attack_sets.candidates(j, holding[c])
            per_cell.append(None if found is None else frozenset(decode[v] for v in found))
        out[a] = [per_cell[c] if c >= 0 else None for c in cells.cell.tolist()]
    return out
