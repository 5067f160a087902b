"""The static optimum of the (k,e) model: the best single release of a set of values.

Pure numpy; no database import. The specification is Model 1 of ``shared/docs/MODELS.md``.

A group satisfies (k,e) when it holds at least ``k`` distinct values of the sensitive
attribute S and ``max(S) - min(S) >= e``. Both conditions only get easier when records are
added, so the optimum (minimum sum over groups of max - min) uses contiguous runs of the
sorted values, and the valid starts of a run ending at ``i`` form a prefix: a dynamic
programme with a running prefix minimum finds it in O(n) after the sort.

The incremental planner (:mod:`sqlanon.models.ke_incremental`, :mod:`sqlanon.models.ke_runs`)
reuses the sort (:class:`SortedValues`), the run bounds (:func:`run_starts`) and the optimum
itself as its yardstick (:func:`static_optimum_sorted`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sqlanon.errors import ConfigError, InfeasibleError
from sqlanon.models.ke_plan import check_parameters

__all__ = [
    "SortedValues",
    "as_values",
    "dense_ranks",
    "optimal_partition",
    "run_starts",
    "static_optimum",
    "static_optimum_sorted",
    "sum_of_errors",
    "unique_ids",
]


def as_values(values: np.ndarray) -> np.ndarray:
    """The sensitive values as a 1-D float array; refuses other shapes, types and NaN."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ConfigError(f"values must be a 1-D array; got shape {array.shape}")
    if array.dtype.kind not in "biuf":
        raise ConfigError(f"values must be numeric; got dtype {array.dtype}")
    array = array.astype(np.float64, copy=False)
    if np.isnan(array).any():
        raise ConfigError(
            f"the sensitive column has {int(np.isnan(array).sum())} NULL/NaN values; "
            "filter them out or fill them before releasing"
        )
    return array


def run_starts(ranks: np.ndarray, s: np.ndarray, last: np.ndarray, k: int, e: float) -> np.ndarray:
    """Largest start p with s[p..last] (k,e)-valid, for each index ``last``; -1 if none.

    ``s`` is sorted and ``ranks`` are its dense ranks, so s[p..last] holds
    ``ranks[last] - ranks[p] + 1`` distinct values; both conditions hold for every start
    up to a threshold: the last record of the largest distinct value allowed by each.
    """
    ends = np.flatnonzero(np.append(ranks[1:] != ranks[:-1], True))  # last index per rank
    distinct = s[ends]
    rank = ranks[last]
    by_rank = rank - (k - 1)
    by_range = np.searchsorted(distinct, distinct - e, side="right")[rank] - 1
    first = np.minimum(by_rank, by_range)
    return np.where(first >= 0, ends[np.maximum(first, 0)], -1)


def dense_ranks(s: np.ndarray) -> np.ndarray:
    """Dense ranks of sorted ``s``: 0 for its least value, one more at each change."""
    ranks = np.zeros(len(s), dtype=np.int64)
    if len(s) > 1:
        ranks[1:] = np.cumsum(s[1:] != s[:-1])
    return ranks


def _infeasible_message(s: np.ndarray, k: int, e: float, what: str) -> str:
    """Why sorted ``s`` cannot form even one (k,e)-valid group."""
    distinct = len(np.unique(s))
    if distinct < k:
        return (
            f"k={k} needs {k} distinct values of the sensitive column; {what} has {distinct}. "
            "Lower k or add records"
        )
    spread = float(s[-1] - s[0])
    return (
        f"e={e:g} needs a range of at least {e:g} in the sensitive column; {what} spans "
        f"{spread:g}. Lower e or add records"
    )


#: A block of the static DP shorter than this runs element by element: numpy's per-call
#: overhead would cost more than the loop.
_SHORT_BLOCK = 32


def _sorted_partition(s: np.ndarray, ranks: np.ndarray, k: int, e: float) -> np.ndarray:
    """Optimal run boundaries of sorted ``s``: starts of the runs, ascending, first is 0.

    f[i] = optimal cost of s[0..i-1]; a run s[j..i-1] costs s[i-1] - s[j], so
    f[i] = s[i-1] + min_{j <= J(i)} (f[j] - s[j]). The caller has checked that ``s`` as a
    whole is valid, so J(n) >= 0 and the backtrack from n reaches 0.
    """
    n = len(s)
    # limit[i] = J(i+1): largest valid start of a run whose last element is s[i], -1 if none.
    limit = run_starts(ranks, s, np.arange(n), k, e)
    step = np.empty(n, dtype=np.float64)  # f[i] - s[i] = step[i] + best[J(i)] for i >= 1
    step[0] = 0.0
    step[1:] = s[:-1] - s[1:]
    long_starts = _long_block_starts(limit, _SHORT_BLOCK)
    arg: Sequence[int] | np.ndarray
    if 2 * len(long_starts) < n:
        arg = _best_starts_loop(s, limit, step)
    else:
        arg = _best_starts_blocked(s, limit, step, long_starts)
    starts = []
    end = n
    while end > 0:
        start = arg[limit[end - 1]]
        starts.append(start)
        end = start
    starts.reverse()
    return np.asarray(starts, dtype=np.int64)


def _long_block_starts(limit: np.ndarray, size: int) -> np.ndarray:
    """The p >= 1 whose block (see ``_best_starts_blocked``) holds at least ``size``
    entries: all of p..p+size-1 read entries before p, i.e. limit[p + size - 2] < p."""
    p = np.arange(1, max(len(limit) - size + 2, 1))
    return p[limit[p + size - 2] < p]


def _best_starts_loop(s: np.ndarray, limit: np.ndarray, step: np.ndarray) -> list[int]:
    """arg[j] = the first j' <= j minimising f[j'] - s[j'], as a plain loop.

    best[j] = min_{j' <= j} (f[j'] - s[j']) and f[i] - s[i] = best[J(i)] + step[i].
    arg[-1] (read for "no valid start", limit -1) is 0 and never chosen.
    """
    n = len(s)
    # best[n] is never written and stays +inf: "no valid start" (limit -1) reads it.
    limit_list = np.where(limit < 0, n, limit).tolist()
    step_list = step.tolist()
    best = [math.inf] * (n + 1)
    arg = [0] * (n + 1)
    current = -float(s[0])
    current_arg = 0
    best[0] = current
    for i in range(1, n):
        candidate = best[limit_list[i - 1]] + step_list[i]
        if candidate < current:
            current = candidate
            current_arg = i
        best[i] = current
        arg[i] = current_arg
    return arg


def _best_starts_blocked(
    s: np.ndarray, limit: np.ndarray, step: np.ndarray, long_starts: np.ndarray
) -> np.ndarray:
    """``_best_starts_loop`` by blocks: the same floating-point operations, same result.

    J is nondecreasing and J(i) < i, so for every i in a block p..q-1 with J(q - 1) < p
    the candidates best[J(i)] + step[i] read only finished entries: the block is one
    gather, one add and one running minimum. ``long_starts`` lists the p whose block holds
    at least ``_SHORT_BLOCK`` entries (long where runs hold many records, as with many
    duplicates); between them the entries are computed one by one.
    """
    n = len(s)
    reads = np.where(limit < 0, n, limit)
    best = np.full(n + 1, math.inf)
    arg = np.zeros(n + 1, dtype=np.int64)
    best[0] = -float(s[0])
    i = 1
    while i < n:
        at = int(np.searchsorted(long_starts, i))
        stop = int(long_starts[at]) if at < len(long_starts) else n
        if stop > i:
            current, current_arg = best.item(i - 1), arg.item(i - 1)
            done: list[float] = []  # best[i..j-1]
            args: list[int] = []
            for j, read, add in zip(
                range(i, stop), reads[i - 1 : stop - 1].tolist(), step[i:stop].tolist(), strict=True
            ):
                candidate = (done[read - i] if i <= read < stop else best.item(read)) + add
                if candidate < current:
                    current, current_arg = candidate, j
                done.append(current)
                args.append(current_arg)
            best[i:stop] = done
            arg[i:stop] = args
            i = stop
            continue
        end = min(int(np.searchsorted(limit, i, side="left")) + 1, n)  # first reading i
        candidate = best[reads[i - 1 : end - 1]] + step[i:end]
        running = np.minimum.accumulate(np.concatenate(([best[i - 1]], candidate)))
        improved = candidate < running[:-1]
        best[i:end] = running[1:]
        arg[i:end] = np.maximum.accumulate(np.where(improved, np.arange(i, end), arg[i - 1]))
        i = end
    return arg


def optimal_partition(values: np.ndarray, k: int, e: float) -> np.ndarray:
    """Partition records into (k,e)-valid groups minimising the sum of (max - min).

    Returns the group id of every record (int64, same order as ``values``); ids 0..g-1 are
    numbered in ascending value order. O(n log n) for the sort, O(n) for the DP.

    >>> optimal_partition(np.array([5, 1, 2, 9, 8]), k=2, e=1).tolist()
    [1, 0, 0, 1, 1]

    Raises ``InfeasibleError`` when the data has fewer than ``k`` distinct values or a range
    below ``e``, and ``ConfigError`` for a bad ``k``, ``e`` or NaN values.
    """
    k, e = check_parameters(k, e)
    v = as_values(values)
    if len(v) == 0:
        return np.zeros(0, dtype=np.int64)
    return _optimal_groups(SortedValues.of(v), k, e)


@dataclass(frozen=True)
class SortedValues:
    """Values sorted once (stable: equal values keep record order), shared by the static
    optimum and the planner."""

    order: np.ndarray  # record index at each sorted position
    s: np.ndarray  # the values in sorted order
    ranks: np.ndarray  # dense ranks of ``s``

    @staticmethod
    def of(v: np.ndarray) -> SortedValues:
        """The same ``order`` as ``np.argsort(v, kind="stable")``, about twice as fast:
        an unstable sort gives the dense ranks, then one sort of the integer keys
        (rank, record index) puts equal values back in record order."""
        n = len(v)
        if n > 2**31:  # rank * n + index would not fit in 63 bits
            order = np.argsort(v, kind="stable")
            return SortedValues(order=order, s=v[order], ranks=dense_ranks(v[order]))
        unstable = np.argsort(v)
        ranks = dense_ranks(v[unstable])
        key = np.empty(n, dtype=np.int64)
        key[unstable] = ranks * n
        key += np.arange(n)
        key.sort()
        order = key % n
        return SortedValues(order=order, s=v[order], ranks=ranks)

    def feasible(self, k: int, e: float) -> bool:
        return bool(self.ranks[-1] + 1 >= k and self.s[-1] - self.s[0] >= e)


def _optimal_groups(data: SortedValues, k: int, e: float) -> np.ndarray:
    """``optimal_partition`` of non-empty values already sorted."""
    s = data.s
    if not data.feasible(k, e):
        raise InfeasibleError(_infeasible_message(s, k, e, "the data"))
    starts = _sorted_partition(s, data.ranks, k, e)
    sorted_group = np.zeros(len(s), dtype=np.int64)
    sorted_group[starts[1:]] = 1
    sorted_group = np.cumsum(sorted_group)
    group = np.empty(len(s), dtype=np.int64)
    group[data.order] = sorted_group
    return group


def sum_of_errors(values: np.ndarray, group: np.ndarray) -> float:
    """Sum over groups of (max - min) of ``values``; records with group -1 are ignored."""
    v = as_values(values)
    g = np.asarray(group, dtype=np.int64)
    if g.shape != v.shape:
        raise ConfigError(f"values and group differ in length: {len(v)} and {len(g)}")
    keep = g >= 0
    if not keep.any():
        return 0.0
    v, g = v[keep], g[keep]
    ids, inverse = unique_ids(g)
    low = np.full(len(ids), np.inf)
    high = np.full(len(ids), -np.inf)
    np.minimum.at(low, inverse, v)
    np.maximum.at(high, inverse, v)
    return float((high - low).sum())


def unique_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(ids, return_inverse=True)`` for ids >= 0, by a lookup table when the ids
    span little more than their count (group and cell ids are dense): O(n), no sort."""
    if len(ids) == 0 or int(ids.max()) >= 4 * len(ids) + 1024:
        return np.unique(ids, return_inverse=True)
    present = np.bincount(ids) > 0
    unique = np.flatnonzero(present)
    if len(unique) == len(present):
        return unique, ids
    return unique, (np.cumsum(present) - 1)[ids]


def static_optimum(values: np.ndarray, k: int, e: float) -> float | None:
    """The sum of errors of ``optimal_partition(values, k, e)``, None when infeasible:
    no (k,e)-valid partition of these values has a smaller one."""
    k, e = check_parameters(k, e)
    return static_optimum_sorted(SortedValues.of(as_values(values)), k, e)


def static_optimum_sorted(data: SortedValues, k: int, e: float) -> float | None:
    """``sum_of_errors(v, optimal_partition(v))`` (the same float: the same spans summed in
    the same order), None when infeasible."""
    if not data.feasible(k, e):
        return None
    s = data.s
    starts = _sorted_partition(s, data.ranks, k, e)
    ends = np.append(starts[1:], len(s))
    return float((s[ends - 1] - s[starts]).sum())
