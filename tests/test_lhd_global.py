"""``recoding='global'`` (:mod:`sqlanon.models.lhd_global`) against code of its own.

- Optimality: a brute force over every level vector, written here from MODELS.md (labels
  read from the hierarchy tables, pieces per (labels, old cell), the left-out part of an
  old cell kept valid or the cell left out whole), finds no node within
  ``max_suppression`` of lower precision loss than the planner's, and leaves out and
  publishes the same records at the planner's node.
- Uniform labels: every class is published at the same levels, and every published
  record's label is its raw value's ancestor at that level.
- Composition: random sequences mixing global and local lHD families and (k,e) families
  on one domain leave ``tests/attacker.py`` (cell check, subtraction, exact on tiny
  cases) nobody exposed.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.errors import ConfigError, InfeasibleError
from sqlanon.models.cells import Cells, Requirement
from sqlanon.models.lhd_planner import plan_lhd
from tests.test_composition_properties import (
    AGES,
    EDUCATION,
    HIERARCHIES,
    LHD_ATTRIBUTES,
    QUASI,
    LhdFamily,
    _subset,
    ke_families,
    lhd_families,
    run,
    scenarios,
)

# ------------------------------------------------------------------ the brute force


def ancestor(q: str, raw: Any, level: int) -> str:
    """The label of ``raw`` at ``level``, straight from the hierarchy's table."""
    return HIERARCHIES[q].table[str(raw)][level]


def meets(rows: Sequence[int], need: Mapping[str, tuple[int, float]], values: Any) -> bool:
    """Whether the records ``rows`` hold, per attribute, the distinct values and spread."""
    for a, (distinct, spread) in need.items():
        column = [values[a][r] for r in rows]
        if len(set(column)) < distinct:
            return False
        if spread > 0 and (not column or max(column) - min(column) < spread):
            return False
    return True


def at_node(
    node: tuple[int, ...],
    quasi: Sequence[str],
    sensitive: Sequence[str],
    l: int,  # noqa: E741
    values: Mapping[str, Sequence[Any]],
    prior: Cells,
) -> tuple[set[int], float]:
    """The records published at ``node`` and the precision loss (MODELS.md)."""
    n = len(values[quasi[0]])
    old_need: dict[int, dict[str, tuple[int, float]]] = {}
    for c in range(prior.count):
        req = prior.requirement(c)
        old_need[c] = {
            a: (req.distinct.get(a, 0), req.spread.get(a, 0.0))
            for a in set(req.distinct) | set(req.spread)
        }
    pieces: dict[tuple[Any, ...], list[int]] = {}
    for r in range(n):
        labels = tuple(ancestor(q, values[q][r], lv) for q, lv in zip(quasi, node, strict=True))
        pieces.setdefault((labels, int(prior.cell[r])), []).append(r)
    shown: set[int] = set()
    for (_, cell), rows in pieces.items():
        need = dict(old_need.get(cell, {}))
        for s in sensitive:
            d, e = need.get(s, (0, 0.0))
            need[s] = (max(d, l), e)
        if meets(rows, need, values):
            shown.update(rows)
    for cell, need in old_need.items():
        members = [r for r in range(n) if prior.cell[r] == cell]
        out = [r for r in members if r not in shown]
        if out and len(out) < len(members) and not meets(out, need, values):
            shown.difference_update(members)
    heights = [HIERARCHIES[q].height for q in quasi]
    per_record = sum(lv / h for lv, h in zip(node, heights, strict=True))
    loss = (len(shown) * per_record + (n - len(shown)) * len(quasi)) / (n * len(quasi))
    return shown, loss


# ------------------------------------------------------------------------ the inputs


@st.composite
def cases(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(4, 24))
    column = st.lists
    values: dict[str, list[Any]] = {
        "s0": draw(column(st.integers(0, draw(st.sampled_from([3, 8]))), min_size=n, max_size=n)),
        "s1": draw(column(st.integers(0, 5), min_size=n, max_size=n)),
        "s2": draw(column(st.sampled_from("abcd"), min_size=n, max_size=n)),
        "age": draw(column(st.sampled_from(AGES), min_size=n, max_size=n)),
        "edu": draw(column(st.sampled_from(sorted(EDUCATION)), min_size=n, max_size=n)),
        "sex": draw(column(st.sampled_from("MF"), min_size=n, max_size=n)),
    }
    prior = Cells.empty(n)
    if draw(st.booleans()):
        # an earlier release: classes (or groups) 0..3, -1 never published
        group = np.array(draw(column(st.integers(-1, 3), min_size=n, max_size=n)))
        if draw(st.booleans()):
            requirement = Requirement.lhd(draw(_subset(LHD_ATTRIBUTES)), 2)
        else:
            requirement = Requirement.ke("s0", 2, float(draw(st.sampled_from([0, 2]))))
        prior = prior.then(group, requirement)
    return {
        "values": values,
        "quasi": draw(_subset(QUASI)),
        "sensitive": draw(_subset(LHD_ATTRIBUTES)),
        "l": draw(st.integers(2, 4)),
        "max_suppression": draw(st.sampled_from([0.0, 0.1, 0.3, 1.0])),
        "prior": prior,
    }


def plan(case: dict[str, Any]) -> Any:
    values, prior = case["values"], case["prior"]
    return plan_lhd(
        {q: np.array(values[q], dtype=object) for q in case["quasi"]},
        {s: np.array(values[s], dtype=object) for s in case["sensitive"]},
        {q: HIERARCHIES[q] for q in case["quasi"]},
        case["l"],
        prior=prior,
        max_suppression=case["max_suppression"],
        checked={
            a: np.array(values[a], dtype=object)
            for a in prior.attributes
            if a not in case["sensitive"]
        },
        recoding="global",
    )


# ------------------------------------------------------------------------ properties


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_the_planners_node_has_the_least_precision_loss_within_max_suppression(
    case: dict[str, Any],
) -> None:
    quasi, values = case["quasi"], case["values"]
    n = len(values["s0"])
    budget = case["max_suppression"] * n + 1e-6
    found = {
        node: at_node(node, quasi, case["sensitive"], case["l"], values, case["prior"])
        for node in itertools.product(*(range(HIERARCHIES[q].height + 1) for q in quasi))
    }
    within = {node: loss for node, (shown, loss) in found.items() if n - len(shown) <= budget}
    try:
        got = plan(case)
    except InfeasibleError:
        # nothing within budget, or no record can be in any valid class
        assert not within or all(not found[node][0] for node in within)
        return
    assert within, "the planner published beyond max_suppression"
    assert got.precision_loss == pytest.approx(min(within.values()), abs=1e-9)
    if got.n_classes:
        node = tuple(got.class_levels[0].tolist())
        shown, loss = found[node]
        assert set(np.flatnonzero(got.class_id >= 0).tolist()) == shown
        assert got.precision_loss == pytest.approx(loss, abs=1e-9)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_label_of_a_column_is_of_one_level(case: dict[str, Any]) -> None:
    case = {**case, "max_suppression": 1.0}
    try:
        got = plan(case)
    except InfeasibleError:
        return
    if not got.n_classes:
        return
    assert (got.class_levels == got.class_levels[0]).all()
    for j, q in enumerate(case["quasi"]):
        level = int(got.class_levels[0, j])
        labels = got.labels(q)
        for i in np.flatnonzero(got.class_id >= 0).tolist():
            assert labels[i] == ancestor(q, case["values"][q][i], level)


def test_recoding_other_than_local_or_global_is_refused() -> None:
    case = {
        "values": {"age": [20, 30, 40], "s0": [1, 2, 3]},
        "quasi": ("age",),
        "sensitive": ("s0",),
        "l": 2,
        "max_suppression": 1.0,
        "prior": Cells.empty(3),
    }
    with pytest.raises(ConfigError, match="recoding must be 'local'.*or 'global'"):
        plan_lhd({"age": [20, 30, 40]}, {"s0": [1, 2, 3]}, HIERARCHIES, 2, recoding="full")
    with pytest.raises(ConfigError, match="leave algorithm 'auto'"):
        plan_lhd(
            {"age": [20, 30, 40]},
            {"s0": [1, 2, 3]},
            HIERARCHIES,
            2,
            algorithm="greedy",
            recoding="global",
        )
    assert plan(case).algorithm == "global"


# --------------------------------------------------------------------- composition

global_lhd_families = st.builds(
    LhdFamily,
    quasi=_subset(QUASI),
    sensitive=_subset(LHD_ATTRIBUTES),
    l=st.integers(2, 5),
    algorithm=st.just("auto"),
    max_suppression=st.sampled_from([0.05, 0.2, 0.5, 1.0]),
    recoding=st.just("global"),
)
ANY_FAMILY = st.one_of(ke_families, lhd_families, global_lhd_families)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scenarios(
        ANY_FAMILY,
        n_families=(0, 2),
        required=(global_lhd_families, st.one_of(ke_families, lhd_families)),
    )
)
def test_global_local_and_ke_sequences_leave_no_record_below_its_requirement(
    scenario: Any,
) -> None:
    run(scenario)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(ANY_FAMILY, records=(4, 7), releases=(2, 3), required=(global_lhd_families,)))
def test_tiny_global_sequences_survive_the_exact_attacker(scenario: Any) -> None:
    run(scenario, exact=True)
