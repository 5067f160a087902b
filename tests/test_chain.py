"""The chain rule (sqlanon.models.chain) on hand-made cells, each case explained.

Records are numbered in the arrays given to ``chain_check``; ``Cells`` are built either
by replaying releases (``Cells.then``) or directly (cell ids and requirements), which is
all ``chain_check`` looks at. Where a case is a real history, the exact attacker of
``tests/attacker.py`` confirms the verdict.
"""

from __future__ import annotations

import doctest
from collections.abc import Sequence

import numpy as np
import pytest

from sqlanon.errors import ConfigError
from sqlanon.models import chain as chain_module
from sqlanon.models.cells import Cells, Requirement
from sqlanon.models.chain import Chain, chain_check
from tests.attacker import History, Publication, exact_exposed

S = frozenset({"s"})
KE = Requirement.ke("s", 2, 1)


def replay(n: int, releases: Sequence[tuple[Sequence[int], Requirement]]) -> Cells:
    cells = Cells.empty(n)
    for group, requirement in releases:
        cells = cells.then(np.asarray(group), requirement)
    return cells


def direct(cell: Sequence[int], names: Sequence[str], distinct: Sequence[Sequence[int]]) -> Cells:
    """Cells given outright: ``distinct[c]`` per attribute, no spreads."""
    d = np.asarray(distinct, dtype=np.int64)
    return Cells(np.asarray(cell), tuple(names), d, np.zeros(d.shape))


def test_doctests() -> None:
    assert doctest.testmod(chain_module).failed == 0


# -------------------------------------------------------------- MODELS.md counter-example

# a_old, b_old, c, a_new, b_new: release 1 {a, b, c} = {1, 2, 1}; a: 1 -> 2, b: 2 -> 1;
# release 2 keeps {a ghost, b ghost, c} and adds {a new, b new} = {2, 1}
COUNTER = np.array([1, 2, 1, 2, 1])
COUNTER_RELEASES = [([0, 0, 0, -1, -1], KE), ([0, 0, 0, 1, 1], KE)]


def test_counter_example_fails() -> None:
    cells = replay(5, COUNTER_RELEASES)
    check = chain_check(cells, {"s": COUNTER}, [Chain((0, 3), (S,)), Chain((1, 4), (S,))])
    assert check.failing_chains.tolist() == [True, True]
    # old cell: never-changed {c} = {1}; new cell: nobody never-changed
    assert check.failing_cells.all()


def test_counter_example_exposes_c_to_the_exact_attacker() -> None:
    truth = {x: (int(v),) for x, v in zip("abcAB", COUNTER, strict=True)}
    r1 = Publication.of(truth, [0], [["a", "b", "c"]], {0: 2}, {0: 1.0})
    r2 = Publication.of(truth, [0], [["a", "b", "c"], ["A", "B"]], {0: 2}, {0: 1.0})
    links = [("a", "A", frozenset({0})), ("b", "B", frozenset({0}))]
    assert set(exact_exposed(History(truth, [r1, r2], links))) == {"c"}
    assert exact_exposed(History(truth, [r1, r2])) == {}  # without the links: safe


# records: a_old, b_old, c, d, a_new, b_new, n1, n2 (two new arrivals join the new group)
SAFE = np.array([1, 2, 1, 2, 2, 1, 1, 2])
SAFE_RELEASES = [
    ([0, 0, 0, 0, -1, -1, -1, -1], KE),
    ([0, 0, 0, 0, 1, 1, 1, 1], KE),
]


def test_safe_variant_passes() -> None:
    cells = replay(8, SAFE_RELEASES)
    check = chain_check(cells, {"s": SAFE}, [Chain((0, 4), (S,)), Chain((1, 5), (S,))])
    assert not check.failing_chains.any()
    assert not check.failing_cells.any()
    truth = {x: (int(v),) for x, v in zip("abcdABmn", SAFE, strict=True)}
    r1 = Publication.of(truth, [0], ["abcd"], {0: 2}, {0: 1.0})
    r2 = Publication.of(truth, [0], ["abcd", "ABmn"], {0: 2}, {0: 1.0})
    links = [("a", "A", frozenset({0})), ("b", "B", frozenset({0}))]
    assert exact_exposed(History(truth, [r1, r2], links)) == {}


# ------------------------------------------------------------------------ longer chains


def test_person_changing_twice() -> None:
    # a: 1 -> 2 -> 1; each release adds the new incarnation with two new arrivals
    # records: a, c1, c2 | a', n1, n2 | a'', m1, m2
    s = np.array([1, 1, 2, 2, 1, 2, 1, 1, 2])
    r1 = [0, 0, 0, -1, -1, -1, -1, -1, -1]
    r2 = [0, 0, 0, 1, 1, 1, -1, -1, -1]
    r3 = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    cells = replay(9, [(r1, KE), (r2, KE), (r3, KE)])
    ok = chain_check(cells, {"s": s}, [Chain((0, 3, 6), (S, S))])
    assert not ok.failing_chains.any() and not ok.failing_cells.any()
    # with only one never-changed value in the newest cell, every link of the chain fails
    s_bad = s.copy()
    s_bad[8] = 1
    bad = chain_check(cells, {"s": s_bad}, [Chain((0, 3, 6), (S, S))])
    assert bad.failing_chains.tolist() == [True]
    assert bad.failing_cells.tolist() == [c == cells.cell[6] for c in range(3)]


def test_the_backward_pass_counts() -> None:
    # A (cell 0) -x-> B (cell 1) -y-> C (cell 2), 2-diverse on x and y everywhere.
    # Never-changed tuples: cell 0 {(1,1), (2,2)}, cell 1 {(2,1), (1,2), (3,3)},
    # cell 2 {(2,5), (3,1), (3,2)}. B = (1,2) has no C with x = 1 and y != 2, so A = (2,2)
    # loses its only partner: A is left with (1,1). Looking at one link at a time
    # (A-B alone) would keep both of A's tuples.
    x = np.array([0, 1, 2, 0, 2, 1, 3, 0, 2, 3, 3])
    y = np.array([0, 1, 2, 0, 1, 2, 3, 0, 5, 1, 2])
    cell = [0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]  # records 0, 3, 7: A, B, C
    cells = direct(cell, ["x", "y"], [[2, 2]] * 3)
    chain = Chain((0, 3, 7), (frozenset({"x"}), frozenset({"y"})))
    check = chain_check(cells, {"x": x, "y": y}, [chain])
    assert check.failing_chains.tolist() == [True]
    assert not check.failing_cells.any()
    first_link = Chain((0, 3), (frozenset({"x"}),))
    assert chain_check(cells, {"x": x, "y": y}, [first_link]).failing_chains.tolist() == [False]


def test_two_changes_from_one_cell() -> None:
    # records: a, b, c, d, e | a', b', n1, n2; a: 1 -> 2, b: 2 -> 3
    s = np.array([1, 2, 1, 2, 3, 2, 3, 1, 3])
    releases = [([0] * 5 + [-1] * 4, KE), ([0] * 5 + [1] * 4, KE)]
    cells = replay(9, releases)
    chains = [Chain((0, 5), (S,)), Chain((1, 6), (S,))]
    check = chain_check(cells, {"s": s}, chains)
    assert not check.failing_chains.any() and not check.failing_cells.any()
    # the never-changed of the old cell all hold 1: the old cell fails, and both chains
    s_bad = np.array([1, 2, 1, 1, 1, 2, 3, 1, 3])
    bad = chain_check(cells, {"s": s_bad}, chains)
    assert bad.failing_chains.tolist() == [True, True]
    assert bad.failing_cells[cells.cell[0]] and not bad.failing_cells[cells.cell[5]]


def test_a_deleted_ghost_counts_as_never_changed() -> None:
    # records: a, g, c | a', n1, n2. g was deleted (a ghost, in no chain), a: 1 -> 2
    s = np.array([1, 2, 1, 2, 1, 2])
    releases = [([0, 0, 0, -1, -1, -1], KE), ([0, 0, 0, 1, 1, 1], KE)]
    cells = replay(6, releases)
    check = chain_check(cells, {"s": s}, [Chain((0, 3), (S,))])
    assert not check.failing_chains.any() and not check.failing_cells.any()
    # had g changed too (2 -> 1, into the new cell as n1), only c = 1 would be left
    both = chain_check(cells, {"s": s}, [Chain((0, 3), (S,)), Chain((1, 4), (S,))])
    assert both.failing_chains.tolist() == [True, True]


def test_unchanged_attributes_link_the_incarnations() -> None:
    # s0 changes, s1 must stay equal; lHD l=2 on s0 only. Old cell never-changed
    # {(1,x), (2,y)}, new cell never-changed {(1,x), (2,x)}: the old incarnation must
    # have s1 = x, so s0 = 1 exactly, though both cells hold 2 values of s0.
    s0 = np.array([0, 1, 2, 0, 1, 2])
    s1 = np.array(["x", "x", "y", "x", "x", "x"], dtype=object)
    cells = direct([0, 0, 0, 1, 1, 1], ["s0", "s1"], [[2, 0], [2, 0]])
    values = {"s0": s0, "s1": s1}
    check = chain_check(cells, values, [Chain((0, 3), (frozenset({"s0"}),))])
    assert check.failing_chains.tolist() == [True]
    assert not check.failing_cells.any()
    # both changing, with new never-changed {(1,x), (2,z)}: (1,x) -> (2,z) and
    # (2,y) -> (1,x), each incarnation keeps 2 values of s0; s0 alone changing would not
    s1_z = np.array(["x", "x", "y", "x", "x", "z"], dtype=object)
    both = Chain((0, 3), (frozenset({"s0", "s1"}),))
    assert not chain_check(cells, {"s0": s0, "s1": s1_z}, [both]).failing_chains.any()
    only_s0 = Chain((0, 3), (frozenset({"s0"}),))
    assert chain_check(cells, {"s0": s0, "s1": s1_z}, [only_s0]).failing_chains.all()


def test_attributes_never_published_constrain_nothing() -> None:
    # the change named only an attribute outside cells.attributes: the published s
    # must then be equal across the link (candidates {1, 2} both ways here)
    s = np.array([0, 1, 2, 0, 1, 2])
    cells = direct([0, 0, 0, 1, 1, 1], ["s"], [[2], [2]])
    check = chain_check(cells, {"s": s}, [Chain((0, 3), (frozenset({"hidden"}),))])
    assert not check.failing_chains.any()
    shifted = np.array([0, 1, 2, 0, 2, 3])  # only 2 is in both cells
    assert chain_check(
        cells, {"s": shifted}, [Chain((0, 3), (frozenset({"hidden"}),))]
    ).failing_chains.all()


def test_requirement_on_an_attribute_subset() -> None:
    # cell 0 asks 2 values of s1 only, cell 1 of s0 only
    s0 = np.array([0, 5, 5, 0, 1, 2])
    s1 = np.array([0, 1, 2, 0, 1, 1])
    cells = direct([0, 0, 0, 1, 1, 1], ["s0", "s1"], [[0, 2], [2, 0]])
    check = chain_check(cells, {"s0": s0, "s1": s1}, [Chain((0, 3), (frozenset({"s0"}),))])
    # old (5,1) -> new (1,1) or (2,1); old (5,2) has no new tuple with s1 = 2
    assert check.failing_chains.tolist() == [True]
    s1_ok = np.array([0, 1, 2, 0, 1, 2])
    ok = chain_check(cells, {"s0": s0, "s1": s1_ok}, [Chain((0, 3), (frozenset({"s0"}),))])
    assert not ok.failing_chains.any()


# ------------------------------------------------------------------------- failing cells


def test_failing_cells_only_where_a_changed_member_is() -> None:
    # cell 2 breaks its requirement but holds no changed member: not chain_check's
    # business (the ordinary cell rule catches it)
    s = np.array([1, 2, 3, 1, 2, 1, 5, 5])
    cells = direct([0, 0, 0, 1, 1, 1, 2, 2], ["s"], [[2], [2], [2]])
    check = chain_check(cells, {"s": s}, [Chain((0, 3), (S,))])
    assert check.failing_cells.tolist() == [False, False, False]
    # a second change out of cell 0 leaves it {3} and cell 1 {1}
    check = chain_check(cells, {"s": s}, [Chain((0, 3), (S,)), Chain((1, 4), (S,))])
    assert check.failing_cells.tolist() == [True, True, False]


def test_failing_cells_spread() -> None:
    s = np.array([0.0, 10.0, 10.5, 11.0, 3.0, 11.0, 0.0])
    cells = Cells(
        np.array([0, 0, 0, 0, 1, 1, 1]), ("s",), np.array([[2], [2]]), np.array([[5.0], [5.0]])
    )
    check = chain_check(cells, {"s": s}, [Chain((0, 4), (S,))])
    # cell 0 without record 0: {10, 10.5, 11}, spread 1 < 5
    assert check.failing_cells.tolist() == [True, False]
    assert check.failing_chains.tolist() == [True]
    s_wide = s.copy()
    s_wide[3] = 16.0
    ok = chain_check(cells, {"s": s_wide}, [Chain((0, 4), (S,))])
    assert not ok.failing_cells.any() and not ok.failing_chains.any()


def test_nothing_to_check() -> None:
    cells = direct([0, 0, -1], ["s"], [[2]])
    check = chain_check(cells, {}, [])
    assert check.failing_chains.shape == (0,) and check.failing_cells.tolist() == [False]


# ------------------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    ("chains", "message"),
    [
        ([Chain((0, 2), (S,))], "never published"),
        ([Chain((0, 3), (S,)), Chain((3, 5), (S,))], "more than one chain"),
        ([Chain((0,), ())], ">= 2 incarnations"),
        ([Chain((0, 3), (S, S))], ">= 2 incarnations"),
        ([Chain((0, 1), (S,))], "share a cell"),
        ([Chain((0, 9), (S,))], "outside"),
    ],
)
def test_bad_chains_are_refused(chains: list[Chain], message: str) -> None:
    cells = direct([0, 0, -1, 1, 1, 2], ["s"], [[2], [2], [2]])
    with pytest.raises(ConfigError, match=message):
        chain_check(cells, {"s": np.arange(6)}, chains)


def test_missing_values_are_refused() -> None:
    cells = direct([0, 0, 1, 1], ["s", "t"], [[2, 2], [2, 2]])
    with pytest.raises(ConfigError, match="'t'"):
        chain_check(cells, {"s": np.arange(4)}, [Chain((0, 2), (S,))])
    with pytest.raises(ConfigError, match="one entry per record"):
        chain_check(cells, {"s": np.arange(3), "t": np.arange(4)}, [Chain((0, 2), (S,))])


# ---------------------------------------------------------------------------- the scale


def test_a_million_records_and_hundreds_of_chains_are_checked() -> None:
    """At scale (its time is the bench scripts' to measure, never asserted here)."""
    rng = np.random.default_rng(7)
    n = 1_000_000
    s0 = rng.integers(0, 1000, n)
    s1 = np.asarray(rng.choice(list("abcdefgh"), n), dtype=object)
    cells = Cells.empty(n).then(rng.integers(0, 50_000, n), Requirement.lhd(["s0", "s1"], 3))
    later = np.where(rng.random(n) < 0.5, rng.integers(0, 100_000, n), -1)
    cells = cells.then(later, Requirement.ke("s0", 3, 10))
    pick = rng.permutation(n)[:600].tolist()
    chains = [Chain((pick[2 * i], pick[2 * i + 1]), (frozenset({"s0"}),)) for i in range(300)]
    check = chain_check(cells, {"s0": s0, "s1": s1}, chains)
    assert check.failing_chains.shape == (300,)
    assert check.failing_cells.shape == (cells.count,)
