"""The chain check: what consecutive incarnations of a changed person reveal.

Pure numpy. The attacker knows that consecutive incarnations of a chain differ on the
attributes whose values differ and agree on the others; an incarnation's candidates are
the tuples of its cell's never-changed members that extend along its chain (see
:mod:`sqlanon.attacker`; the rule a release enforces: :mod:`sqlanon.models.chain`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sqlanon.attacker.encoding import Encoded, spread
from sqlanon.attacker.history import DomainCells
from sqlanon.errors import ConfigError

__all__ = ["chain_exposed", "validate_chains"]


def validate_chains(chains: Sequence[Sequence[int]], n: int) -> list[tuple[int, ...]]:
    out = [tuple(int(r) for r in chain) for chain in chains]
    every = [r for chain in out for r in chain]
    if any(r < 0 or r >= n for r in every):
        raise ConfigError(f"a chain names a record outside 0..{n - 1}")
    if len(set(every)) != len(every):
        raise ConfigError("a record appears in more than one chain, or twice in one")
    return out


def chain_exposed(
    cells: DomainCells, encoded: list[Encoded], chains: Sequence[tuple[int, ...]]
) -> np.ndarray:
    """Per record: exposed by the chain rule's worst case (see :mod:`sqlanon.attacker`),
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
            if len(codes) < need_d or (need_s > 0 and spread(encoded[j], codes) < need_s):
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
