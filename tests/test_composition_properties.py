"""Random release sequences through the pure planners, checked by ``tests/attacker.py``.

The guarantee (MODELS.md, "Cells"): across every release of a domain (several families,
both models, different QI/SA subsets, appends), no record ends with fewer candidate
values than the requirement of the releases that published it. The attacker shares
nothing with the planners' bookkeeping: it sees only each release's groups and the
true values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from sqlanon.errors import InfeasibleError
from sqlanon.hierarchy import Hierarchy
from sqlanon.models import ke_incremental, lhd_planner
from sqlanon.models.cells import Cells, Requirement
from tests.attacker import Release, cell_check, exact_attack, subtraction_attack

# ------------------------------------------------------------------------------ the data

KE_ATTRIBUTES = ("s0", "s1")  # numeric: (k,e) and lHD
LHD_ATTRIBUTES = ("s0", "s1", "s2")  # s2 holds strings
QUASI = ("age", "edu", "sex")
AGES = range(20, 60)
EDUCATION = {"HS": "School", "Some": "School", "BA": "College", "MA": "College", "PhD": "College"}

HIERARCHIES = {
    "age": Hierarchy.from_widths("age", [5, 10, 20], AGES),
    "edu": Hierarchy.from_arx_csv(
        "edu", "\n".join(f"{raw};{group};*" for raw, group in EDUCATION.items())
    ),
    "sex": Hierarchy.from_arx_csv("sex", "M;*\nF;*"),
}


@dataclass(frozen=True)
class KeFamily:
    attribute: str
    k: int
    e: float
    policy: str

    def __str__(self) -> str:
        return f"ke({self.attribute}, k={self.k}, e={self.e:g}, {self.policy})"


@dataclass(frozen=True)
class LhdFamily:
    quasi: tuple[str, ...]
    sensitive: tuple[str, ...]
    l: int  # noqa: E741
    algorithm: str
    max_suppression: float
    recoding: str = "local"

    def __str__(self) -> str:
        return (
            f"lhd({','.join(self.quasi)} -> {','.join(self.sensitive)}, l={self.l}, "
            f"{self.algorithm}, ms={self.max_suppression}, {self.recoding})"
        )


Family = KeFamily | LhdFamily


@dataclass(frozen=True)
class Scenario:
    """``values[a][r]`` for every record 0..n-1; step i lets ``steps[i][0]`` more records
    arrive (in record order), then releases family ``steps[i][1]``."""

    values: Mapping[str, Sequence[Any]]
    families: tuple[Family, ...]
    steps: tuple[tuple[int, int], ...]

    @property
    def n(self) -> int:
        return len(self.values["s0"])

    def __str__(self) -> str:
        lines = [f"{name} = {list(column)}" for name, column in self.values.items()]
        lines += [f"family {i}: {f}" for i, f in enumerate(self.families)]
        lines += [f"step: +{arrive} records, family {f}" for arrive, f in self.steps]
        return "\n".join(lines)


@dataclass
class Outcome:
    """What the driver published: one attacker :class:`Release` per published version."""

    releases: list[Release] = field(default_factory=list)
    infeasible: int = 0


# ------------------------------------------------------------------------- the strategies

ke_families = st.builds(
    KeFamily,
    attribute=st.sampled_from(KE_ATTRIBUTES),
    k=st.integers(2, 4),
    e=st.sampled_from([0.0, 1.0, 2.0, 5.0]),
    policy=st.sampled_from(["auto", "merge", "defer"]),
)


def _subset(pool: Sequence[str]) -> st.SearchStrategy[tuple[str, ...]]:
    return st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique=True).map(
        lambda names: tuple(sorted(names))
    )


lhd_families = st.builds(
    LhdFamily,
    quasi=_subset(QUASI),
    sensitive=_subset(LHD_ATTRIBUTES),
    l=st.integers(2, 5),
    algorithm=st.sampled_from(["greedy", "scalable", "refine", "auto"]),
    max_suppression=st.sampled_from([0.05, 0.2, 0.5, 1.0]),
)

EITHER = st.one_of(ke_families, lhd_families)


@st.composite
def scenarios(
    draw: st.DrawFn,
    families: st.SearchStrategy[Family],
    records: tuple[int, int] = (6, 40),
    releases: tuple[int, int] = (2, 6),
    n_families: tuple[int, int] = (1, 3),
    required: Sequence[st.SearchStrategy[Family]] = (),
) -> Scenario:
    """Records, families (one drawn from each of ``required``, then ``n_families`` from
    ``families``) and steps (arrivals, then a release of one family)."""
    n = draw(st.integers(*records))
    column = st.lists
    values: dict[str, list[Any]] = {
        # few distinct values make pieces fail: held back, suppressed, infeasible
        "s0": draw(
            column(st.integers(0, draw(st.sampled_from([4, 10, 30]))), min_size=n, max_size=n)
        ),
        "s1": draw(column(st.integers(0, 6), min_size=n, max_size=n)),
        "s2": draw(
            column(st.sampled_from("abcdef"[: draw(st.integers(2, 6))]), min_size=n, max_size=n)
        ),
        "age": draw(column(st.sampled_from(AGES), min_size=n, max_size=n)),
        "edu": draw(column(st.sampled_from(sorted(EDUCATION)), min_size=n, max_size=n)),
        "sex": draw(column(st.sampled_from("MF"), min_size=n, max_size=n)),
    }
    chosen = tuple(draw(f) for f in required) + tuple(
        draw(st.lists(families, min_size=n_families[0], max_size=n_families[1]))
    )
    steps = []
    arrived = draw(st.integers(min(2, n), n))  # the initial part
    for i in range(draw(st.integers(*releases))):
        arrive = arrived if i == 0 else draw(st.integers(0, n - arrived))
        if i:
            arrived += arrive
        steps.append((arrive, draw(st.integers(0, len(chosen) - 1))))
    return Scenario(values, chosen, tuple(steps))


# ------------------------------------------------------------------------------ the driver


def _column(scenario: Scenario, name: str, present: np.ndarray) -> np.ndarray:
    return np.asarray(scenario.values[name], dtype=object)[present]


def _numbers(scenario: Scenario, name: str, present: np.ndarray) -> np.ndarray:
    return np.asarray(scenario.values[name], dtype=np.float64)[present]


def _plan(
    family: Family, scenario: Scenario, present: np.ndarray, prior: Cells
) -> tuple[np.ndarray, Requirement]:
    """One release through the product's pure API: the group of every present record
    (-1 absent) and the requirement it gives the cells it publishes."""
    if isinstance(family, KeFamily):
        s = family.attribute
        plan = ke_incremental.plan_in_cells(
            _numbers(scenario, s, present), prior, s, family.k, family.e, family.policy
        )
        return plan.group, Requirement.ke(s, family.k, family.e)
    checked = {
        a: _column(scenario, a, present) for a in prior.attributes if a not in family.sensitive
    }
    lhd_plan = lhd_planner.plan_lhd(
        {q: _column(scenario, q, present) for q in family.quasi},
        {s: _column(scenario, s, present) for s in family.sensitive},
        {q: HIERARCHIES[q] for q in family.quasi},
        family.l,
        prior=prior,
        checked=checked,
        algorithm=family.algorithm,
        max_suppression=family.max_suppression,
        recoding=family.recoding,
    )
    return lhd_plan.class_id, Requirement.lhd(family.sensitive, family.l)


def run(
    scenario: Scenario, check: bool = True, exact: bool = False, independent: bool = False
) -> Outcome:
    """Drive the scenario; with ``check``, assert after every release that the cell
    check and the subtraction attacker (and, with ``exact``, the exact attacker) flag
    no record. ``independent`` plans every release as if it were the domain's first
    (the unsafe way, to show that the attacker notices)."""
    n = scenario.n
    cells = Cells.empty(n)
    outcome = Outcome()
    arrived = 0
    for step, (arrive, f) in enumerate(scenario.steps):
        arrived += arrive
        if arrived == 0:
            continue
        family = scenario.families[f]
        present = np.arange(arrived)
        try:
            prior = Cells.empty(arrived) if independent else cells.select(present)
            group_present, requirement = _plan(family, scenario, present, prior)
        except InfeasibleError:
            outcome.infeasible += 1
            continue
        group = np.full(n, -1, dtype=np.int64)
        group[present] = group_present
        cells = cells.then(group, requirement)
        outcome.releases.append(
            Release.of(
                group,
                requirement.attributes,
                requirement.distinct,
                requirement.spread,
                label=f"step {step}: {family}",
            )
        )
        if check:
            assert_safe(scenario, outcome.releases, exact=exact)
    return outcome


def assert_safe(scenario: Scenario, releases: list[Release], exact: bool = False) -> None:
    values = scenario.values
    where = f"after {releases[-1].label}\n{scenario}"
    by_cell = cell_check(values, releases)
    assert not by_cell.flagged, f"cell check: {by_cell.describe()}\n{where}"
    by_subtraction = subtraction_attack(values, releases)
    assert not by_subtraction.flagged, f"subtraction: {by_subtraction.describe()}\n{where}"
    if exact:
        by_exact = exact_attack(values, releases)
        assert not by_exact.flagged, f"exact: {by_exact.describe()}\n{where}"


# ---------------------------------------------------------------------------- properties

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(scenarios(ke_families))
def test_ke_sequences_leave_no_record_below_its_requirement(scenario: Scenario) -> None:
    run(scenario)


@FAST
@given(scenarios(lhd_families))
def test_lhd_sequences_leave_no_record_below_its_requirement(scenario: Scenario) -> None:
    run(scenario)


@FAST
@given(scenarios(EITHER, n_families=(0, 2), required=(ke_families, lhd_families)))
def test_mixed_sequences_leave_no_record_below_its_requirement(scenario: Scenario) -> None:
    run(scenario)


@FAST
@given(scenarios(EITHER, records=(4, 7), releases=(2, 3)))
def test_tiny_sequences_survive_the_exact_attacker(scenario: Scenario) -> None:
    run(scenario, exact=True)


# ------------------------------------------------------- the attacker is not vacuous


def test_paper_rule_example_is_flagged() -> None:
    """MODELS.md, "Several releases of a growing table": two new records inside
    {2, 16, 22, 25, 26, 30, 31, 32} are read as exactly {22, 30}."""
    values = {"s": [2, 16, 25, 26, 31, 32, 48, 50, 53, 56, 58, 22, 30]}
    v1 = Release.ke([0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, -1, -1], "s", 3, 5)
    v2 = Release.ke([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0], "s", 3, 5)
    assert not cell_check(values, [v1]).flagged
    assert not subtraction_attack(values, [v1]).flagged
    assert sorted(cell_check(values, [v1, v2]).flagged) == [11, 12]
    attack = subtraction_attack(values, [v1, v2])
    assert sorted(attack.flagged) == [11, 12]
    assert attack.candidates[11, "s"] == {22, 30}
    assert sorted(exact_attack(values, [v1, v2], max_records=13).flagged) == [11, 12]


def test_lhd_appended_person_is_flagged() -> None:
    """MODELS.md, the Adult example: v2 = v1's five members plus one appended person."""
    values = {"capital_loss": [1887, 1887, 1740, 1485, 1977, 1902]}
    v1 = Release.lhd([0, 0, 0, 0, 0, -1], ["capital_loss"], 3)
    v2 = Release.lhd([0, 0, 0, 0, 0, 0], ["capital_loss"], 3)
    assert not exact_attack(values, [v1]).flagged
    for verdict in (
        cell_check(values, [v1, v2]),
        subtraction_attack(values, [v1, v2]),
        exact_attack(values, [v1, v2]),
    ):
        assert sorted(verdict.flagged) == [5]
    assert subtraction_attack(values, [v1, v2]).candidates[5, "capital_loss"] == {1902}


def test_lhd_then_ke_of_another_family_is_flagged() -> None:
    """Issue 10's 4-row case: the age-30 class {100, 900}, then the (k,e) group
    {100, 110}: every record is pinned."""
    values = {"v": [100, 900, 110, 910]}
    releases = [Release.lhd([0, 0, 1, 1], ["v"], 2), Release.ke([0, 1, 0, 1], "v", 2, 5)]
    for verdict in (
        cell_check(values, releases),
        subtraction_attack(values, releases),
        exact_attack(values, releases),
    ):
        assert sorted(verdict.flagged) == [0, 1, 2, 3]
    assert exact_attack(values, releases).candidates[0, "v"] == {100}


def test_a_class_of_s2_values_narrows_s1() -> None:
    """MODELS.md's (s1, s2) example: release 1 shows (a, x), (b, y), (c, z) in a class
    (l = 3); release 2 (s2 only) puts person 0 in a class whose s2 values are {x, y}."""
    values = {"s1": ["a", "b", "c", "d", "e", "f"], "s2": ["x", "y", "z", "y", "x", "z"]}
    r1 = Release.lhd([0, 0, 0, 1, 1, 1], ["s1", "s2"], 3)
    r2 = Release.lhd([0, 1, 1, 0, 1, 1], ["s2"], 2)
    exact = exact_attack(values, [r1, r2])
    assert exact.candidates[0, "s1"] == {"a", "b"}
    assert 0 in exact.flagged and 0 in cell_check(values, [r1, r2]).flagged


def test_joint_rows_narrow_what_no_single_attribute_shows() -> None:
    """Per attribute, record 0 keeps 3 candidates of s1 and of s2; jointly its s2 must
    be one of class C's {x, y, z}, and only rows (a, x), (a, y), (b, z) of its class A
    have such an s2: s1 in {a, b}. The cell check and the exact attacker catch it; the
    per-attribute subtraction cannot."""
    values = {
        "s1": ["a", "a", "b", "c", "d", "e", "f"],
        "s2": ["x", "y", "z", "w", "y", "z", "x"],
    }
    r1 = Release.lhd([0, 0, 0, 0, 1, 1, 1], ["s1", "s2"], 3)  # A = 0..3, B = 4..6
    r2 = Release.lhd([0, 1, 1, 1, 0, 0, 1], ["s2"], 2)  # C = {0, 4, 5}, D = {1, 2, 3, 6}
    assert not subtraction_attack(values, [r1, r2]).flagged
    exact = exact_attack(values, [r1, r2])
    assert exact.candidates[0, "s1"] == {"a", "b"}
    assert 0 in exact.flagged
    assert set(exact.flagged) <= set(cell_check(values, [r1, r2]).flagged)


def test_paper_policy_leaks_on_the_models_example() -> None:
    """``plan_in_cells(policy="paper")`` plans with the family's own last groups only and
    accepts MODELS.md's v2 group."""
    values = {"s": [2, 16, 25, 26, 31, 32, 22, 30]}
    own = np.array([0, 0, 0, 1, 1, 1, -1, -1])
    v1 = Release.ke(own, "s", 3, 5)
    plan = ke_incremental.plan_in_cells(
        np.array(values["s"]), Cells.empty(8), "s", 3, 5, policy="paper", own_group=own
    )
    v2 = Release.ke(plan.group, "s", 3, 5)
    assert sorted(subtraction_attack(values, [v1, v2]).flagged) == [6, 7]


def _paper_run(scenario: Scenario) -> list[Release]:
    """A single (k,e) family under the seeds' rule, each version planned from its own
    last groups."""
    family = scenario.families[0]
    assert isinstance(family, KeFamily)
    n, arrived = scenario.n, 0
    own = np.full(n, -1, dtype=np.int64)
    releases = []
    for arrive, _ in scenario.steps:
        arrived += arrive
        present = np.arange(arrived)
        try:
            plan = ke_incremental.plan_in_cells(
                _numbers(scenario, family.attribute, present),
                Cells.empty(arrived),
                family.attribute,
                family.k,
                family.e,
                policy="paper",
                own_group=own[present],
            )
        except InfeasibleError:
            continue
        own = np.full(n, -1, dtype=np.int64)
        own[present] = plan.group
        releases.append(Release.ke(own, family.attribute, family.k, family.e))
    return releases


def test_paper_policy_leaks_on_generated_sequences() -> None:
    """Hypothesis finds a leaking sequence of the seeds' rule within a few hundred
    examples (about one in six leaks); shrinking is skipped to keep the test fast.
    Shrunk once, it gave: s0 = [0, 0, 0, 0, 0, 1, 2, 3, 0], k=2, e=0; v1 groups
    {0, 0, 0, 0, 0, 1}, {2, 3}; the ninth record (0) arrives and v2 puts all nine in one
    group, which minus v1's two groups is {0}."""
    paper = st.builds(
        KeFamily,
        attribute=st.just("s0"),
        k=st.integers(2, 4),
        e=st.sampled_from([0.0, 1.0, 2.0, 5.0]),
        policy=st.just("paper"),
    )

    def leaks(scenario: Scenario) -> bool:
        releases = _paper_run(scenario)
        return bool(subtraction_attack(scenario.values, releases).flagged)

    found = find(
        scenarios(paper, records=(6, 30), releases=(2, 4), n_families=(1, 1)),
        leaks,
        settings=settings(
            max_examples=1000,
            deadline=None,
            database=None,
            derandomize=True,
            phases=[Phase.generate],
        ),
    )
    assert cell_check(found.values, _paper_run(found)).flagged


def test_paper_policy_minimal_leak() -> None:
    s0 = [0, 0, 0, 0, 0, 1, 2, 3, 0]
    scenario = Scenario({"s0": s0}, (KeFamily("s0", 2, 0.0, "paper"),), ((8, 0), (1, 0)))
    releases = _paper_run(scenario)
    assert [r.group for r in releases] == [
        (0, 0, 0, 0, 0, 0, 1, 1, -1),
        (0, 0, 0, 0, 0, 0, 0, 0, 0),
    ]
    attack = subtraction_attack(scenario.values, releases)
    assert sorted(attack.flagged) == [8]
    assert attack.candidates[8, "s0"] == {0}
    # the same sequence under the safe policies: nothing flagged
    for policy in ("auto", "merge", "defer"):
        run(dataclasses.replace(scenario, families=(KeFamily("s0", 2, 0.0, policy),)))


def test_independent_lhd_releases_leak_on_generated_sequences() -> None:
    """lHD releases planned without the earlier releases' cells (independent
    re-release after appends): hypothesis finds a sequence the attacker flags."""

    def leaks(scenario: Scenario) -> bool:
        releases = run(scenario, check=False, independent=True).releases
        return bool(subtraction_attack(scenario.values, releases).flagged)

    found = find(
        scenarios(lhd_families, records=(6, 30), releases=(2, 4), n_families=(1, 1)),
        leaks,
        settings=settings(
            max_examples=1000,
            deadline=None,
            database=None,
            derandomize=True,
            phases=[Phase.generate],
        ),
    )
    releases = run(found, check=False, independent=True).releases
    assert cell_check(found.values, releases).flagged
    run(found)  # the same sequence planned on the cells: nothing flagged
