"""Benchmark of the pure lHD-diversity planner on Adult (no database).

1. Seed 002's data: UCI ``adult.data``, rows without ``?`` and capital-loss > 0 (1,427
   rows), QI age, education, marital-status, occupation, sex, native-country (ARX
   hierarchies), greedy, l=2: release 1 publishes all six QI with SA capital-loss;
   release 2 publishes three QI with capital-loss and hours-per-week, planned with
   ``prior=`` the cells release 1 left (the cell rule; greedy and scalable), and
   ``checked`` nothing more (release 1 published only capital-loss). hours-per-week is
   new: a release-1 class (a cell) with one hours-per-week value cannot be in a 2-diverse
   class any more and is suppressed whole, so release 2 runs with ``max_suppression=1.0``
   (about a fifth of the rows; the default 0.05 refuses). Also the four-SA release of the
   paper's experiment 2.
2. ARX's ``adult.csv`` (30,162 rows): 8 QI, occupation sensitive, scalable, l = 2..5.

Exposed records after both releases come from ``bench/attacker.py`` (cells rebuilt from
the releases' classes alone) and from the product's audit (``audit_domain``): by cell /
by subtraction / by comparison.

Run: ``PYTHONPATH=. .venv/bin/python bench/lhd_pure.py [path/to/shared/data/adult]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from sqlanon.attacker.history import AttackedRelease
from sqlanon.attacker.replay import audit_domain
from sqlanon.hierarchy import load_directory
from sqlanon.models.cells import Cells, Requirement
from sqlanon.models.lhd_planner import LhdPlan, plan_lhd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attacker import Release, attack  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult"
UCI_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
]  # fmt: skip
SEED_QI = ["age", "education", "marital-status", "occupation", "sex", "native-country"]
SEED_SA = ["workclass", "capital-loss", "hours-per-week", "relationship"]


def load_seed_subset(data: Path) -> dict[str, np.ndarray]:
    rows = []
    for line in (data / "adult.data").read_text().splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == len(UCI_COLUMNS) and "?" not in cells and int(cells[11]) > 0:
            rows.append(cells)
    table = {
        name: np.array([r[i] for r in rows], dtype=object) for i, name in enumerate(UCI_COLUMNS)
    }
    for numeric in ("age", "capital-loss", "hours-per-week"):
        table[numeric] = table[numeric].astype(np.int64)
    return table


def load_arx_adult(data: Path) -> dict[str, np.ndarray]:
    lines = (data / "adult.csv").read_text().splitlines()
    header = lines[0].split(";")
    rows = [line.split(";") for line in lines[1:] if line]
    return {name: np.array([r[i] for r in rows], dtype=object) for i, name in enumerate(header)}


def timed(label: str, **kwargs: object) -> LhdPlan:
    start = time.perf_counter()
    plan = plan_lhd(**kwargs)  # type: ignore[arg-type]
    seconds = time.perf_counter() - start
    print(
        f"{label:<44} classes={plan.n_classes:>5} PREC={plan.precision_loss:.4f} "
        f"DM={plan.dm:>10} suppressed={plan.suppressed:>4} held back={plan.held_back:>4} "
        f"seconds={seconds:.3f}"
    )
    return plan


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DATA
    hierarchies = load_directory(data, "adult")

    seed = load_seed_subset(data)
    print(f"seed 002 subset: {len(seed['age'])} rows")
    first = timed(
        "greedy 6 QI, capital-loss, l=2 (release 1)",
        quasi={q: seed[q] for q in SEED_QI},
        sensitive={"capital-loss": seed["capital-loss"]},
        hierarchies=hierarchies,
        l=2,
        algorithm="greedy",
    )
    prior = Cells.empty(first.class_id.size).then(
        first.class_id, Requirement.lhd(first.sensitive, first.l)
    )
    second_sa = ["capital-loss", "hours-per-week"]
    for algorithm in ("greedy", "scalable"):
        second = timed(
            f"{algorithm} 3 QI, 2 SA, l=2, prior release 1",
            quasi={q: seed[q] for q in ["age", "sex", "native-country"]},
            sensitive={s: seed[s] for s in second_sa},
            hierarchies=hierarchies,
            l=2,
            prior=prior,
            algorithm=algorithm,
            max_suppression=1.0,
        )
        exposure = attack(
            {s: seed[s] for s in second_sa},
            [
                Release.lhd(first.class_id, first.sensitive, 2),
                Release.lhd(second.class_id, second.sensitive, 2),
            ],
        )
        cell, subtraction, comparison = exposure.counts()
        audit = audit_domain(
            {s: seed[s] for s in second_sa},
            [
                AttackedRelease(first.class_id, Requirement.lhd(first.sensitive, 2)),
                AttackedRelease(second.class_id, Requirement.lhd(second.sensitive, 2)),
            ],
        )[-1].counts()
        print(
            f"  exposed over both (cell / subtraction / comparison): "
            f"{cell} / {subtraction} / {comparison}; the audit's: {audit['by_cell']} / "
            f"{audit['by_subtraction']} / {audit['by_comparison']}"
        )
    timed(
        "greedy 6 QI, 4 SA, l=2",
        quasi={q: seed[q] for q in SEED_QI},
        sensitive={s: seed[s] for s in SEED_SA},
        hierarchies=hierarchies,
        l=2,
        algorithm="greedy",
    )
    timed(
        "scalable 6 QI, capital-loss, l=2",
        quasi={q: seed[q] for q in SEED_QI},
        sensitive={"capital-loss": seed["capital-loss"]},
        hierarchies=hierarchies,
        l=2,
        algorithm="scalable",
    )

    arx = load_arx_adult(data)
    quasi_names = [c for c in arx if c != "occupation"]
    print(f"ARX adult.csv: {len(arx['age'])} rows, QI {quasi_names}, SA occupation")
    for l in range(2, 6):  # noqa: E741
        timed(
            f"scalable 8 QI, occupation, l={l}",
            quasi={q: arx[q] for q in quasi_names},
            sensitive={"occupation": arx["occupation"]},
            hierarchies=hierarchies,
            l=l,
            algorithm="scalable",
        )


if __name__ == "__main__":
    main()
