"""The seeds' published incremental (k,e) rule (policy ``paper``), reproduced faithfully.

Seeds 000 (section 5, the algorithm of its Fig. 13) and 001 (section 4.2, Fig. 4.10) build
the new release ``P'[D_n]`` from the previous release ``P'[D_{n-1}]`` only, with the static
dynamic programme of the (k,e) model over the records of ``D_n`` sorted by S: a candidate
group is a contiguous run ``d_j..d_i`` of the sorted order, and it is used only if

1. it satisfies (k,e) (line 7);
2. it "does not overlap" any partition of ``P'[D_{n-1}]`` (line 8): its S range either fully
   covers an old partition's S range or is disjoint from it (Lemma 1 and its three cases
   of Fig. 4; seed 001 defines "fully covers" as ``min <= min and max >= max``);
3. it "has no incremental breach with ``P'[D_{n-1}]``" (line 9), the tests of Definition
   5: for every old partition ``O`` sharing records with the candidate ``G``, each of
   ``O - G``, ``G - O`` (different breach) and ``G ∩ O`` (intersection breach) satisfies
   (k,e) when it is non-empty.

The DP keeps the run with the smallest start among equal costs (the pseudocode's strict
``temp < error[i]`` while ``j`` ascends). Every record of ``D_n`` is published; there is no
holding back in the seeds. This rule is here to reproduce their figures; it leaks
(``shared/docs/MODELS.md`` has a counter-example, and ``sqlanon.attacker`` finds it).

Readings chosen where the seeds are ambiguous (each matches MODELS.md's counter-example,
where the rule accepts the v2 group {2, 16, 22, 25, 26, 30, 31, 32}):

- Overlap (test 2) is judged on S values with the strict inequalities of Lemma 1: a run
  whose range only touches an old range at an end value (``max == old min`` or
  ``min == old max``) does not overlap it. Equivalently, a run is rejected exactly when
  its first or last value lies strictly inside some old range.
- Definition 5 writes ``p_ab[S] = p_a[S] ∩ p_b[S]`` on S values but ``p_ab[Q]`` on
  quasi-identifiers; since QI are published exactly, the parts are taken as *record* sets
  (linked by key) and tested on those records' values. Only old partitions that share a
  record with the candidate are tested: for a disjoint one the parts are the two valid
  groups themselves and the intersection is empty.
- The S order of ``D_n`` is ambiguous for tied values: ties are ordered by their old
  partition (old partitions ranked by (min, max, id)), new records after old ones, then by
  input position, so an old partition's tied records stay together.
- Old partitions are those of the previous version only (``prev_group``); records never
  published (``prev_group == -1``) are the new tuples ``D_n - D_{n-1}``.

If no partition passes the tests the seeds give no answer; this raises ``InfeasibleError``.
Cost: O(n^2) candidate runs, each tested against the old partitions it touches, which is
the seeds' O(p n^3) bound with numpy doing the inner loop; meant for thousands of records
(their experiment has 1,427), not for large tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sqlanon.errors import ConfigError, InfeasibleError
from sqlanon.models.ke_plan import KePlan, as_ids, check_parameters

__all__ = ["plan_paper"]


def _as_values(values: np.ndarray) -> np.ndarray:
    v = np.asarray(values)
    if v.ndim != 1 or v.dtype.kind not in "biuf":
        raise ConfigError(f"values must be a 1-D numeric array; got {v.dtype} {v.shape}")
    v = v.astype(np.float64, copy=False)
    if not np.isfinite(v).all():
        raise ConfigError("values hold NaN or infinite entries; filter or fill them first")
    return v


def _prefix_changes(sorted_values: np.ndarray) -> np.ndarray:
    """c[t] = number of value changes in sorted_values[0..t]; distinct(a..b) = c[b]-c[a]+1."""
    c = np.zeros(len(sorted_values), dtype=np.int64)
    if len(sorted_values) > 1:
        c[1:] = np.cumsum(sorted_values[1:] != sorted_values[:-1])
    return c


@dataclass(frozen=True)
class _OldPartition:
    """One old partition seen in the sorted order of ``D_n``, with prefix tables.

    ``pos``/``val``/``chg``: its records' sorted positions, values, value-change prefix.
    ``before``: number of records *outside* it at positions < t (length n + 1), and
    ``out_val``/``out_chg`` the same tables for the records outside it, so that
    ``G - O`` for a run ``G = [j..i]`` is the contiguous slice
    ``out_val[before[j] : before[i + 1]]``.
    """

    pos: np.ndarray
    val: np.ndarray
    chg: np.ndarray
    before: np.ndarray
    out_val: np.ndarray
    out_chg: np.ndarray

    @classmethod
    def build(cls, member: np.ndarray, s: np.ndarray) -> _OldPartition:
        pos = np.flatnonzero(member)
        before = np.zeros(len(s) + 1, dtype=np.int64)
        before[1:] = np.cumsum(~member)
        out_val = s[~member]
        return cls(pos, s[pos], _prefix_changes(s[pos]), before, out_val, _prefix_changes(out_val))


def _fails(distinct: np.ndarray, spread: np.ndarray, k: int, e: float) -> np.ndarray:
    return (distinct < k) | (spread < e)


def _definition5_ok(old: _OldPartition, js: np.ndarray, i: int, k: int, e: float) -> np.ndarray:
    """For runs ``G = [j..i]`` (j in ``js``): no Definition 5 breach against ``old``."""
    m = len(old.pos)
    lo = np.searchsorted(old.pos, js, side="left")  # first member at position >= j
    hi = int(np.searchsorted(old.pos, i, side="right"))  # one past the last member <= i
    shares = hi > lo
    bad = np.zeros(len(js), dtype=bool)
    if not shares.any():
        return ~bad
    last = hi - 1
    lo_c = np.minimum(lo, max(last, 0))
    # G ∩ O: members lo..hi-1.
    d_inter = old.chg[last] - old.chg[lo_c] + 1
    bad |= shares & _fails(d_inter, old.val[last] - old.val[lo_c], k, e)
    # O - G: members 0..lo-1 and hi..m-1.
    left = lo > 0
    right = hi < m
    lo_prev = np.maximum(lo - 1, 0)
    hi_c = min(hi, m - 1)
    d_out = np.where(left, old.chg[lo_prev] + 1, 0)
    if right:
        d_out = d_out + (old.chg[m - 1] - old.chg[hi_c] + 1)
        d_out = d_out - (left & (old.val[lo_prev] == old.val[hi_c]))
    low = np.where(left, old.val[0], old.val[hi_c])
    high = old.val[m - 1] if right else old.val[lo_prev]
    bad |= shares & (left | right) & _fails(d_out, high - low, k, e)
    # G - O: the records outside O at positions j..i, a slice of out_val.
    a = old.before[js]
    b = int(old.before[i + 1])
    nonempty = b > a
    if b > 0:
        a_c = np.minimum(a, b - 1)
        d_rest = old.out_chg[b - 1] - old.out_chg[a_c] + 1
        spread = old.out_val[b - 1] - old.out_val[a_c]
        bad |= shares & nonempty & _fails(d_rest, spread, k, e)
    return ~bad


def _sort_order(v: np.ndarray, old: np.ndarray, p: int) -> np.ndarray:
    """Sorted order of D_n: by value, ties by old partition rank (new last), then input order."""
    if p == 0:
        return np.argsort(v, kind="stable")
    low = np.full(p, np.inf)
    high = np.full(p, -np.inf)
    published = old >= 0
    np.minimum.at(low, old[published], v[published])
    np.maximum.at(high, old[published], v[published])
    rank = np.empty(p, dtype=np.int64)
    rank[np.lexsort((np.arange(p), high, low))] = np.arange(p)
    tie = np.where(published, rank[np.maximum(old, 0)], p)
    return np.lexsort((np.arange(len(v)), tie, v))


def _interior(s: np.ndarray, sg: np.ndarray, p: int) -> np.ndarray:
    """True where s[t] lies strictly inside the S range of some old partition."""
    inside = np.zeros(len(s), dtype=bool)
    if p == 0:
        return inside
    published = sg >= 0
    low = np.full(p, np.inf)
    high = np.full(p, -np.inf)
    np.minimum.at(low, sg[published], s[published])
    np.maximum.at(high, sg[published], s[published])
    for a, b in zip(low.tolist(), high.tolist(), strict=True):
        inside |= (s > a) & (s < b)
    return inside


def plan_paper(
    values: np.ndarray, prev_cell: np.ndarray, prev_group: np.ndarray, k: int, e: float
) -> KePlan:
    """Plan the next (k,e) release with the seeds' incremental rule (see the module doc).

    ``values``: S of every candidate record (previously published and new);
    ``prev_group``: the record's group in the last version, -1 if never published;
    ``prev_cell``: the record's cell after the last version (-1 likewise), used only to
    number the returned cells: dense ids of (new group, prev_cell), new records keyed as
    (group, new), in the order of :func:`sqlanon.models.ke_runs.plan_from_runs`. Groups are
    numbered 0..g-1 in ascending value order. Every record is published (``held_back == 0``).

    >>> plan = plan_paper(np.array([2, 16, 25, 26, 31, 32, 22, 30]),
    ...                   np.array([0, 0, 0, 1, 1, 1, -1, -1]),
    ...                   np.array([0, 0, 0, 1, 1, 1, -1, -1]), k=3, e=5)
    >>> plan.group.tolist(), plan.sum_of_errors
    ([0, 0, 0, 0, 0, 0, 0, 0], 30.0)

    Raises ``InfeasibleError`` when no partition passes the seeds' tests and
    ``ConfigError`` for bad arguments.
    """
    k, e = check_parameters(k, e)
    v = _as_values(values)
    n = len(v)
    prev_cell, prev_group = _previous_version(prev_cell, prev_group, n)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return KePlan(group=empty, cell=empty, sum_of_errors=0.0, groups=0, held_back=0)
    old, p = _old_partitions(prev_group)
    order = _sort_order(v, old, p)
    s = v[order]
    cost, start_of = _least_errors(s, old[order], p, k, e)
    if not math.isfinite(cost[n]):
        raise InfeasibleError(
            f"the seeds' incremental rule finds no partition of {n} records for k={k}, e={e:g}: "
            "every candidate run overlaps an old partition's range or breaks Definition 5 "
            f"against one of the {p} previous partitions; use policy 'merge' or 'defer'"
        )
    return _plan(s, order, prev_cell, _backtrack_starts(start_of))


def _previous_version(
    prev_cell: np.ndarray, prev_group: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """The checked ``prev_cell`` and ``prev_group``, which must agree on what was published."""
    prev_cell = as_ids(prev_cell, n, "prev_cell")
    prev_group = as_ids(prev_group, n, "prev_group")
    mismatch = (prev_cell >= 0) != (prev_group >= 0)
    if mismatch.any():
        raise ConfigError(
            f"prev_cell and prev_group disagree on whether {int(mismatch.sum())} records "
            f"were published (first at index {int(np.flatnonzero(mismatch)[0])})"
        )
    return prev_cell, prev_group


def _old_partitions(prev_group: np.ndarray) -> tuple[np.ndarray, int]:
    """Each record's old partition as a dense id 0..p-1 (-1: new), and p."""
    old_ids, old_inverse = np.unique(prev_group, return_inverse=True)
    old = np.where(prev_group >= 0, old_inverse - int(old_ids[0] < 0), -1)
    return old, int((old_ids >= 0).sum())


def _least_errors(
    s: np.ndarray, sg: np.ndarray, p: int, k: int, e: float
) -> tuple[np.ndarray, np.ndarray]:
    """The seeds' DP over sorted values ``s`` whose old partitions are ``sg``:
    ``cost[t]``, the least error of s[0..t-1] (inf: none passes the tests), and
    ``start_of[t]``, the start of the last run of that partition."""
    n = len(s)
    inside = _interior(s, sg, p)
    chg = _prefix_changes(s)
    # limit[i]: largest start j with s[j..i] (k,e)-valid (valid starts form a prefix), or -1.
    by_rank = np.searchsorted(chg, chg - (k - 1), side="right") - 1
    by_range = np.searchsorted(s, s - e, side="right") - 1
    limit = np.minimum(by_rank, by_range)

    cost = np.full(n + 1, np.inf)  # cost[t]: least error of s[0..t-1]
    cost[0] = 0.0
    start_of = np.zeros(n + 1, dtype=np.int64)
    candidate_start = ~inside  # a valid start also needs cost[j] finite, checked per i
    partitions: dict[int, _OldPartition] = {}
    for i in range(n):
        if inside[i] or limit[i] < 0:
            continue
        js = np.flatnonzero(candidate_start[: limit[i] + 1] & np.isfinite(cost[: limit[i] + 1]))
        if len(js) == 0:
            continue
        touched = np.unique(sg[js[0] : i + 1])
        ok = np.ones(len(js), dtype=bool)
        for o in touched[touched >= 0].tolist():
            if o not in partitions:
                partitions[o] = _OldPartition.build(sg == o, s)
            ok &= _definition5_ok(partitions[o], js, i, k, e)
            if not ok.any():
                break
        js = js[ok]
        if len(js) == 0:
            continue
        total = cost[js] + (s[i] - s[js])
        best = int(np.argmin(total))  # first minimum = smallest start, as in the seeds
        cost[i + 1] = total[best]
        start_of[i + 1] = js[best]
    return cost, start_of


def _backtrack_starts(start_of: np.ndarray) -> list[int]:
    """The starts of the optimal runs, ascending (backtracked from the end)."""
    starts = []
    end = len(start_of) - 1
    while end > 0:
        starts.append(int(start_of[end]))
        end = starts[-1]
    starts.reverse()
    return starts


def _plan(s: np.ndarray, order: np.ndarray, prev_cell: np.ndarray, starts: list[int]) -> KePlan:
    """The plan whose groups are the runs of sorted ``s`` beginning at ``starts``."""
    n = len(s)
    sorted_group = np.zeros(n, dtype=np.int64)
    sorted_group[starts[1:]] = 1
    sorted_group = np.cumsum(sorted_group)
    group = np.empty(n, dtype=np.int64)
    group[order] = sorted_group

    _, cell = np.unique(np.stack([group, prev_cell]), axis=1, return_inverse=True)
    bounds = np.r_[starts, n]
    errors = s[bounds[1:] - 1] - s[bounds[:-1]]
    return KePlan(
        group=group,
        cell=cell.reshape(-1).astype(np.int64),
        sum_of_errors=float(errors.sum()),
        groups=len(starts),
        held_back=0,
    )
