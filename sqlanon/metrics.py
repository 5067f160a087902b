"""Utility metrics of a generalized release, exactly as ``MODELS.md`` defines them.

- precision loss = (sum over published records and QI of level/height
  + |Gamma| per suppressed record) / (|D| * |Gamma|), in [0, 1];
- discernibility DM = sum over classes of |class|^2 + |D| per suppressed record;
- query relative error = |estimate - true| / |true|;
- (k,e) error ratio = a release's sum of errors / the static optimum of the rows it
  published (:func:`error_ratio`).

|D| counts every candidate record of the release, published or suppressed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sqlanon.errors import ConfigError


def precision_loss(
    levels: np.ndarray,
    heights: Sequence[int],
    suppressed: int,
    weights: np.ndarray | None = None,
) -> float:
    """Precision loss of a release.

    ``levels`` has one row per *published* record and one column per published QI (the
    hierarchy level it was published at); ``heights`` the hierarchy height of each QI.
    With ``weights``, row i stands for ``weights[i]`` records.

    >>> precision_loss(np.array([[0, 1], [2, 1]]), [2, 1], suppressed=1)
    0.6666666666666666
    """
    table = np.asarray(levels, dtype=np.float64)
    gamma = len(heights)
    if table.ndim != 2 or table.shape[1] != gamma:
        raise ConfigError(f"levels must have one column per QI ({gamma}), got shape {table.shape}")
    if gamma == 0:
        raise ConfigError("precision loss needs at least one QI")
    h = np.asarray(heights, dtype=np.float64)
    if np.any(h <= 0):
        raise ConfigError(f"hierarchy heights must be positive, got {list(heights)}")
    if suppressed < 0:
        raise ConfigError(f"suppressed must be >= 0, got {suppressed}")
    w = np.ones(table.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (table.shape[0],):
        raise ConfigError(f"weights must have one entry per row of levels, got {w.shape}")
    total = float(w.sum()) + suppressed
    if total == 0:
        return 0.0
    loss = float(((table / h).sum(axis=1) * w).sum()) + gamma * suppressed
    return float(loss / (total * gamma))


def discernibility(class_sizes: Sequence[int] | np.ndarray, suppressed: int) -> int:
    """DM: sum of squared class sizes plus |D| for every suppressed record.

    >>> discernibility([2, 3], suppressed=1)
    19
    """
    sizes = np.asarray(class_sizes, dtype=np.int64)
    if np.any(sizes <= 0):
        raise ConfigError("class sizes must be positive")
    if suppressed < 0:
        raise ConfigError(f"suppressed must be >= 0, got {suppressed}")
    total = int(sizes.sum()) + suppressed
    return int((sizes * sizes).sum()) + total * suppressed


def relative_error(estimate: float, true: float) -> float:
    """|estimate - true| / |true|; 0 when both are 0 and infinity when only ``true`` is.

    >>> relative_error(110.0, 100.0)
    0.1
    """
    if true == 0:
        return 0.0 if estimate == 0 else float("inf")
    return abs(estimate - true) / abs(true)


def error_ratio(sum_of_errors: float | None, published_optimum: float | None) -> float | None:
    """A (k,e) release's sum of errors over the static optimum of **the rows it
    published** (``metrics.published_optimum``); None when either is unknown.

    Every group of a release meets (k,e), so its grouping is one of the partitions the
    optimum ranges over: the ratio is at least 1 by construction (1 = no better grouping
    of these rows exists). The static optimum of the *whole* table is no yardstick when
    rows are held back: fewer rows can cost less than the optimum of all of them.

    >>> error_ratio(120.0, 100.0)
    1.2
    """
    if sum_of_errors is None or published_optimum is None:
        return None
    if published_optimum == 0:
        return 1.0 if sum_of_errors == 0 else float("inf")
    return sum_of_errors / published_optimum
