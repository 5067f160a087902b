"""What planning lHD on units costs and saves: the planner of this checkout (identical
records merged into weighted units, each planned as up to ``UNIT_SINGLES`` records of
its own and the rest together) beside the planner of an earlier commit (records one by
one), on the same inputs, each in its own process.

Inputs: ARX ``adult.csv`` (30,162 rows; 8 QI, SA occupation, l = 2..5) and Adult-like
tables of n rows drawn from it with replacement (l = 2), all ``algorithm='scalable'``.

    .venv/bin/python bench/lhd_units.py [--before 2cd03cb] [--sizes 50000 200000]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from sqlanon.hierarchy import load_directory

try:
    from sqlanon.models.lhd_planner import plan_lhd
except ImportError:  # a --before checkout (default 2cd03cb) from before models/lhd.py was split
    from sqlanon.models.lhd import plan_lhd  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT.parent / "shared" / "data" / "adult"
QUASI = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]
QUASI += ["salary-class"]


def cases(sizes: list[int]) -> list[tuple[str, int | None, int]]:
    return [("Adult", None, level) for level in (2, 3, 4, 5)] + [("synthetic", n, 2) for n in sizes]


def child(sizes: list[int]) -> list[dict[str, Any]]:
    with open(ADULT / "adult.csv") as f:
        rows = list(csv.DictReader(f, delimiter=";"))
    hierarchies = load_directory(str(ADULT), "adult")
    out = []
    for name, n, l in cases(sizes):  # noqa: E741
        pick = (
            np.arange(len(rows))
            if n is None
            else np.random.default_rng(0).integers(0, len(rows), n)
        )
        quasi = {q: np.array([rows[i][q] for i in pick], dtype=object) for q in QUASI}
        sensitive = {"occupation": np.array([rows[i]["occupation"] for i in pick], dtype=object)}
        start = time.perf_counter()
        plan = plan_lhd(quasi, sensitive, {q: hierarchies[q] for q in QUASI}, l,
                        algorithm="scalable")  # fmt: skip
        out.append({
            "table": name, "rows": int(pick.size), "l": l,
            "seconds": time.perf_counter() - start, "prec": plan.precision_loss,
            "dm": plan.dm, "classes": plan.n_classes, "absent": plan.absent,
        })  # fmt: skip
    return out


def run(checkout: Path, sizes: list[int]) -> list[dict[str, Any]]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--sizes",
               *map(str, sizes)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    result: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="2cd03cb", help="commit of the row-by-row planner")
    parser.add_argument("--sizes", type=int, nargs="*", default=[50_000, 200_000])
    parser.add_argument("--no-report", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.sizes)))
        return
    with tempfile.TemporaryDirectory(prefix="sqlanon_units_") as tmp:
        old = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old),
                        args.before], check=True, capture_output=True)  # fmt: skip
        try:
            before = run(old, args.sizes)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                           check=True, capture_output=True)  # fmt: skip
    after = run(ROOT, args.sizes)
    lines = [
        "### lHD on units: what merging identical records costs and saves (pure core)\n",
        f"`bench/lhd_units.py`, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores, one run each. The planner of this checkout (identical "
        "records planned as weighted units: up to `UNIT_SINGLES` = 2 records of their own, the "
        "rest together) beside the planner of "
        f"commit `{args.before}` (records one by one), each in its own process on the same "
        "input: ARX `adult.csv` (8 QI, SA occupation) and Adult records drawn with "
        "replacement (seed 0), `algorithm='scalable'`. Time: `plan_lhd` alone.\n",
        "| table | rows | l | seconds before | seconds units | PREC before | PREC units "
        "| DM before | DM units | classes before / units | left out before / units |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for b, a in zip(before, after, strict=True):
        lines.append(
            f"| {a['table']} | {a['rows']:,} | {a['l']} | {b['seconds']:.2f} "
            f"| **{a['seconds']:.2f}** | {b['prec']:.4f} | **{a['prec']:.4f}** | {b['dm']:,} "
            f"| {a['dm']:,} | {b['classes']:,} / {a['classes']:,} "
            f"| {b['absent']} / {a['absent']} |"
        )
    markdown = "\n".join(lines) + "\n"
    print(markdown)
    if not args.no_report:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import report

        print("wrote", report.replace_section("lhd-units", markdown))


if __name__ == "__main__":
    main()
