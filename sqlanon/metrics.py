"""Utility metrics of a generalized release, exactly as ``MODELS.md`` defines them.

- precision loss = (sum over published records and QI of level/height
  + |Gamma| per suppressed record) / (|D| * |Gamma|), in [0, 1];
- discernibility DM = sum over classes of |class|^2 + |D| per suppressed record;
- query relative error = |estimate - true| / |true|.

|D| counts every candidate record of the release, published or suppressed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sqlanon.errors import ConfigError


def precision_loss(levels: np.ndarray, heights: Sequence[int], suppressed: int) -> float:
    """Precision loss of a release.

    ``levels`` has one row per *published* record and one column per published QI (the
    hierarchy level it was published at); ``heights`` the hierarchy height of each QI.

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
    total = table.shape[0] + suppressed
    if total == 0:
        return 0.0
    loss = float((table / h).sum()) + gamma * suppressed
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
