"""The pure attacker: known leaks are caught, safe histories pass, brute force agrees."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlanon.audit_core import CHECKS, KeVersion, audit_ke_history
from sqlanon.errors import ConfigError

V1_KEYS = [f"r{i}" for i in range(11)]
V1_VALUES = [2, 16, 25, 26, 31, 32, 48, 50, 53, 56, 58]
V1_GROUPS = [0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2]


def version(number: int, keys, groups, values) -> KeVersion:
    return KeVersion(number, np.array(keys), np.array(groups), np.array(values, dtype=float))


def valid(values, k: int, e: float) -> bool:
    return len(set(values)) >= k and max(values) - min(values) >= e


def test_models_counter_example_exposes_exactly_the_two_new_records():
    v1 = version(1, V1_KEYS, V1_GROUPS, V1_VALUES)
    v2 = version(2, [*V1_KEYS, "new22", "new30"], [0] * 6 + [1] * 5 + [0, 0], [*V1_VALUES, 22, 30])
    first, second = audit_ke_history([v1, v2], k=3, e=5)
    assert first.exposed == 0 and first.by_check == dict.fromkeys(CHECKS, 0)
    assert second.exposed_keys == ("new22", "new30")
    assert second.newly_exposed == 2
    assert second.keys_by_check["cell"] == ("new22", "new30")
    assert second.keys_by_check["subtraction"] == ("new22", "new30")
    # Every single-group difference passes Definition 5: that is why the seeds accept it.
    assert second.by_check["pairwise"] == 0


def test_independent_re_release_is_caught():
    keys = list("abcdefgh")
    values = list(range(1, 9))
    v1 = version(1, keys, [0, 0, 0, 0, 1, 1, 1, 1], values)
    # Regrouped: each new group meets each old one in 2 records (2 distinct values < k).
    v2 = version(2, keys, [0, 0, 1, 1, 1, 1, 0, 0], values)
    _, second = audit_ke_history([v1, v2], k=3, e=2)
    assert second.exposed == 8
    assert second.by_check["cell"] == 8
    assert second.by_check["pairwise"] == 8


def test_safe_history_reports_nothing():
    # Old groups stay intact; new records form their own valid groups; a later version
    # merges two old groups (still a union of valid cells).
    v1 = version(1, V1_KEYS, V1_GROUPS, V1_VALUES)
    keys2 = [*V1_KEYS, "n1", "n2", "n3"]
    v2 = version(2, keys2, [*V1_GROUPS, 3, 3, 3], [*V1_VALUES, 60, 70, 80])
    v3 = version(3, keys2, [0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 3, 3, 3], v2.values)
    audits = audit_ke_history([v1, v2, v3], k=3, e=5)
    assert [a.exposed for a in audits] == [0, 0, 0]
    assert all(a.by_check == dict.fromkeys(CHECKS, 0) for a in audits)


def test_exposure_is_cumulative():
    keys = list("abcdefgh")
    values = list(range(1, 9))
    v1 = version(1, keys, [0, 0, 0, 0, 1, 1, 1, 1], values)
    v2 = version(2, keys, [0, 0, 1, 1, 1, 1, 0, 0], values)
    v3 = version(3, [*keys, "x", "y", "z"], [0] * 11, [*values, 20, 30, 40])
    audits = audit_ke_history([v1, v2, v3], k=3, e=2)
    assert audits[2].exposed == 8 and audits[2].newly_exposed == 0
    assert audits[2].exposed_keys == tuple(keys)
    assert audits[2].newly_exposed_keys == ()


def test_subtraction_reuses_what_earlier_subtractions_exposed():
    # v2: old group {a,b,c} plus new {p,q,r}; the attacker learns the multiset of {p,q,r}.
    # v3: {p,q,r} plus a new record s: subtracting that remainder leaves s alone.
    v1 = version(1, ["a", "b", "c"], [0, 0, 0], [1, 2, 3])
    v2 = version(2, ["a", "b", "c", "p", "q", "r"], [0] * 6, [1, 2, 3, 10, 11, 12])
    v3 = version(
        3, ["a", "b", "c", "p", "q", "r", "s"], [0, 0, 0, 1, 1, 1, 1], [1, 2, 3, 10, 11, 12, 20]
    )
    audits = audit_ke_history([v1, v2, v3], k=3, e=2)
    assert [a.exposed for a in audits] == [0, 0, 1]
    assert audits[2].keys_by_check == {"cell": ("s",), "pairwise": ("s",), "subtraction": ("s",)}


def test_rejects_malformed_histories():
    v1 = version(1, ["a", "b"], [0, 0], [1, 2])
    with pytest.raises(ConfigError, match="published 2 times"):
        audit_ke_history([version(1, ["a", "a"], [0, 0], [1, 2])], k=2, e=0)
    with pytest.raises(ConfigError, match="strictly increasing"):
        audit_ke_history([v1, v1], k=2, e=0)
    with pytest.raises(ConfigError, match="S is fixed"):
        audit_ke_history([v1, version(2, ["a", "b"], [0, 0], [1, 3])], k=2, e=0)
    with pytest.raises(ConfigError, match="negative group"):
        audit_ke_history([version(1, ["a", "b"], [0, -1], [1, 2])], k=2, e=0)
    with pytest.raises(ConfigError, match="k must be"):
        audit_ke_history([v1], k=0, e=0)
    assert audit_ke_history([], k=2, e=1) == []


# ----------------------------------------------------------------- references (naive)


def naive_pairwise(prev: dict[str, int], cur: dict[str, int], value, k, e) -> set[str]:
    exposed: set[str] = set()
    for g in set(cur.values()):
        new = {r for r, x in cur.items() if x == g}
        for o in set(prev.values()):
            old = {r for r, x in prev.items() if x == o}
            if not new & old:
                continue
            for part in (new & old, new - old, old - new):
                if part and not valid([value[r] for r in part], k, e):
                    exposed |= part
    return exposed


def naive_cells(history: list[dict[str, int]]) -> dict[str, tuple]:
    records = set().union(*history)
    return {r: tuple(v.get(r, -1) for v in history) for r in records}


def consistent_candidates(history: list[dict[str, int]], value: dict[str, float]):
    """The true attacker on tiny inputs: every value a record can take in some assignment
    of the published multisets to the linked records."""
    records = sorted(set().union(*history))
    pool = [value[r] for r in records]
    groups = []
    for release in history:
        for g in set(release.values()):
            members = [records.index(r) for r, x in release.items() if x == g]
            groups.append((members, sorted(value[records[i]] for i in members)))
    candidates = {r: set() for r in records}
    for perm in set(itertools.permutations(pool)):
        if all(sorted(perm[i] for i in members) == ms for members, ms in groups):
            for i, r in enumerate(records):
                candidates[r].add(perm[i])
    return candidates


def to_versions(history: list[dict[str, int]], value: dict[str, float]) -> list[KeVersion]:
    return [
        version(n + 1, list(rel), list(rel.values()), [value[r] for r in rel])
        for n, rel in enumerate(history)
    ]


@st.composite
def random_histories(draw, max_records: int = 7, max_versions: int = 3):
    n = draw(st.integers(2, max_records))
    values = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    value = {f"r{i}": float(x) for i, x in enumerate(values)}
    first = draw(st.lists(st.integers(0, max_versions - 1), min_size=n, max_size=n))
    n_versions = max(first) + 1
    history = []
    for t in range(n_versions):
        present = [f"r{i}" for i in range(n) if first[i] <= t]
        groups = draw(st.lists(st.integers(0, 2), min_size=len(present), max_size=len(present)))
        history.append(dict(zip(present, groups, strict=True)))
    return history, value, draw(st.integers(1, 3)), draw(st.integers(0, 3))


@st.composite
def cell_valid_histories(draw):
    """Histories where every cell is (k,e)-valid by construction: each version adds valid
    chunks of new records and then groups whole cells (never splits one)."""
    k = draw(st.integers(1, 3))
    e = draw(st.integers(0, 4))
    history: list[dict[str, int]] = []
    cells: list[list[str]] = []
    value: dict[str, float] = {}
    counter = itertools.count()
    for _ in range(draw(st.integers(1, 4))):
        for _ in range(draw(st.integers(1 if not cells else 0, 3))):
            base = draw(st.integers(0, 50))
            extra = draw(st.lists(st.integers(0, 60), max_size=3))
            chunk_values = [base + e + i for i in range(k)] + [base] + extra
            chunk = [f"r{next(counter)}" for _ in chunk_values]
            value.update(zip(chunk, map(float, chunk_values), strict=True))
            cells.append(chunk)
        labels = draw(st.lists(st.integers(0, 3), min_size=len(cells), max_size=len(cells)))
        release = {r: g for cell, g in zip(cells, labels, strict=True) for r in cell}
        history.append(release)
        # Cells after this version: old cells stay whole, new chunks of one group merge.
        cells = [list(c) for c in _cells_of(history).values()]
    return history, value, k, e


def _cells_of(history):
    out: dict[tuple, list[str]] = {}
    for r, h in naive_cells(history).items():
        out.setdefault(h, []).append(r)
    return out


@settings(max_examples=150, deadline=None)
@given(cell_valid_histories())
def test_cell_valid_histories_pass_every_check(case):
    history, value, k, e = case
    for cell in _cells_of(history).values():
        assert valid([value[r] for r in cell], k, e)
    audits = audit_ke_history(to_versions(history, value), k, e)
    assert [a.exposed for a in audits] == [0] * len(history)


@settings(max_examples=200, deadline=None)
@given(random_histories())
def test_cell_check_matches_naive_cells_and_pairwise_matches_definition_5(case):
    history, value, k, e = case
    audits = audit_ke_history(to_versions(history, value), k, e)
    for t, audit in enumerate(audits):
        cells = _cells_of(history[: t + 1])
        expect_cell = {
            r for c in cells.values() if not valid([value[x] for x in c], k, e) for r in c
        }
        assert set(audit.keys_by_check["cell"]) == expect_cell
        expect_pair = naive_pairwise(history[t - 1], history[t], value, k, e) if t else set()
        assert set(audit.keys_by_check["pairwise"]) == expect_pair


@settings(max_examples=150, deadline=None)
@given(random_histories(max_records=6))
def test_brute_force_attacker_never_beats_the_cell_check(case):
    history, value, k, e = case
    audits = audit_ke_history(to_versions(history, value), k, e)
    candidates = consistent_candidates(history, value)
    safe = set(candidates) - set(audits[-1].keys_by_check["cell"])
    for r in safe:
        assert valid(candidates[r], k, e), (r, candidates[r])
    # The looser attacker of the brief (intersect the groups' value sets) learns less still.
    for r in safe:
        sets = [{value[x] for x, g in rel.items() if g == rel[r]} for rel in history if r in rel]
        assert valid(set.intersection(*sets), k, e)
    # Subtraction is sound: what it flags, the true attacker really narrows below (k,e).
    for t, audit in enumerate(audits):
        now = consistent_candidates(history[: t + 1], value)
        for r in audit.keys_by_check["subtraction"]:
            assert not valid(now[r], k, e), (r, now[r])


def test_large_history_is_fast():
    rng = np.random.default_rng(7)
    n0, step, versions = 50_000, 5_000, 11
    values = rng.integers(0, 5_000, n0 + step * (versions - 1)).astype(float)
    keys = np.array([f"k{i}" for i in range(len(values))])
    history = []
    group = rng.integers(0, n0 // 10, n0)
    for t in range(versions):
        n = n0 + step * t
        if t:
            # Keep old groups, put the new records into fresh groups of about 10.
            fresh = group.max() + 1 + rng.integers(0, step // 10, step)
            group = np.r_[group, fresh]
        history.append(KeVersion(t + 1, keys[:n], group.copy(), values[:n]))
    start = time.perf_counter()
    audits = audit_ke_history(history, k=3, e=20)
    elapsed = time.perf_counter() - start
    assert len(audits) == versions and history[-1].keys.shape == (100_000,)
    assert elapsed < 30, elapsed
