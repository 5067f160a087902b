"""The bounds table of a (k,e) release: each group's sorted values, as runs.

A (k,e) release permutes S within each group, so each group's multiset of values is
public, and every interval answer over the release is built from a few order
statistics of it: the sum of the r smallest values, the sum of the r largest, the value
at rank r. The release stores them once, as ``sqlanon."<table>_bounds"``, so a query
looks them up instead of sorting the group.

The table ranks each group's values twice: ascending (``descending`` false) and
descending (true). In each direction, one row per *run* (the ranks
``lo_rank..hi_rank`` that hold one distinct value of one group) and per *block* of
:data:`BLOCK` ranks the run overlaps; a run inside one block has one row. With
``prior_sum`` the sum of the values ranked before the run in that direction, the lookup
of rank r is the row with ``block = (r - 1) // BLOCK`` and ``lo_rank <= r <= hi_rank``
(exactly one per direction), and on it

- ``value`` is the value at rank r (the r-th smallest, or the r-th largest);
- ``prior_sum + (r - lo_rank + 1) * value`` is the sum of the r smallest (r largest).

So one equi-join on (group_id, block) at rank m gives both ends of a SUM over m
records. Every row also carries its group's size ``n``, ``total``, ``vmin`` and
``vmax``, so a query needs no per-group aggregate. The block key bounds each lookup to
at most :data:`BLOCK` candidate rows however many distinct values a group holds; the
runs make the table small when values repeat (the 10^6 rows of the benchmark release
need 47,503 rows).
"""

from __future__ import annotations

import numpy as np

#: Ranks per block of the lookup key.
BLOCK = 64

#: Column names, in table order.
COLUMNS: tuple[str, ...] = ("group_id", "descending", "block", "lo_rank", "hi_rank", "value")
COLUMNS += ("prior_sum", "n", "total", "vmin", "vmax")


def bounds_columns(values: np.ndarray, group: np.ndarray) -> dict[str, np.ndarray]:
    """The bounds table's rows as columns, for published values and their group ids.

    Sums are computed in ``values``' dtype (callers pass integers whose sums are exact
    there); ascending rows first, each direction sorted by (group_id, block, lo_rank).
    """
    order = np.lexsort((values, group))
    v, g = values[order], group[order]
    up = _ascending(v, g)
    down = _ascending(-v[_reversed_within_groups(g)], g)  # descending = ascending of -S
    for name in ("value", "prior_sum", "total"):
        down[name] = -down[name]
    down["vmin"], down["vmax"] = -down["vmax"], -down["vmin"]
    up["descending"] = np.zeros(len(up["value"]), dtype=bool)
    down["descending"] = np.ones(len(down["value"]), dtype=bool)
    return {name: np.concatenate([up[name], down[name]]) for name in COLUMNS}


def _reversed_within_groups(g: np.ndarray) -> np.ndarray:
    """Indices that reverse each run of equal ids of sorted ``g``, keeping runs in place."""
    if len(g) == 0:
        return np.zeros(0, dtype=np.int64)
    new_group = np.r_[True, g[1:] != g[:-1]]
    start = np.flatnonzero(new_group)
    end = np.r_[start[1:], len(g)]
    of = np.cumsum(new_group) - 1
    result: np.ndarray = start[of] + end[of] - 1 - np.arange(len(g))
    return result


def _ascending(v: np.ndarray, g: np.ndarray) -> dict[str, np.ndarray]:
    """The ascending rows (no ``descending`` column) of values sorted by (group, value)."""
    size = len(v)
    if size == 0:
        return {name: np.zeros(0, dtype=v.dtype) for name in COLUMNS if name != "descending"}
    new_group = np.r_[True, g[1:] != g[:-1]]
    new_run = new_group | np.r_[True, v[1:] != v[:-1]]
    group_start = np.flatnonzero(new_group)
    group_size = np.diff(np.r_[group_start, size])
    group_of = np.cumsum(new_group) - 1
    rank = np.arange(size) - group_start[group_of] + 1
    block = (rank - 1) // BLOCK
    new_row = new_run | np.r_[True, block[1:] != block[:-1]]
    run_start = np.flatnonzero(new_run)
    run_size = np.diff(np.r_[run_start, size])
    run_of = np.cumsum(new_run) - 1
    prefix = np.r_[np.zeros(1, dtype=v.dtype), np.cumsum(v)]

    rows = np.flatnonzero(new_row)
    run, grp = run_of[rows], group_of[rows]
    start, end = group_start[grp], group_start[grp] + group_size[grp]
    lo = rank[run_start[run]]
    return {
        "group_id": g[rows],
        "block": block[rows],
        "lo_rank": lo,
        "hi_rank": lo + run_size[run] - 1,
        "value": v[rows],
        "prior_sum": prefix[run_start[run]] - prefix[start],
        "n": group_size[grp],
        "total": prefix[end] - prefix[start],
        "vmin": v[start],
        "vmax": v[end - 1],
    }
