"""The seeds' naive baseline for incremental (k,e) releases (bench only: not a product path).

Seed 000 (section 6) compares its algorithm with "a naive re-applying algorithm that
re-applies the existing static algorithm [the (k,e) DP] ... for each considered partition
of the dataset to be released D_n, the (k,e)-Anonymous condition is evaluated. If it
satisfies the condition, then the partition is considered for any incremental privacy
breach ... against all of the released datasets. If such a partition has an incremental
privacy breach with at least one of the released datasets, then the current partition
can be discarded ... the algorithm must compute the difference and the intersection
results between the current considered partition and each partition for each released
dataset."

So :func:`plan_naive` runs the seeds' DP over D_n sorted by S (ties as
``sqlanon.models.ke_paper`` orders them) and keeps a candidate run only when it is
(k,e)-valid and passes Definition 5 (G ∩ O, G - O and O - G each (k,e)-valid when not
empty) against every partition O of **every** earlier release; there is no overlap
shortcut (Lemma 1), which is the seeds' optimisation. It also counts, for the seeds'
"percentage of discarded rounds" (Fig. 22), how many (k,e)-valid candidate runs the
overlap shortcut would discard without a Definition 5 computation against the last
release.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from sqlanon.models.ke_paper import (  # the seeds' own pieces: their tie order and tests
    _definition5_ok,
    _interior,
    _OldPartition,
    _prefix_changes,
    _sort_order,
)


@dataclass(frozen=True)
class NaivePlan:
    group: np.ndarray  # per record, 0..g-1 (every record is published, as in the seeds)
    sum_of_errors: float
    candidates: int  # (k,e)-valid candidate runs considered
    discardable: int  # of those, runs the seeds' overlap shortcut would discard
    seconds: float


def plan_naive(
    values: np.ndarray, history: list[np.ndarray], k: int, e: float, *, overlap: bool = False
) -> NaivePlan | None:
    """Plan D_n (``values``: every record so far) against every earlier release
    (``history``: each release's group per record, -1 absent, records beyond its length
    absent); None when no partition passes (the seeds give no answer then).

    ``overlap``: also refuse a run that overlaps (Lemma 1) a partition of any earlier
    release, the seeds' breach condition, so that the only difference from their
    algorithm is that every release is checked, not only the last one."""
    start = time.perf_counter()
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    releases = [np.r_[g, np.full(n - g.size, -1)].astype(np.int64) for g in history]
    last = releases[-1] if releases else np.full(n, -1, dtype=np.int64)
    ids, inverse = np.unique(last, return_inverse=True)
    old = np.where(last >= 0, inverse - int(ids[0] < 0), -1)
    p = int((ids >= 0).sum())
    order = _sort_order(v, old, p)
    s = v[order]
    inside = _interior(s, old[order], p)  # only for counting what the shortcut discards
    chg = _prefix_changes(s)
    by_rank = np.searchsorted(chg, chg - (k - 1), side="right") - 1
    by_range = np.searchsorted(s, s - e, side="right") - 1
    limit = np.minimum(by_rank, by_range)
    # every partition of every earlier release, over positions in the sorted D_n
    partitions: list[tuple[np.ndarray, _OldPartition]] = []
    blocked = np.zeros(n, dtype=bool)  # ends or starts strictly inside an old range
    for g in releases:
        sg = g[order]
        if overlap:
            blocked |= _interior(s, sg, int(g.max()) + 1 if (g >= 0).any() else 0)
        for o in np.unique(sg[sg >= 0]).tolist():
            member = sg == o
            partitions.append((member, _OldPartition.build(member, s)))
    cost = np.full(n + 1, np.inf)
    cost[0] = 0.0
    start_of = np.zeros(n + 1, dtype=np.int64)
    candidates = discardable = 0
    for i in range(n):
        if limit[i] < 0:
            continue
        js = np.flatnonzero(np.isfinite(cost[: limit[i] + 1]))
        if js.size == 0:
            continue
        candidates += js.size
        discardable += int(js.size if inside[i] else inside[js].sum())
        if overlap:
            if blocked[i]:
                continue
            js = js[~blocked[js]]
            if js.size == 0:
                continue
        ok = np.ones(js.size, dtype=bool)
        for member, part in partitions:
            if not member[js[0] : i + 1].any():
                continue
            ok &= _definition5_ok(part, js, i, k, e)
            if not ok.any():
                break
        js = js[ok]
        if js.size == 0:
            continue
        total = cost[js] + (s[i] - s[js])
        best = int(np.argmin(total))
        cost[i + 1] = total[best]
        start_of[i + 1] = js[best]
    if not np.isfinite(cost[n]):
        return None
    starts = []
    end = n
    while end > 0:
        starts.append(int(start_of[end]))
        end = starts[-1]
    starts.reverse()
    sorted_group = np.zeros(n, dtype=np.int64)
    sorted_group[starts[1:]] = 1
    group = np.empty(n, dtype=np.int64)
    group[order] = np.cumsum(sorted_group)
    return NaivePlan(
        group=group,
        sum_of_errors=float(cost[n]),
        candidates=candidates,
        discardable=discardable,
        seconds=time.perf_counter() - start,
    )
