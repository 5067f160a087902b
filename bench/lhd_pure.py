"""Benchmark of the pure lHD-diversity planner on Adult (no database).

1. Seed 002's data: UCI ``adult.data``, rows without ``?`` and capital-loss > 0 (1,427
   rows), QI age, education, marital-status, occupation, sex, native-country (ARX
   hierarchies), greedy, l=2: release 1 publishes all six QI with SA capital-loss;
   release 2 publishes three QI with capital-loss and hours-per-week under the comparison
   constraint against release 1 (greedy and scalable). Also the four-SA release of the
   paper's experiment 2.
2. ARX's ``adult.csv`` (30,162 rows): 8 QI, occupation sensitive, scalable, l = 2..5.

Run: ``.venv/bin/python bench/lhd_pure.py [path/to/shared/data/adult]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from sqlanon.hierarchy import load_directory
from sqlanon.models.lhd import EarlierRelease, LhdPlan, comparison_attack, plan_lhd

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
        f"DM={plan.dm:>10} suppressed={plan.suppressed:>4} seconds={seconds:.3f}"
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
    earlier: list[EarlierRelease] = [first.as_earlier()]
    for algorithm in ("greedy", "scalable"):
        second = timed(
            f"{algorithm} 3 QI, 2 SA, l=2 vs release 1",
            quasi={q: seed[q] for q in ["age", "sex", "native-country"]},
            sensitive={s: seed[s] for s in ["capital-loss", "hours-per-week"]},
            hierarchies=hierarchies,
            l=2,
            earlier=earlier,
            algorithm=algorithm,
        )
        attack = comparison_attack([*earlier, second.as_earlier()], 2)
        print(f"  comparison attack over both: {attack.exposed_records.size} records exposed")
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
