"""The bounds table of a (k,e) release: each group's sorted values, as runs.

A (k,e) release permutes S within each group, so each group's multiset of values is
public, and every interval answer over the release is built from a few order
statistics of it: the sum of the r smallest values, the sum of the r largest, the value
at rank r. The release stores them once, as ``sqlanon."<table>_bounds"``, so a query
looks them up instead of sorting the group.

One row per *run* (the ranks ``lo_rank..hi_rank`` that hold one distinct value of one
group) and per *block* of :data:`BLOCK` ranks the run overlaps; a run inside one block
has one row. With ``below`` the sum of the group's values ranked before the run:

- value at rank r = ``value`` of the row with ``block = (r - 1) // BLOCK`` and
  ``lo_rank <= r <= hi_rank`` (exactly one row);
- sum of the r smallest = ``below + (r - lo_rank + 1) * value`` on that row;
- sum of the r largest = ``total - (below + (t - lo_rank) * value)`` on the row of rank
  ``t = n - r + 1``.

Every row also carries its group's size ``n``, ``total``, ``vmin`` and ``vmax``, so a
query needs no per-group aggregate. The block key makes each lookup an equi-join with
at most :data:`BLOCK` candidate rows, however many distinct values a group holds; the
runs make the table small when values repeat (10^6 rows of the bundled benchmark fit in
about 24,000 rows).
"""

from __future__ import annotations

import numpy as np

#: Ranks per block of the lookup key.
BLOCK = 64

#: Column names, in table order.
COLUMNS: tuple[str, ...] = ("group_id", "block", "lo_rank", "hi_rank", "value", "below")
COLUMNS += ("n", "total", "vmin", "vmax")


def bounds_columns(values: np.ndarray, group: np.ndarray) -> dict[str, np.ndarray]:
    """The bounds table's rows as columns, for published values and their group ids.

    Sums are computed in ``values``' dtype (callers pass integers whose sums are exact
    there); rows come sorted by (group_id, block, lo_rank).
    """
    order = np.lexsort((values, group))
    v, g = values[order], group[order]
    size = len(v)
    if size == 0:
        return {name: np.zeros(0, dtype=v.dtype) for name in COLUMNS}
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
        "below": prefix[run_start[run]] - prefix[start],
        "n": group_size[grp],
        "total": prefix[end] - prefix[start],
        "vmin": v[start],
        "vmax": v[end - 1],
    }
