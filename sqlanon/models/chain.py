"""The chain rule for sensitive-value changes (MODELS.md, "Changing tables"). Pure numpy.

A person whose sensitive values change leaves a ghost of the old incarnation in its old
cell and enters again as a new record: a chain of incarnations, oldest first. The cell
rule alone is not enough, because the attacker knows which attributes changed: between
consecutive incarnations those are *different* and all others *equal*, which links
cells. MODELS.md's counter-example, (k,e) = (2,1): release 1 group {a, b, c} = {1, 1, 2};
a changes 1 -> 2 and b changes 2 -> 1; release 2 keeps {a's ghost, b's ghost, c} =
{1, 1, 2} and adds {a new, b new} = {1, 2}. Every cell meets (2,1), yet a_old != a_new
and b_old != b_new force {a_old, b_old} = {1, 2}, so the bystander c = 1 is pinned.

The rule (the **chain rule**): an incarnation's candidates are the full sensitive tuples
of its cell's **never-changed** members that extend to a compatible choice in every
other link of its chain (each other incarnation choosing a never-changed cellmate's
tuple); each attribute's candidates must meet the cell's requirement. And every cell
with a changed member must meet its requirement counting only its never-changed members.
Why it is enough: swapping a changed incarnation with a never-changed cellmate keeps
every published multiset (cellmates share every group) and the cellmate has no links;
doing that in every cell of the chain gives a consistent world for each candidate.

:func:`chain_check` says which chains and which cells break it; the release holds back
the changes of failing chains (their old incarnations stay published unchanged).

>>> from sqlanon.models.cells import Cells, Requirement
>>> # records: a_old, b_old, c, a_new, b_new
>>> s = np.array([1, 2, 1, 2, 1])
>>> ke = Requirement.ke("s", 2, 1)
>>> cells = Cells.empty(5).then(np.array([0, 0, 0, -1, -1]), ke)
>>> cells = cells.then(np.array([0, 0, 0, 1, 1]), ke)
>>> cells.cell.tolist()  # new records sort first
[1, 1, 1, 0, 0]
>>> change = (frozenset({"s"}),)
>>> check = chain_check(cells, {"s": s}, [Chain((0, 3), change), Chain((1, 4), change)])
>>> check.failing_chains.tolist(), check.failing_cells.tolist()
([True, True], [True, True])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from sqlanon.errors import ConfigError
from sqlanon.models.cells import Cells, encode_values, piece_meets

__all__ = ["Chain", "ChainCheck", "chain_check"]


@dataclass(frozen=True)
class Chain:
    """One person's published incarnations, oldest first (record indices into the arrays
    given to chain_check), and between consecutive ones the attributes that changed."""

    incarnations: tuple[int, ...]  # len >= 2
    changed: tuple[frozenset[str], ...]  # len == len(incarnations) - 1, each non-empty


@dataclass(frozen=True)
class ChainCheck:
    """``failing_chains[i]``: chain i breaks the chain rule (hold its change back).
    ``failing_cells[c]``: cell c misses its requirement counting only never-changed
    members."""

    failing_chains: np.ndarray  # bool per chain given
    failing_cells: np.ndarray  # bool per cell of `cells` (0..cells.count-1)


def chain_check(
    cells: Cells, values: Mapping[str, np.ndarray], chains: Sequence[Chain]
) -> ChainCheck:
    """Which ``chains`` and which cells break the chain rule, in the state ``cells``
    after the release being checked (ghosts and live records alike; ``values[a][i]`` for
    every attribute of ``cells.attributes`` and every record ``i``).

    Changed members are the records of any chain; every other published record is a
    never-changed member. Attributes of a chain's ``changed`` outside
    ``cells.attributes`` were never published and constrain nothing here. Work is done
    only on the cells that hold an incarnation, so the cost is about the size of those
    cells, not of the table.
    """
    n = cells.cell.size
    failing_chains = np.zeros(len(chains), dtype=bool)
    failing_cells = np.zeros(cells.count, dtype=bool)
    if not chains:
        return ChainCheck(failing_chains, failing_cells)
    names = cells.attributes
    incarnations = _validate(cells, chains)
    changed = np.zeros(n, dtype=bool)
    changed[incarnations] = True
    touched = np.unique(cells.cell[incarnations])
    # never-changed members of the touched cells, and their cell's rank in `touched`
    in_touched = np.zeros(cells.count, dtype=bool)
    in_touched[touched] = True
    rows = np.flatnonzero((cells.cell >= 0) & ~changed & in_touched[np.maximum(cells.cell, 0)])
    piece = np.searchsorted(touched, cells.cell[rows])
    need_d, need_s = cells.distinct[touched], cells.spread[touched]

    codes: list[np.ndarray] = []
    numbers_by_code: list[np.ndarray | None] = []
    for j, a in enumerate(names):
        if a not in values:
            raise ConfigError(f"the chain check needs the values of {a!r}")
        column = np.asarray(values[a])
        if column.ndim != 1 or column.shape[0] != n:
            raise ConfigError(f"values of {a!r} must have one entry per record ({n})")
        code = encode_values(column[rows]) if rows.size else np.zeros(0, dtype=np.int64)
        codes.append(code)
        numbers_by_code.append(
            _numbers(a, column[rows], code) if (need_s[:, j] > 0).any() else None
        )

    numbers = [None if x is None else x[c] for x, c in zip(numbers_by_code, codes, strict=True)]
    failing_cells[touched] = ~piece_meets(piece, touched.size, need_d, need_s, codes, numbers)

    # each touched cell's distinct never-changed tuples, as rows of codes
    matrix = np.stack(codes, axis=1) if codes else np.zeros((rows.size, 0), dtype=np.int64)
    ids = _row_ids(np.column_stack([piece, matrix]))
    _, first = np.unique(ids, return_index=True)
    order = first[np.argsort(piece[first], kind="stable")]
    bounds = np.searchsorted(piece[order], np.arange(touched.size + 1))
    tuples = [matrix[order[bounds[i] : bounds[i + 1]]] for i in range(touched.size)]

    position = {a: j for j, a in enumerate(names)}
    for i, chain in enumerate(chains):
        where = np.searchsorted(touched, cells.cell[list(chain.incarnations)])
        domains = [tuples[w] for w in where]
        links = [sorted(position[a] for a in c if a in position) for c in chain.changed]
        for j, link in enumerate(links):  # forward
            domains[j + 1] = domains[j + 1][_supported(domains[j], domains[j + 1], link)]
        for j in reversed(range(len(links))):  # backward
            domains[j] = domains[j][_supported(domains[j + 1], domains[j], links[j])]
        failing_chains[i] = any(
            not _meets(d, need_d[w], need_s[w], numbers_by_code)
            for d, w in zip(domains, where, strict=True)
        )
    return ChainCheck(failing_chains, failing_cells)


def _validate(cells: Cells, chains: Sequence[Chain]) -> np.ndarray:
    """Every incarnation of every chain (each record at most once), checked."""
    out: list[int] = []
    for chain in chains:
        members = [int(r) for r in chain.incarnations]
        if len(members) < 2 or len(chain.changed) != len(members) - 1:
            raise ConfigError(
                f"a chain needs >= 2 incarnations and one set of changed attributes "
                f"between each two: got {len(members)} and {len(chain.changed)}"
            )
        if any(not c for c in chain.changed):
            raise ConfigError("each link of a chain must name the attributes that changed")
        if any(r < 0 or r >= cells.cell.size for r in members):
            raise ConfigError(f"chain {members} names records outside 0..{cells.cell.size - 1}")
        cell = cells.cell[members]
        if (cell < 0).any():
            raise ConfigError(
                f"chain {members}: an incarnation that was never published has no place "
                "in a chain (drop or update it instead)"
            )
        if np.unique(cell).size != cell.size:
            # a new incarnation enters as a new record, so its cell is new: two
            # incarnations of one person in one cell would need two distinct cellmates,
            # which the path check does not guarantee
            raise ConfigError(f"chain {members}: two incarnations share a cell")
        out += members
    incarnations = np.asarray(out, dtype=np.int64)
    if np.unique(incarnations).size != incarnations.size:
        raise ConfigError("a record appears in more than one chain, or twice in one")
    return incarnations


def _numbers(name: str, column: np.ndarray, code: np.ndarray) -> np.ndarray:
    """The number of each code 0..max (a spread is required of ``name``)."""
    representative = np.zeros(int(code.max()) + 1 if code.size else 0, dtype=np.int64)
    representative[code] = np.arange(code.size)
    try:
        return np.asarray(column[representative], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"a spread is required of {name!r}, whose values are not numbers"
        ) from exc


def _row_ids(matrix: np.ndarray) -> np.ndarray:
    """Equal ids for equal rows (dense, 0..), one column at a time so keys never
    overflow int64."""
    ids = np.zeros(matrix.shape[0], dtype=np.int64)
    for column in matrix.T:
        ids = ids * (int(column.max(initial=0)) + 1) + column
        ids = np.unique(ids, return_inverse=True)[1].reshape(-1)
    return ids


def _supported(left: np.ndarray, right: np.ndarray, changed: list[int]) -> np.ndarray:
    """Which rows of ``right`` have a compatible row in ``left``: equal on every column
    outside ``changed``, different on every column in it.

    Counted by inclusion-exclusion over the subsets S of ``changed``: the rows of
    ``left`` that differ from t on all of ``changed`` number
    sum_S (-1)^|S| #{rows equal to t outside ``changed`` and on S}.
    """
    if left.shape[0] == 0 or right.shape[0] == 0:
        return np.zeros(right.shape[0], dtype=bool)
    same = [j for j in range(left.shape[1]) if j not in changed]
    both = np.vstack([left, right])
    count = np.zeros(right.shape[0], dtype=np.int64)
    for size in range(len(changed) + 1):
        for subset in combinations(changed, size):
            ids = _row_ids(both[:, same + list(subset)])
            per_id = np.bincount(ids[: left.shape[0]], minlength=int(ids.max()) + 1)
            count += (-1) ** size * per_id[ids[left.shape[0] :]]
    supported: np.ndarray = count > 0
    return supported


def _meets(
    domain: np.ndarray,
    need_d: np.ndarray,
    need_s: np.ndarray,
    numbers_by_code: Sequence[np.ndarray | None],
) -> bool:
    """Whether candidate tuples ``domain`` meet a cell's requirement on every attribute."""
    for j in range(need_d.size):
        column = domain[:, j]
        if need_d[j] > 0 and np.unique(column).size < need_d[j]:
            return False
        if need_s[j] > 0:
            numbers = numbers_by_code[j]
            if column.size == 0 or numbers is None:
                return False
            spread = float(numbers[column].max() - numbers[column].min())
            if spread < need_s[j]:
                return False
    return True
