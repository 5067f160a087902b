"""What every (k,e) planner returns and the checks of its inputs, shared by sqlanon's
planners (``models/ke_static.py``, ``models/ke_incremental.py``, ``models/ke_runs.py``)
and ``models/ke_paper.py`` (the seeds' rule), so that neither imports the other's
internals. Pure numpy."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sqlanon.errors import ConfigError


def check_parameters(k: int, e: float, min_k: int = 2) -> tuple[int, float]:
    """Validated (k, e); releases need k >= 2, the audit also checks k = 1."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise ConfigError(f"k must be an integer >= {min_k}; got {k!r}")
    if k < min_k:
        raise ConfigError(
            f"k must be >= {min_k} (a group needs at least {min_k} distinct values); got k={k}"
        )
    try:
        e_float = float(e)
    except (TypeError, ValueError):
        raise ConfigError(f"e must be a number >= 0; got {e!r}") from None
    if not math.isfinite(e_float) or e_float < 0:
        raise ConfigError(f"e must be a finite number >= 0; got e={e!r}")
    return int(k), e_float


@dataclass(frozen=True)
class KePlan:
    """One version of a (k,e) release, per candidate record (same order as the input).

    ``group``: group id 0..g-1 in ascending order of group minimum, -1 = held back.
    ``cell``: the record's cell after this version (records with the same first version and
    the same group in every version), dense ids 0..c-1, -1 = held back.
    ``static_optimum``: sum of errors of the best single release of all candidates (unsafe
    to publish after earlier versions; the yardstick), None when that is infeasible.
    ``held_back`` counts the records left out that no release has published yet,
    ``suppressed`` (``plan_in_cells`` only) those an earlier release of the domain did.
    """

    group: np.ndarray
    cell: np.ndarray
    sum_of_errors: float
    groups: int
    held_back: int
    static_optimum: float | None = None
    suppressed: int = 0  # plan_in_cells: left out though an earlier release published them


def as_ids(ids: np.ndarray, n: int, name: str) -> np.ndarray:
    array = np.asarray(ids)
    if array.shape != (n,):
        raise ConfigError(f"{name} must have one entry per value ({n}); got shape {array.shape}")
    if array.dtype.kind not in "iu":
        raise ConfigError(f"{name} must hold integers (-1 = not published); got {array.dtype}")
    array = array.astype(np.int64, copy=False)
    if (array < -1).any():
        raise ConfigError(f"{name} must be >= -1 (-1 = not published)")
    return array
