"""The chain rule against the exact attacker, on random tiny histories.

A small simulator, written for this test, plays a table that grows, loses rows and has
sensitive values corrected, released again and again under (k,e) (k=2) and lHD (l=2)
requirements. It knows nothing of sqlanon's planners: each release groups the records
at random (ghosts included, new arrivals maybe held back, live records maybe
suppressed) and keeps the first grouping the rules accept. The rules it may apply:

- the ordinary cell rule, checked by ``tests.attacker.cell_check`` (independent code);
- the chain rule, ``sqlanon.models.chain.chain_check``; when no grouping passes, the
  release holds back this step's changes (as the product does) and tries again, and
  when that fails too, the release is skipped.

Some releases take their first grouping unchecked, so histories that break the rules
occur too. The guarantee checked: whenever the final state meets the cell rule and the
chain rule, the exact attacker (``tests.attacker.exact_candidates``: memberships, which
ghost is whose, which attributes changed) leaves every incarnation at least its
requirement, and the truth is always among the candidates.

Last, ``chain_check`` itself is compared with its definition (every choice of
never-changed cellmates' tuples along each chain) on random cells.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.models.cells import Cells, Requirement
from sqlanon.models.chain import Chain, chain_check
from tests.attacker import History, Publication, Release, cell_check, exact_exposed

MAX_RECORDS = 9


@dataclass(frozen=True)
class Spec:
    """A release's model ("ke" or "lhd"): positions published and per position
    (distinct, spread)."""

    model: str
    positions: tuple[int, ...]
    need: dict[int, tuple[int, float]]

    def requirement(self) -> Requirement:
        return Requirement(
            {f"s{p}": d for p, (d, _) in self.need.items()},
            {f"s{p}": s for p, (_, s) in self.need.items() if s > 0},
        )


@dataclass
class World:
    """The simulator's state: every incarnation so far (its tuple, person, whether it
    is a ghost), the links, and the releases (a group per incarnation, -1 absent)."""

    width: int
    values: list[tuple[int, ...]] = field(default_factory=list)
    person: list[int] = field(default_factory=list)
    ghost: list[bool] = field(default_factory=list)
    links: list[tuple[int, int, frozenset[int]]] = field(default_factory=list)
    releases: list[tuple[Spec, list[int]]] = field(default_factory=list)

    def copy(self) -> World:
        return World(
            self.width,
            list(self.values),
            list(self.person),
            list(self.ghost),
            list(self.links),
            [(s, list(g)) for s, g in self.releases],
        )

    @property
    def n(self) -> int:
        return len(self.values)

    def published(self, r: int) -> bool:
        return any(g[r] >= 0 for _, g in self.releases if r < len(g))

    def add(self, t: tuple[int, ...], person: int) -> int:
        self.values.append(t)
        self.person.append(person)
        self.ghost.append(False)
        return self.n - 1

    def groups(self, i: int) -> list[int]:
        group = self.releases[i][1]
        return group + [-1] * (self.n - len(group))

    def meets_cell_rule(self) -> bool:
        values = {f"s{p}": [t[p] for t in self.values] for p in range(self.width)}
        releases = [
            Release.of(
                self.groups(i),
                [f"s{p}" for p in spec.positions],
                {f"s{p}": d for p, (d, _) in spec.need.items()},
                {f"s{p}": s for p, (_, s) in spec.need.items()},
            )
            for i, (spec, _) in enumerate(self.releases)
        ]
        return not cell_check(values, releases).flagged

    def chains(self) -> list[Chain]:
        """Every person's published incarnations, linked by what changed."""
        after: dict[int, tuple[int, frozenset[int]]] = {old: (new, c) for old, new, c in self.links}
        later = {new for _, new, _ in self.links}
        out = []
        for start in range(self.n):
            if start in later or start not in after:
                continue
            incarnations, changed, r = [start], [], start
            while r in after:
                r, c = after[r]
                incarnations.append(r)
                changed.append(frozenset(f"s{p}" for p in c))
            if all(self.published(x) for x in incarnations):
                out.append(Chain(tuple(incarnations), tuple(changed)))
        return out

    def meets_chain_rule(self) -> bool:
        cells = Cells.empty(self.n)
        for i, (spec, _) in enumerate(self.releases):
            cells = cells.then(np.asarray(self.groups(i)), spec.requirement())
        values = {f"s{p}": np.array([t[p] for t in self.values]) for p in range(self.width)}
        check = chain_check(cells, values, self.chains())
        return not check.failing_chains.any() and not check.failing_cells.any()

    def history(self) -> History:
        truth = {r: t for r, t in enumerate(self.values)}
        publications = []
        for i, (spec, _) in enumerate(self.releases):
            by_group: dict[int, list[int]] = {}
            for r, g in enumerate(self.groups(i)):
                if g >= 0:
                    by_group.setdefault(g, []).append(r)
            publications.append(
                Publication.of(
                    truth,
                    spec.positions,
                    by_group.values(),
                    {p: d for p, (d, _) in spec.need.items()},
                    {p: s for p, (_, s) in spec.need.items()},
                )
            )
        return History(truth, publications, self.links)


def simulate(rng: random.Random, chain_rule: bool = True, tries: int = 60) -> World:
    """One random history (see the module docstring)."""
    width = rng.choice([1, 1, 2])
    domain = rng.choice([2, 3, 3])
    world = World(width)

    def fresh() -> tuple[int, ...]:
        return tuple(rng.randrange(domain) for _ in range(width))

    for person in range(rng.randint(4, 6)):
        world.add(fresh(), person)
    people = world.n
    for step in range(rng.randint(2, 4)):
        changes: list[tuple[int, tuple[int, ...], frozenset[int]]] = []
        if step:
            for _ in range(rng.randint(0, 2)):
                live = [
                    r
                    for r in range(world.n)
                    if not world.ghost[r]
                    and world.published(r)
                    and r not in {c[0] for c in changes}
                ]
                kind = rng.choice(["arrive", "delete", "change", "change"])
                if kind == "arrive" or not live:
                    if world.n + len(changes) < MAX_RECORDS:
                        world.add(fresh(), people)
                        people += 1
                elif kind == "delete":
                    world.ghost[rng.choice(live)] = True
                elif world.n + len(changes) < MAX_RECORDS:
                    old = rng.choice(live)
                    positions = [p for p in range(width) if rng.random() < 0.6] or [0]
                    new = list(world.values[old])
                    for p in positions:
                        new[p] = rng.choice([v for v in range(domain) if v != new[p]])
                    changes.append((old, tuple(new), frozenset(positions)))
                    # a new incarnation needs never-changed cellmates: new arrivals
                    for _ in range(2):
                        if world.n + len(changes) < MAX_RECORDS:
                            world.add(fresh(), people)
                            people += 1
        spec = _spec(rng, width)
        checked = rng.random() < 0.8
        for with_changes in (True, False) if changes else (True,):
            trial = world.copy()
            placed: set[int] = set()
            if with_changes:
                for old, changed_to, what in changes:
                    trial.ghost[old] = True
                    r = trial.add(changed_to, trial.person[old])
                    trial.links.append((old, r, what))
                    placed.add(r)
            accepted = _release(rng, trial, spec, placed, checked, chain_rule, tries)
            if accepted is not None:
                world = accepted
                break
        # when nothing passed, even without the changes, the release is skipped; the
        # arrivals and deletions stay
    return world


def _spec(rng: random.Random, width: int) -> Spec:
    if rng.random() < 0.5:
        p = rng.randrange(width)
        return Spec("ke", (p,), {p: (2, rng.choice([0.0, 1.0]))})
    positions = tuple(p for p in range(width) if rng.random() < 0.7) or (0,)
    return Spec("lhd", positions, {p: (2, 0.0) for p in positions})


def _release(
    rng: random.Random,
    world: World,
    spec: Spec,
    placed: set[int],
    checked: bool,
    chain_rule: bool,
    tries: int,
) -> World | None:
    """The world after releasing ``spec`` with the first acceptable random grouping
    (``placed``: new incarnations that must be published), None when none is.

    Half the groupings are uniform (any record in any of 1-3 groups); half are shaped
    like a planner's: published records keep their last group (-1 absent: a group of
    its own) and this step's new records join one group, new or old."""
    last = world.groups(len(world.releases) - 1) if world.releases else [-1] * world.n
    for _ in range(tries):
        shaped = rng.random() < 0.5
        count = rng.randint(1, 3)
        newcomers = rng.randrange(count + 1) if shaped else 0
        group = []
        for r in range(world.n):
            old = world.published(r) and r not in placed
            if old and spec.model == "lhd" and not world.ghost[r] and rng.random() < 0.1:
                group.append(-1)  # suppressed
            elif not old and r not in placed and rng.random() < 0.25:
                group.append(-1)  # held back
            elif shaped:
                group.append(newcomers if not old else last[r] + count + 1)
            else:
                group.append(rng.randrange(count))
        trial = world.copy()
        trial.releases.append((spec, group))
        if not checked:
            return trial
        if trial.meets_cell_rule() and (not chain_rule or trial.meets_chain_rule()):
            return trial
    return None


# ---------------------------------------------------------------------------- the checks


@dataclass
class Tally:
    histories: int = 0
    premise: int = 0
    with_chains: int = 0


def check_history(world: World, tally: Tally | None = None) -> dict[Any, list[str]]:
    """The exact attacker's exposures; AssertionError when the premise held."""
    exposed = exact_exposed(world.history())  # raises if the truth is not a candidate
    premise = world.meets_cell_rule() and world.meets_chain_rule()
    if tally is not None:
        tally.histories += 1
        tally.premise += premise
        tally.with_chains += premise and bool(world.chains())
    if premise:
        assert not exposed, f"{describe(world)}\nexposed: {exposed}"
    return exposed


def describe(world: World) -> str:
    lines = [
        f"values {dict(enumerate(world.values))}",
        f"ghosts {[r for r, g in enumerate(world.ghost) if g]}",
    ]
    lines += [f"link {old} -> {new} changed {sorted(c)}" for old, new, c in world.links]
    for i, (spec, _) in enumerate(world.releases):
        lines.append(f"release {i}: {spec.need} groups {world.groups(i)}")
    return "\n".join(lines)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_the_chain_rule_leaves_the_exact_attacker_nothing(rng: random.Random) -> None:
    check_history(simulate(rng))


def test_the_simulator_covers_chains() -> None:
    """The property above is not vacuous: most seeded histories meet the premise, many
    with published chains."""
    tally = Tally()
    for seed in range(300):
        check_history(simulate(random.Random(seed)), tally)
    assert tally.premise >= 150, tally
    assert tally.with_chains >= 40, tally


def test_without_the_chain_rule_the_attacker_finds_exposures() -> None:
    # MODELS.md's counter-example through the simulator's types
    world = World(1)
    for v in (1, 2, 1):
        world.add((v,), world.n)
    ke = Spec("ke", (0,), {0: (2, 1.0)})
    world.releases.append((ke, [0, 0, 0]))
    for old, v in ((0, 2), (1, 1)):
        world.ghost[old] = True
        new = world.add((v,), old)
        world.links.append((old, new, frozenset({0})))
    world.releases.append((ke, [0, 0, 0, 1, 1]))
    assert world.meets_cell_rule() and not world.meets_chain_rule()
    assert set(exact_exposed(world.history())) == {2}
    # and generated histories under the cell rule alone
    exposed = 0
    for seed in range(200):
        world = simulate(random.Random(seed), chain_rule=False)
        if world.meets_cell_rule() and exact_exposed(world.history()):
            exposed += 1
            assert not world.meets_chain_rule(), describe(world)
    assert exposed >= 1


# ------------------------------------------------- chain_check against its definition


@st.composite
def cell_states(draw: st.DrawFn) -> tuple[Cells, dict[str, np.ndarray], list[Chain]]:
    """Random cells over up to 3 attributes (one of them strings) with random
    requirements, and random chains through distinct cells."""
    names = ("a", "b", "c")[: draw(st.integers(1, 3))]
    n_cells = draw(st.integers(2, 5))
    n = draw(st.integers(n_cells, 24))
    cell = draw(st.lists(st.integers(-1, n_cells - 1), min_size=n, max_size=n))
    cell[:n_cells] = range(n_cells)  # every cell has a member
    domain = draw(st.integers(2, 4))
    values = {
        a: np.array(draw(st.lists(st.integers(0, domain - 1), min_size=n, max_size=n)))
        for a in names
    }
    if "b" in values:
        values["b"] = np.array(["xyzw"[v] for v in values["b"]], dtype=object)
    distinct = draw(
        st.lists(
            st.lists(st.integers(0, 3), min_size=len(names), max_size=len(names)),
            min_size=n_cells,
            max_size=n_cells,
        )
    )
    spread = [
        [float(draw(st.integers(0, 2))) if a != "b" else 0.0 for a in names] for _ in range(n_cells)
    ]
    cells = Cells(np.array(cell), names, np.array(distinct), np.array(spread))
    published = [r for r in range(n) if cell[r] >= 0]
    chains = []
    used: set[int] = set()
    for _ in range(draw(st.integers(0, 3))):
        length = draw(st.integers(2, min(4, n_cells)))
        picks = draw(
            st.lists(
                st.sampled_from(published),
                min_size=length,
                max_size=length,
                unique_by=lambda r: cell[r],
            )
        )
        if used & set(picks) or len(picks) < 2:
            continue
        used |= set(picks)
        changed = tuple(
            frozenset(draw(st.lists(st.sampled_from(names + ("hidden",)), min_size=1, unique=True)))
            for _ in picks[1:]
        )
        chains.append(Chain(tuple(picks), changed))
    return cells, values, chains


def _brute_failing(cells: Cells, values: dict[str, np.ndarray], chains: list[Chain]) -> list[bool]:
    """Every choice of a never-changed cellmate's tuple per incarnation, straight from
    the definition."""
    names = cells.attributes
    changed = {r for c in chains for r in c.incarnations}
    tuples: dict[int, set[tuple[Any, ...]]] = {}
    for r, c in enumerate(cells.cell.tolist()):
        if c >= 0 and r not in changed:
            tuples.setdefault(c, set()).add(tuple(values[a][r] for a in names))
    out = []
    for chain in chains:
        domains = [
            sorted(tuples.get(int(cells.cell[r]), set()), key=repr) for r in chain.incarnations
        ]
        found: list[set[tuple[Any, ...]]] = [set() for _ in domains]
        for world in itertools.product(*domains):
            ok = all(
                all((u[j] != v[j]) == (a in link) for j, a in enumerate(names))
                for u, v, link in zip(world, world[1:], chain.changed, strict=False)
            )
            if ok:
                for i, t in enumerate(world):
                    found[i].add(t)
        failing = False
        for r, candidates in zip(chain.incarnations, found, strict=True):
            c = int(cells.cell[r])
            for j in range(len(names)):
                column = {t[j] for t in candidates}
                if len(column) < cells.distinct[c, j]:
                    failing = True
                if cells.spread[c, j] > 0 and (
                    not column or max(column) - min(column) < cells.spread[c, j]
                ):
                    failing = True
        out.append(failing)
    return out


@settings(max_examples=300, deadline=None)
@given(cell_states())
def test_chain_check_meets_its_definition(
    state: tuple[Cells, dict[str, np.ndarray], list[Chain]],
) -> None:
    cells, values, chains = state
    check = chain_check(cells, values, chains)
    assert check.failing_chains.tolist() == _brute_failing(cells, values, chains)
    changed = {r for c in chains for r in c.incarnations}
    for c in range(cells.count):
        members = [r for r in range(cells.cell.size) if cells.cell[r] == c]
        if not set(members) & changed:
            assert not check.failing_cells[c]
            continue
        kept = [r for r in members if r not in changed]
        failing = False
        for j, a in enumerate(cells.attributes):
            column = {values[a][r] for r in kept}
            failing |= len(column) < cells.distinct[c, j]
            if cells.spread[c, j] > 0:
                failing |= not column or max(column) - min(column) < cells.spread[c, j]
        assert check.failing_cells[c] == failing
