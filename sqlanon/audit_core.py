"""The attacker of a (k,e) release family, replayed over its history. Pure numpy.

The attacker holds every release of the family. Quasi-identifiers are published exactly,
so the worst case is assumed: the attacker links a record across versions. For each
version the audit runs three checks, each naming the records it exposes:

- ``cell`` (MODELS.md, the rule sqlanon enforces): a record's history is its group in
  every version so far (and its absence from versions after its first); records with the
  same history form a cell; a cell whose values hold fewer than ``k`` distinct values or
  span less than ``e`` exposes its records. Cells only split over time and a part of a
  failing multiset fails too, so a record this check flags stays flagged.
- ``pairwise`` (the seeds' Definition 5, between consecutive versions): for each new group
  ``G`` and each group ``O`` of the previous version sharing records, the records of
  ``G ∩ O``, ``G - O`` and ``O - G`` must each satisfy (k,e) when non-empty; the records of
  a failing part are exposed.
- ``subtraction``: from each new group ``G`` the attacker subtracts known record sets that
  lie wholly inside it and are pairwise disjoint: groups of earlier versions and the
  remainders earlier subtractions left (newest version first, a version's groups before
  its remainders, a set skipped when it meets one already taken). The multiset of what
  remains is then known exactly, and must satisfy (k,e). This is one sound attack (it only
  reports records whose candidate values really fail (k,e)), not the strongest one.

A history whose cells all satisfy (k,e) passes all three: every part the other checks
look at is a union of cells.

Exposure is cumulative knowledge: ``VersionAudit.exposed_keys`` lists every record exposed
at this version or an earlier one, ``newly_exposed_keys`` those first exposed here, and
``keys_by_check`` what each check flags when run on the releases up to this version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sqlanon.errors import ConfigError
from sqlanon.models.ke import _check_parameters

__all__ = ["CHECKS", "KeVersion", "VersionAudit", "audit_ke_history"]

CHECKS = ("cell", "pairwise", "subtraction")


@dataclass(frozen=True)
class KeVersion:
    """One published version: its records' keys, group ids and true sensitive values."""

    version: int
    keys: np.ndarray
    group: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class VersionAudit:
    """What the attacker learns once ``version`` is out.

    ``exposed``/``exposed_keys``: distinct records exposed at this version or before;
    ``newly_exposed``/``newly_exposed_keys``: first exposed at this version;
    ``by_check``/``keys_by_check``: records each check flags on the releases so far.
    Keys are sorted strings.
    """

    version: int
    exposed: int
    newly_exposed: int
    by_check: dict[str, int]
    exposed_keys: tuple[str, ...]
    newly_exposed_keys: tuple[str, ...]
    keys_by_check: dict[str, tuple[str, ...]]


# ------------------------------------------------------------------------- grouped stats


def _dense(*columns: np.ndarray) -> np.ndarray:
    """Dense ids 0..m-1 of the rows of equal-length non-negative int64 columns."""
    if len(columns[0]) == 0:
        return np.zeros(0, dtype=np.int64)
    ids = columns[0]
    for column in columns[1:]:
        ids = np.unique(ids, return_inverse=True)[1].reshape(-1).astype(np.int64)
        ids = ids * (int(column.max()) + 1) + column
    return np.unique(ids, return_inverse=True)[1].reshape(-1).astype(np.int64)


@dataclass(frozen=True)
class _Stats:
    """Per label (dense 0..m-1): record count, distinct values, min and max."""

    count: np.ndarray
    distinct: np.ndarray
    low: np.ndarray
    high: np.ndarray

    def fails(self, k: int, e: float) -> np.ndarray:
        return (self.count > 0) & ((self.distinct < k) | (self.high - self.low < e))


def _stats(labels: np.ndarray, values: np.ndarray, m: int) -> _Stats:
    """Stats of ``values`` grouped by dense ``labels`` in 0..m-1 (absent labels: count 0)."""
    order = np.lexsort((values, labels))
    lab = labels[order]
    x = values[order]
    count = np.bincount(lab, minlength=m)
    low = np.full(m, np.inf)
    high = np.full(m, -np.inf)
    if len(lab):
        first = np.r_[True, lab[1:] != lab[:-1]]
        last = np.r_[lab[1:] != lab[:-1], True]
        low[lab[first]] = x[first]
        high[lab[last]] = x[last]
        new_value = first | np.r_[True, x[1:] != x[:-1]]
        distinct = np.bincount(lab[new_value], minlength=m)
    else:
        distinct = np.zeros(m, dtype=np.int64)
    return _Stats(count, distinct, low, high)


def _failing(labels: np.ndarray, values: np.ndarray, k: int, e: float) -> np.ndarray:
    """Records (label >= 0) whose label's set of values fails (k,e)."""
    member = labels >= 0
    out = np.zeros(len(labels), dtype=bool)
    if not member.any():
        return out
    dense = np.unique(labels[member], return_inverse=True)[1].reshape(-1)
    fails = _stats(dense, values[member], int(dense.max()) + 1).fails(k, e)
    out[member] = fails[dense]
    return out


# ---------------------------------------------------------------------------- the checks


def _cell_ids(previous: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Cells after this version: dense (previous cell, group or absent); -1 = unpublished."""
    seen = (previous >= 0) | (group >= 0)
    cell = np.full(len(group), -1, dtype=np.int64)
    cell[seen] = _dense(previous[seen] + 1, group[seen] + 1)
    return cell


def _rest_fails(
    outer: np.ndarray, part: np.ndarray, values: np.ndarray, k: int, e: float
) -> np.ndarray:
    """Records exposed because ``X - Y`` fails, for X a group of ``outer`` and Y a group of
    ``part`` that share records (``part`` -1: the record is not in the other version).

    ``X - Y`` is the union of X's parts other than Y; its distinct values are X's minus the
    values found only in part Y, and its min/max come from the two smallest part minima and
    the two largest part maxima of X.
    """
    out = np.zeros(len(outer), dtype=bool)
    member = outer >= 0
    if not member.any():
        return out
    x = np.unique(outer[member], return_inverse=True)[1].reshape(-1).astype(np.int64)
    y = part[member]
    v = values[member]
    value_id = np.unique(v, return_inverse=True)[1].reshape(-1).astype(np.int64)
    pair = _dense(x, y + 1)
    n_pairs = int(pair.max()) + 1
    pair_x = np.zeros(n_pairs, dtype=np.int64)
    pair_y = np.zeros(n_pairs, dtype=np.int64)
    pair_x[pair] = x
    pair_y[pair] = y

    x_stats = _stats(x, v, int(x.max()) + 1)
    pair_stats = _stats(pair, v, n_pairs)
    # Values of X found only in part Y: count in (X, Y, value) equals count in (X, value).
    xv = _dense(x, value_id)
    pv = _dense(pair, value_id)
    xv_count = np.bincount(xv)
    pv_count = np.bincount(pv)
    pv_pair = np.zeros(len(pv_count), dtype=np.int64)
    pv_xv = np.zeros(len(pv_count), dtype=np.int64)
    pv_pair[pv] = pair
    pv_xv[pv] = xv
    only_here = pv_count == xv_count[pv_xv]
    exclusive = np.bincount(pv_pair[only_here], minlength=n_pairs)

    rest_count = x_stats.count[pair_x] - pair_stats.count
    rest_distinct = x_stats.distinct[pair_x] - exclusive
    rest_low = _leave_one_out(pair_x, pair_stats.low, smallest=True)
    rest_high = _leave_one_out(pair_x, pair_stats.high, smallest=False)
    fails = (pair_y >= 0) & (rest_count > 0) & ((rest_distinct < k) | (rest_high - rest_low < e))

    # A record of X is exposed by a failing pair (X, Y) unless it lies in Y itself.
    n_x = int(x.max()) + 1
    failing_count = np.bincount(pair_x[fails], minlength=n_x)
    failing_y = np.full(n_x, -2, dtype=np.int64)
    failing_y[pair_x[fails]] = pair_y[fails]
    exposed = (failing_count[x] >= 2) | ((failing_count[x] == 1) & (failing_y[x] != y))
    out[member] = exposed
    return out


def _leave_one_out(owner: np.ndarray, value: np.ndarray, smallest: bool) -> np.ndarray:
    """For each item, the min (or max) of ``value`` over the other items of its owner."""
    key = value if smallest else -value
    order = np.lexsort((key, owner))
    o = owner[order]
    first = np.r_[True, o[1:] != o[:-1]]
    first_index = np.maximum.accumulate(np.where(first, np.arange(len(o)), 0))
    second_index = np.minimum(first_index + 1, len(o) - 1)
    has_second = (first_index + 1 < len(o)) & (o[second_index] == o)
    best = key[order][first_index]
    runner_up = np.where(has_second, key[order][second_index], np.inf)
    sorted_result = np.where(first, runner_up, best)
    result = np.empty(len(o))
    result[order] = sorted_result
    return result if smallest else -result


def _pairwise(
    previous: np.ndarray, group: np.ndarray, values: np.ndarray, k: int, e: float
) -> np.ndarray:
    both = (previous >= 0) & (group >= 0)
    exposed = np.zeros(len(group), dtype=bool)
    if both.any():
        both_ids = np.where(both, 0, -1)
        both_ids[both] = _dense(group[both], previous[both])
        exposed |= _failing(both_ids, values, k, e)
    exposed |= _rest_fails(group, previous, values, k, e)
    exposed |= _rest_fails(previous, group, values, k, e)
    return exposed


def _subtraction(
    group: np.ndarray, known: list[np.ndarray], values: np.ndarray, k: int, e: float
) -> tuple[np.ndarray, np.ndarray]:
    """Records exposed by subtraction, and the remainders (labels) it leaves as known sets.

    ``known``: label arrays (-1 = outside), each a family of disjoint known sets, in the
    order the attacker tries them.
    """
    taken = np.zeros(len(group), dtype=bool)
    for labels in known:
        member = labels >= 0
        if not member.any():
            continue
        lab = labels[member]
        size = int(lab.max()) + 1
        target = group[member]
        low = np.full(size, np.iinfo(np.int64).max)
        high = np.full(size, -2, dtype=np.int64)
        np.minimum.at(low, lab, target)
        np.maximum.at(high, lab, target)
        clash = np.bincount(lab[taken[member]], minlength=size) > 0
        inside = (low == high) & (low >= 0) & ~clash
        taken[member] |= inside[lab]
    published = group >= 0
    remainder = np.where(published & ~taken, group, -1)
    exposed = _failing(remainder, values, k, e)
    # Only a group that lost something leaves a new known set.
    touched = np.zeros(int(group.max()) + 2, dtype=bool)
    touched[group[published & taken]] = True
    remainder[~touched[np.maximum(remainder, 0)]] = -1
    return exposed, remainder


# ------------------------------------------------------------------------------ the audit


def _columns(version: KeVersion) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    keys = np.asarray(version.keys).astype(str)
    group = np.asarray(version.group)
    values = np.asarray(version.values)
    n = len(keys)
    if keys.ndim != 1 or group.shape != (n,) or values.shape != (n,):
        raise ConfigError(
            f"version {version.version}: keys, group and values must be 1-D of one length; "
            f"got {keys.shape}, {group.shape}, {values.shape}"
        )
    if n and group.dtype.kind not in "iu":
        raise ConfigError(f"version {version.version}: group ids must be integers")
    group = group.astype(np.int64)
    if (group < 0).any():
        raise ConfigError(
            f"version {version.version}: {int((group < 0).sum())} published records have a "
            "negative group id; pass only published records"
        )
    if n and values.dtype.kind not in "biuf":
        raise ConfigError(f"version {version.version}: values must be numeric")
    values = values.astype(np.float64)
    if not np.isfinite(values).all():
        raise ConfigError(f"version {version.version}: values hold NaN or infinite entries")
    unique, counts = np.unique(keys, return_counts=True)
    if (counts > 1).any():
        raise ConfigError(
            f"version {version.version}: key {unique[counts > 1][0]!r} is published "
            f"{int(counts.max())} times; keys must identify records"
        )
    return keys, group, values


def audit_ke_history(history: Sequence[KeVersion], k: int, e: float) -> list[VersionAudit]:
    """Replay the attacker over ``history`` (oldest first); one ``VersionAudit`` per version.

    Raises ``ConfigError`` for malformed versions, versions out of order, or a record
    whose true value differs between versions (the cell model assumes S never changes).
    """
    k, e = _check_parameters(k, e, min_k=1)
    columns = [_columns(version) for version in history]
    numbers = [int(version.version) for version in history]
    if any(b <= a for a, b in zip(numbers, numbers[1:], strict=False)):
        raise ConfigError(f"versions must be strictly increasing; got {numbers}")
    if not columns:
        return []
    all_keys, record = np.unique(np.concatenate([c[0] for c in columns]), return_inverse=True)
    record = record.reshape(-1)
    n = len(all_keys)
    values = np.full(n, np.nan)
    offset = 0
    placed: list[tuple[np.ndarray, np.ndarray]] = []
    for (keys, group, vals), number in zip(columns, numbers, strict=True):
        idx = record[offset : offset + len(keys)]
        offset += len(keys)
        seen = ~np.isnan(values[idx])
        changed = seen & (values[idx] != vals)
        if changed.any():
            raise ConfigError(
                f"version {number}: record {keys[changed][0]!r} has S={vals[changed][0]:g}, "
                f"published earlier as {values[idx][changed][0]:g}; the audit assumes S is "
                "fixed per record"
            )
        values[idx] = vals
        dense_group = np.unique(group, return_inverse=True)[1].reshape(-1).astype(np.int64)
        placed.append((idx, dense_group))

    audits: list[VersionAudit] = []
    exposed_so_far = np.zeros(n, dtype=bool)
    cell = np.full(n, -1, dtype=np.int64)
    previous: np.ndarray | None = None
    known: list[np.ndarray] = []  # newest first: groups, then remainders, per version
    for number, (idx, dense_group) in zip(numbers, placed, strict=True):
        group = np.full(n, -1, dtype=np.int64)
        group[idx] = dense_group
        cell = _cell_ids(cell, group)
        flags = {"cell": _failing(cell, values, k, e)}
        flags["pairwise"] = (
            _pairwise(previous, group, values, k, e)
            if previous is not None
            else np.zeros(n, dtype=bool)
        )
        flags["subtraction"], remainder = _subtraction(group, known, values, k, e)
        known = [group, remainder, *known]
        previous = group

        now = flags["cell"] | flags["pairwise"] | flags["subtraction"]
        newly = now & ~exposed_so_far
        exposed_so_far |= now
        audits.append(
            VersionAudit(
                version=number,
                exposed=int(exposed_so_far.sum()),
                newly_exposed=int(newly.sum()),
                by_check={name: int(flags[name].sum()) for name in CHECKS},
                exposed_keys=tuple(all_keys[exposed_so_far].tolist()),
                newly_exposed_keys=tuple(all_keys[newly].tolist()),
                keys_by_check={name: tuple(all_keys[flags[name]].tolist()) for name in CHECKS},
            )
        )
    return audits
