"""Compare the (k,e) release policies on the seeds' experiment, without a database.

Adult (capital-loss > 0, rows without '?': 1,427 records, 89 distinct values): the first
713 rows in file order are version 1, the rest arrive in ten parts (file order). For each
setting and policy, print the largest held-back fraction over versions, the final sum of
errors over the static optimum of the final table (itself unsafe to publish) and of the
rows the final version publishes (held-back rows add no error), and how many
records ever sat in a cell below (k,e) (checked from the release history, not from the
planner's own cell ids).

    PYTHONPATH=. .venv/bin/python bench/ke_policies_pure.py [--hold-factor 1.0] [--data PATH]
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path

import numpy as np

from sqlanon.errors import SqlanonError
from sqlanon.models import ke_incremental, ke_static

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult" / "adult.data"
SETTINGS = [(2, 20.0), (3, 20.0), (5, 20.0), (10, 20.0), (5, 100.0)]
POLICIES = ["auto", "merge", "defer", "paper"]


def capital_loss(path: Path) -> np.ndarray:
    values = []
    with path.open(newline="") as handle:
        for row in csv.reader(handle, skipinitialspace=True):
            if len(row) < 15 or any(field.strip() == "?" for field in row):
                continue
            loss = float(row[11])
            if loss > 0:
                values.append(loss)
    return np.asarray(values)


def broken_records(values, first_version, history, published, k, e) -> int:
    """Records whose cell (first version, group history) fails (k,e)."""
    cells: dict[tuple, list[float]] = defaultdict(list)
    for i in np.flatnonzero(published):
        cells[(first_version[i], tuple(history[i]))].append(values[i])
    broken = 0
    for members in cells.values():
        if len(set(members)) < k or max(members) - min(members) < e:
            broken += len(members)
    return broken


def run(all_values: np.ndarray, k: int, e: float, policy: str) -> dict[str, float]:
    batches = [all_values[:713], *np.array_split(all_values[713:], 10)]
    values = np.zeros(0)
    prev_cell = np.zeros(0, dtype=np.int64)
    prev_group = np.zeros(0, dtype=np.int64)
    first_version: list[int] = []
    history: list[list[int]] = []
    max_held, broken, republish_failures = 0.0, 0, 0
    plan = None
    for version, batch in enumerate(batches, start=1):
        values = np.concatenate([values, batch])
        prev_cell = np.concatenate([prev_cell, np.full(len(batch), -1, dtype=np.int64)])
        prev_group = np.concatenate([prev_group, np.full(len(batch), -1, dtype=np.int64)])
        first_version += [0] * len(batch)
        history += [[] for _ in batch]
        plan = ke_incremental.plan_release(values, prev_cell, prev_group, k, e, policy)
        republish_failures += int(((prev_cell >= 0) & (plan.group < 0)).sum())
        for i in np.flatnonzero(plan.group >= 0):
            if not history[i]:
                first_version[i] = version
            history[i].append(int(plan.group[i]))
        published = plan.group >= 0
        broken = max(broken, broken_records(values, first_version, history, published, k, e))
        max_held = max(max_held, plan.held_back / len(values))
        prev_cell, prev_group = plan.cell, plan.group
    assert plan is not None
    static = ke_static.sum_of_errors(values, ke_static.optimal_partition(values, k, e))
    shown = values[plan.group >= 0]
    static_shown = ke_static.sum_of_errors(shown, ke_static.optimal_partition(shown, k, e))
    return {
        "max_held": max_held,
        "final_held": plan.held_back / len(values),
        "ratio": plan.sum_of_errors / static,
        "ratio_shown": plan.sum_of_errors / static_shown,
        "broken": broken,
        "republish_failures": republish_failures,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--hold-factor", type=float, default=ke_incremental.DEFAULT_HOLD_FACTOR)
    args = parser.parse_args()
    ke_incremental.DEFAULT_HOLD_FACTOR = args.hold_factor
    values = capital_loss(args.data)
    print(f"{len(values)} records, {len(np.unique(values))} distinct capital-loss values")
    print(f"auto hold factor {args.hold_factor:g}\n")
    print(
        "| k | e | policy | max held back | final held back | error / static opt "
        "| error / static opt of published rows | records in broken cells |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for k, e in SETTINGS:
        for policy in POLICIES:
            try:
                r = run(values, k, e, policy)
            except (SqlanonError, ImportError) as error:
                print(f"| {k} | {e:g} | {policy} | n/a ({type(error).__name__}) | | | | |")
                continue
            failures = r["republish_failures"]
            note = f" ({failures} not republished)" if failures else ""
            print(
                f"| {k} | {e:g} | {policy} | {r['max_held']:.1%} | {r['final_held']:.1%} "
                f"| {r['ratio']:.3f} | {r['ratio_shown']:.3f} | {r['broken']}{note} |"
            )


if __name__ == "__main__":
    main()
