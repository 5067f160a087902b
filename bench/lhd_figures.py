"""Seed 002's remaining figures (11-20) as a reviewer would rerun them: the section
"seed-002" of docs/EXPERIMENTS.md and its plots under docs/plots/.

Data and releases as in ``bench/lhd_experiments.py`` (BENCHMARKS.md has its Figs. 5-10):
the seed's 1,427 Adult records with capital-loss > 0, ARX hierarchies; QI added in the
seed's order (native-country, sex, marital-status, occupation, education, age) and SA
(capital-loss, relationship, workclass, hours-per-week). Every setting is released twice,
as in the seed: release 1 the first ceil(|Gamma|/2) QI, release 2 all of Gamma, with the
same SA.

- Figs. 11-14 (limited QI 1..6 / limited SA 1..4, l = 2): the data holder publishes only
  those attributes. sqlanon plans them alone (release 2 under the cells of release 1);
  the compared models "must consider all quasi-identifier [sensitive] attributes in
  every experiment", so they anonymize with all 6 QI (all 4 SA) and publish the limited
  columns of their classes. Compared here: independent l-diversity (sqlanon's planner
  with no prior), ``anonypy``'s Mondrian l-diversity (PyPI, k = l; a single SA, so not
  in the SA figures; the seeds' LKC-privacy has no PyPI implementation we could find),
  and sqlanon with the seed's own ``greedy``.
- Figs. 15-17 (AVG relative error, l = 2, capital-loss, 6 QI): 15 random queries per
  point, ``SELECT AVG(capital_loss) ... WHERE qi1 = v1 AND/OR ... qip = vp`` (p = 1..6,
  values of one random record so AND has an answer) and ``WHERE age BETWEEN LB AND
  UB`` (width 0..40), answered by ``sqlanon.interval`` (the estimate) on release 2
  through DuckDB, against the true average of the published records.
- Figs. 18-20 (planner seconds vs #QI, #SA, l): sqlanon and l-diversity medians of 3
  runs, anonypy one run.

``tests/test_experiments_docs.py`` recomputes the 2-QI point of Figs. 11-12 (sqlanon,
greedy and l-diversity columns) and fails when the section is stale: rerun this script
then.

Metrics as sqlanon reports them (PREC normalised to 0..1, DM with |D| per suppressed
record) and as the seed defines them (f_PREC = sum of level/height over records and QI
plus |D| per suppressed record; DM = sum of squared class sizes, no suppression term).

    .venv/bin/python bench/lhd_figures.py [--quick] [--no-report]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

import sqlanon
from sqlanon.hierarchy import Hierarchy, load_directory

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lhd_experiments import _plan, cells_after, exposure  # noqa: E402
from lhd_pure import DEFAULT_DATA, load_seed_subset  # noqa: E402
from report import replace_section  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "docs" / "EXPERIMENTS.md"
PLOTS = ROOT / "docs" / "plots"
QI_ORDER = ["native-country", "sex", "marital-status", "occupation", "education", "age"]
SA_ORDER = ["capital-loss", "relationship", "workclass", "hours-per-week"]


# ------------------------------------------------------------------------------ metrics


def class_levels(
    seed: dict[str, np.ndarray], hierarchies: dict[str, Hierarchy], qi: str, classes: np.ndarray
) -> np.ndarray:
    """Per record of a class: the lowest level of ``qi``'s hierarchy at which every
    member of its class shares one label (-1 for records in no class)."""
    h = hierarchies[qi]
    raw = [str(v) for v in seed[qi]]
    out = np.full(classes.size, -1, dtype=np.int64)
    for c in np.unique(classes[classes >= 0]).tolist():
        members = np.flatnonzero(classes == c)
        labels = {raw[i] for i in members}
        for level in range(h.height + 1):
            if len({h.table[x][level] for x in labels}) == 1:
                out[members] = level
                break
    return out


def metrics(
    seed: dict[str, np.ndarray],
    hierarchies: dict[str, Hierarchy],
    classes: np.ndarray,
    published_qi: list[str],
) -> dict[str, float]:
    """PREC (sqlanon's, normalised), the seed's f_PREC and DM, and sqlanon's DM, of the
    classes ``classes`` (-1 = suppressed) published on ``published_qi``."""
    n = classes.size
    suppressed = int((classes < 0).sum())
    kept = classes >= 0
    generalization = 0.0
    for qi in published_qi:
        levels = class_levels(seed, hierarchies, qi, classes)
        generalization += float((levels[kept] / hierarchies[qi].height).sum())
    sizes = np.bincount(classes[kept]) if kept.any() else np.zeros(0, dtype=np.int64)
    sizes = sizes[sizes > 0]
    dm_paper = int((sizes.astype(np.int64) ** 2).sum())
    return {
        "prec": (generalization + suppressed * len(published_qi)) / (n * len(published_qi)),
        "prec_paper": generalization + suppressed * n,
        "dm_paper": dm_paper,
        "dm": dm_paper + n * suppressed,
        "suppressed": suppressed,
        "classes": int(sizes.size),
        "largest": int(sizes.max()) if sizes.size else 0,
    }


def mondrian(
    seed: dict[str, np.ndarray],
    quasi: list[str],
    sensitive: str,
    l: int,  # noqa: E741
) -> tuple[np.ndarray, float] | None:
    """anonypy's Mondrian l-diversity (k = l) on ``quasi``: each record's class, and the
    seconds; None when anonypy (``pip install -e '.[bench]'``) is missing."""
    try:
        import pandas as pd
        from anonypy import mondrian as anonypy_mondrian
    except ImportError:
        return None
    frame = pd.DataFrame({q: seed[q] for q in [*quasi, sensitive]})
    for q in quasi:
        if q == "age":
            frame[q] = frame[q].astype(np.int64)
        else:
            frame[q] = frame[q].astype("category")
    frame[sensitive] = frame[sensitive].astype("category")
    start = time.perf_counter()
    partitions = anonypy_mondrian.Mondrian(frame, quasi, sensitive).partition(l, l)
    seconds = time.perf_counter() - start
    classes = np.full(len(frame), -1, dtype=np.int64)
    for c, part in enumerate(partitions):
        classes[np.asarray(list(part), dtype=np.int64)] = c
    return classes, seconds


def median_seconds(fn: Callable[[], float], repeats: int) -> float:
    return statistics.median(fn() for _ in range(repeats))


# ------------------------------------------------------------- Figs. 11-14, limited sets


def limited(
    seed: dict[str, np.ndarray],
    hierarchies: dict[str, Hierarchy],
    kind: str,
    count: int,
    l: int = 2,  # noqa: E741
    compared: bool = True,
) -> dict[str, Any]:
    """One point of Figs. 11-14: ``count`` QI (kind "qi", SA capital-loss) or ``count``
    SA (kind "sa", all 6 QI) published; ``compared``: with the compared models'
    columns too (l-diversity, anonypy), else sqlanon's alone."""
    quasi = QI_ORDER[:count] if kind == "qi" else QI_ORDER
    sensitive = ["capital-loss"] if kind == "qi" else SA_ORDER[:count]
    first_qi = quasi[: math.ceil(len(quasi) / 2)]
    row: dict[str, Any] = {"count": count}
    first, _ = _plan(seed, hierarchies, first_qi, sensitive, l)
    for label, algorithm in (("sqlanon", "auto"), ("sqlanon greedy", "greedy")):
        plan, seconds = _plan(
            seed, hierarchies, quasi, sensitive, l, cells_after(first), algorithm=algorithm
        )
        row[label] = metrics(seed, hierarchies, plan.class_id, quasi) | {
            "seconds": seconds,
            "exposed": exposure(seed, sensitive, l, first.class_id, plan.class_id).counts()[3],
        }
        if algorithm == "greedy":
            row[label]["pieces"] = pieces_per_class(first.class_id, plan.class_id)
        else:
            row["auto pieces"] = pieces_per_class(first.class_id, plan.class_id)
    if not compared:
        return row
    # the compared models consider every QI and SA, then publish the limited columns
    all_first, _ = _plan(
        seed, hierarchies, QI_ORDER[:3], SA_ORDER if kind == "sa" else sensitive, l
    )
    plain, seconds = _plan(seed, hierarchies, QI_ORDER, SA_ORDER if kind == "sa" else sensitive, l)
    row["l-diversity"] = metrics(seed, hierarchies, plain.class_id, quasi) | {
        "seconds": seconds,
        "exposed": exposure(seed, sensitive, l, all_first.class_id, plain.class_id).counts()[3],
    }
    if kind == "qi":
        found = mondrian(seed, QI_ORDER, "capital-loss", l)
        found_first = mondrian(seed, QI_ORDER[:3], "capital-loss", l)
        if found is not None and found_first is not None:
            row["anonypy"] = metrics(seed, hierarchies, found[0], quasi) | {
                "seconds": found[1],
                "exposed": exposure(seed, sensitive, l, found_first[0], found[0]).counts()[3],
            }
    print(kind, count, {k: (v.get("prec") if isinstance(v, dict) else v) for k, v in row.items()},
          flush=True)  # fmt: skip
    return row


def pieces_per_class(first: np.ndarray, second: np.ndarray) -> float:
    """Mean number of release-1 classes a release-2 class draws records from."""
    published = second >= 0
    if not published.any():
        return float("nan")
    pairs = {(int(a), int(b)) for a, b in zip(second[published], first[published], strict=True)}
    return len(pairs) / len({a for a, _ in pairs})


# ------------------------------------------------------------------ Figs. 15-17, queries


def workloads(
    seed: dict[str, np.ndarray], hierarchies_folder: Path, quick: bool
) -> dict[str, dict[str, list[tuple[Any, float]]]]:
    """Mean relative error of AVG(capital_loss) per workload point, for sqlanon's release
    2 (under release 1's cells) and for an independent release 2, through DuckDB."""
    rng = random.Random(2)
    n = seed["age"].size
    columns = {q.replace("-", "_"): seed[q] for q in [*QI_ORDER, "capital-loss"]}
    out: dict[str, dict[str, list[tuple[Any, float]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        con = duckdb.connect(str(Path(tmp) / "q.duckdb"))
        sqlanon.install(con)
        con.register("_rows", {"id": np.arange(n), **columns})
        for name in ("safe", "plain"):
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM _rows")  # noqa: S608
            sqlanon.load_hierarchies(con, name, str(hierarchies_folder(name)))
        quasi = [q.replace("-", "_") for q in QI_ORDER]
        kwargs = dict(key="id", sensitive=["capital_loss"], l=2, max_suppression=1.0)
        sqlanon.release_lhd(con, "safe", "safe_lhd", quasi=quasi[:3], **kwargs)
        sqlanon.release_lhd(con, "safe", "safe_lhd2", quasi=quasi, **kwargs)
        # its own domain: "plain" is a copy of "safe" (same keys and columns), which
        # sqlanon would otherwise take for the same people and compose with "safe"
        sqlanon.release_lhd(con, "plain", "plain_lhd", quasi=quasi, domain="plain", **kwargs)
        published = {
            "sqlanon": _published_ids(con, "safe_lhd2"),
            "l-diversity": _published_ids(con, "plain_lhd"),
        }
        families = {"sqlanon": "safe_lhd2", "l-diversity": "plain_lhd"}
        queries = 5 if quick else 15
        for op in ("OR", "AND"):
            for p in range(1, 7):
                picks = [rng.randrange(n) for _ in range(queries)]
                qis = [rng.sample(quasi, p) for _ in range(queries)]
                for model, family in families.items():
                    errors = []
                    for r, chosen in zip(picks, qis, strict=True):
                        where = f" {op} ".join(f"{q} = {_literal(columns[q][r])}" for q in chosen)
                        errors.append(_error(con, family, where, columns, published[model]))
                    out.setdefault(op, {}).setdefault(model, []).append((p, _mean(errors)))
        for width in (0, 5, 10, 20, 40):
            lows = [rng.randrange(17, 90 - width) for _ in range(queries)]
            for model, family in families.items():
                errors = [
                    _error(con, family, f"age BETWEEN {lo} AND {lo + width}", columns,
                           published[model])
                    for lo in lows
                ]  # fmt: skip
                out.setdefault("range", {}).setdefault(model, []).append((width, _mean(errors)))
        con.close()
    return out


def _published_ids(con: duckdb.DuckDBPyConnection, family: str) -> set[int]:
    rows = con.execute(
        "SELECT record_key FROM sqlanon.members WHERE family = ? AND status = 'published' "
        "AND version = (SELECT max(version) FROM sqlanon.members WHERE family = ?)",
        [family, family],
    ).fetchall()
    return {int(r[0]) for r in rows}


def _literal(value: Any) -> str:
    return str(int(value)) if isinstance(value, (int, np.integer)) else "'" + str(value) + "'"


def _mean(values: list[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.mean(finite)) if finite else float("nan")


def _error(
    con: duckdb.DuckDBPyConnection,
    family: str,
    where: str,
    columns: dict[str, np.ndarray],
    published: set[int],
) -> float:
    """Relative error of the interval estimate of AVG(capital_loss) against the true
    average of the published records matching ``where`` (nan when none does)."""
    sql = f"SELECT AVG(capital_loss) AS a FROM {family} WHERE {where}"  # noqa: S608
    estimate = sqlanon.interval(con, sql)[0]["a_est"]
    truth = con.execute(
        f"SELECT AVG(capital_loss) FROM _rows WHERE ({where}) AND id IN "  # noqa: S608
        f"(SELECT unnest(?::BIGINT[]))",
        [sorted(published)],
    ).fetchone()[0]
    if truth is None or estimate is None:
        return float("nan")
    return abs(float(estimate) - float(truth)) / abs(float(truth))


# ---------------------------------------------------------------- Figs. 18-20, runtime


def runtimes(
    seed: dict[str, np.ndarray], hierarchies: dict[str, Hierarchy], quick: bool
) -> dict[str, list[tuple[int, dict[str, float]]]]:
    repeats = 1 if quick else 3
    out: dict[str, list[tuple[int, dict[str, float]]]] = {"qi": [], "sa": [], "l": []}
    grids = {
        "qi": [(QI_ORDER[:c], ["capital-loss"], 2, c) for c in range(1, 7)],
        "sa": [(QI_ORDER, SA_ORDER[:c], 2, c) for c in range(1, 5)],
        "l": [(QI_ORDER, ["capital-loss"], l, l) for l in (2, 4, 6, 8, 10)],  # noqa: E741
    }
    for kind, points in grids.items():
        for quasi, sensitive, l, x in points:  # noqa: E741
            first_qi = quasi[: math.ceil(len(quasi) / 2)]
            first, _ = _plan(seed, hierarchies, first_qi, sensitive, l)
            prior = cells_after(first)
            times = {
                "sqlanon": median_seconds(
                    lambda q=quasi, s=sensitive, lv=l, p=prior: _plan(
                        seed, hierarchies, q, s, lv, p
                    )[1],
                    repeats,
                ),
                "l-diversity": median_seconds(
                    lambda q=quasi, s=sensitive, lv=l: _plan(seed, hierarchies, q, s, lv)[1],
                    repeats,
                ),
            }
            if len(sensitive) == 1:
                found = mondrian(seed, quasi, sensitive[0], l)
                if found is not None:
                    times["anonypy"] = found[1]
            out[kind].append((x, times))
            print(kind, x, times, flush=True)
    return out


# ------------------------------------------------------------------------------ report


def plot_lines(
    series: dict[str, list[tuple[Any, float]]], xlabel: str, ylabel: str, name: str, log: bool
) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    PLOTS.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(4.6, 3.2), dpi=90)
    for label, points in series.items():
        ax.plot([str(x) for x, _ in points], [y for _, y in points], "o-", label=label)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(PLOTS / f"{name}.png")
    plt.close(fig)
    return f"![{name}](plots/{name}.png)"


def limited_table(rows: list[dict[str, Any]], label: str) -> str:
    models = [m for m in ("sqlanon", "sqlanon greedy", "l-diversity", "anonypy") if m in rows[0]]
    head = " | ".join(f"{m}: PREC / f_PREC / DM (seed) / suppressed / exposed" for m in models)
    lines = [f"| {label} | {head} |", "|---|" + "---|" * len(models)]
    for r in rows:
        cells = []
        for m in models:
            x = r[m]
            cells.append(
                f"{x['prec']:.3f} / {x['prec_paper']:,.0f} / {x['dm_paper']:,} / "
                f"{x['suppressed']} / {x['exposed']}"
            )
        lines.append(f"| {r['count']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def versus_seed(rows: list[dict[str, Any]], metric: str, label: str, seed_better: int) -> str:
    """Where sqlanon's ``metric`` is below l-diversity's, against the seed's claim that
    the proposed model is better up to ``seed_better`` attributes and worse after."""
    better = [r["count"] for r in rows if r["sqlanon"][metric] < r["l-diversity"][metric]]
    worse = [r["count"] for r in rows if r["sqlanon"][metric] >= r["l-diversity"][metric]]
    said = [r["count"] for r in rows if r["count"] <= seed_better]
    agrees = "agrees" if better == said else "disagrees"
    return (
        f"sqlanon's {label} below l-diversity's at {better or 'none'}, not at "
        f"{worse or 'none'} ({agrees}: the seed says better up to {seed_better}, worse "
        f"at {seed_better + 1})"
    )


def workload_verdict(work: dict[str, dict[str, list[tuple[Any, float]]]]) -> str:
    """Whether each workload's error moves as the seed says, first point to last."""
    said = {"OR": ("falls", -1), "AND": ("rises", 1), "range": ("falls", -1)}
    out = []
    for op, (word, sign) in said.items():
        for model, points in work[op].items():
            first, last = points[0][1], points[-1][1]
            agrees = (last - first) * sign > 0
            out.append(
                f"{op} {model}: {first:.3f} -> {last:.3f} "
                f"({'agrees' if agrees else 'disagrees'}: the seed says it {word})"
            )
    return "; ".join(out) + "."


def greedy_verdict(rows: list[dict[str, Any]]) -> str:
    worst = max(r["sqlanon greedy"]["prec"] - r["sqlanon"]["prec"] for r in rows)
    if worst > 0.2:
        return f"Greedy still collapses (up to {worst:.2f} more PREC than auto)."
    return (
        f"No collapse: greedy stays within {worst:.3f} PREC of auto, because under the "
        "cell rule each release-2 class is planned inside release-1 classes, where the "
        "greedy's nearest records are of the same cell."
    )


def greedy_dm_verdict(rows: list[dict[str, Any]]) -> str:
    """Whether the seed's greedy keeps DM (seed) below l-diversity's at every #QI."""
    above = [
        r["count"] for r in rows if r["sqlanon greedy"]["dm_paper"] > r["l-diversity"]["dm_paper"]
    ]
    if not above:
        return "The greedy's DM (seed) stays at or below l-diversity's at every #QI."
    return (
        f"The greedy's DM (seed) is above l-diversity's at {above} QI: under the cell "
        "rule it does not keep every class near the smallest valid size."
    )


def markdown(result: dict[str, Any], quick: bool) -> str:
    qi, sa, work, runs = result["qi"], result["sa"], result["work"], result["runs"]
    has_anonypy = "anonypy" in qi[0]
    parts = [
        "## Seed 002: lHD-diversity (Figs. 11-20)\n",
        f"`bench/lhd_figures.py`{' --quick' if quick else ''}, {time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}. "
        f"Data: Adult's records with no '?' and capital-loss > 0, {result['n']:,} here "
        "(the seed says 1,428 for the same filter; seed 000 says 1,427), ARX hierarchies; each "
        "setting released twice (release 1: the first half of the QI; release 2: all of "
        "them, under release 1's cells for sqlanon). Figs. 5-10 (all attributes, varying "
        "#QI, #SA, l) are in BENCHMARKS.md, section `lhd-seed-experiments`.\n",
        "**Metrics.** *PREC* is sqlanon's: the seed's f_PREC divided by |D|·|Gamma| (0..1), "
        "a suppressed record counting as fully generalized. *f_PREC* is the seed's Eq. (3) "
        "as printed: sum over records and QI of level / height, plus |D| per suppressed "
        "record. *DM (seed)* is Eq. (4): sum of squared class sizes, with no term for "
        "suppressed records (sqlanon's DM adds |D| per suppressed record). *Exposed*: "
        "records the worst-case cell check pins after both releases (`sqlanon.attacker`).\n",
    ]
    if not has_anonypy:
        parts.append(
            "anonypy was not installed (`pip install -e '.[bench]'`): no Mondrian column.\n"
        )
    parts += [
        "### Figs. 11-12: a limited number of QI (l = 2, capital-loss)\n",
        "*Paper*: the proposed model beats l-diversity and LKC-privacy (PREC and DM) with up "
        "to 5 QI, and loses at 6, because it anonymizes only the QI it publishes while the "
        "others consider all of them (the crossover).\n",
        limited_table(qi, "QI published") + "\n",
        plot_lines(
            {
                m: [(r["count"], r[m]["prec"]) for r in qi]
                for m in qi[0]
                if isinstance(qi[0][m], dict)
            },
            "QI published",
            "PREC (sqlanon's)",
            "seed002_limited_qi",
            False,
        ),  # fmt: skip
        f"**Agreement**: Fig. 11, {versus_seed(qi, 'prec', 'PREC', 5)}; Fig. 12, "
        f"{versus_seed(qi, 'dm_paper', 'DM (seed)', 5)}. At 6 QI both anonymize the "
        "same columns and sqlanon pays for the cell rule; below 6, sqlanon anonymizes "
        "fewer columns, which lowers PREC, while its DM follows the largest classes "
        "(next section).\n",
        "### Figs. 13-14: a limited number of SA (l = 2, 6 QI)\n",
        "*Paper*: the proposed model is better with up to 3 SA and worse at 4.\n",
        limited_table(sa, "SA published") + "\n",
        plot_lines(
            {
                m: [(r["count"], r[m]["prec"]) for r in sa]
                for m in sa[0]
                if isinstance(sa[0][m], dict)
            },
            "SA published",
            "PREC (sqlanon's)",
            "seed002_limited_sa",
            False,
        ),  # fmt: skip
        f"**Agreement**: Fig. 13, {versus_seed(sa, 'prec', 'PREC', 3)}; Fig. 14, "
        f"{versus_seed(sa, 'dm_paper', 'DM (seed)', 3)}.\n",
        "### The seed's greedy under the cell rule (release 2)\n",
        "Issue 15 reports the seed's greedy collapsing in release 2 under the seed's "
        "set-based comparison constraint (PREC 0.51-1.00). Under the cell rule as planned "
        "now, the numbers by #QI (PREC auto / greedy, suppressed auto / greedy, and the "
        "mean number of release-1 classes a release-2 class draws from, auto / greedy: 1 "
        "means release 2 only splits release-1 classes): "
        + "; ".join(
            f"{r['count']}: {r['sqlanon']['prec']:.3f} / {r['sqlanon greedy']['prec']:.3f}, "
            f"{r['sqlanon']['suppressed']} / {r['sqlanon greedy']['suppressed']}, "
            f"{r['auto pieces']:.1f} / {r['sqlanon greedy']['pieces']:.1f}"
            for r in qi
        )
        + ". "
        + greedy_verdict(qi)
        + "\n",
        "### DM as QI are added\n",
        "DM (Eq. 4) is driven by the largest classes. `auto` keeps the plan with the "
        "lowest precision loss and uses DM only to break ties, and records with identical "
        "QI cost no precision when kept together, so a plan with one very large class of "
        "such records can win. Largest release-2 class and DM (seed) by #QI, sqlanon / "
        "l-diversity: "
        + "; ".join(
            f"{r['count']}: {r['sqlanon']['largest']:,} / {r['l-diversity']['largest']:,} "
            f"(DM {r['sqlanon']['dm_paper']:,} / {r['l-diversity']['dm_paper']:,})"
            for r in qi
        )
        + ". The seed's own greedy (largest class and DM (seed) by #QI): "
        + "; ".join(
            f"{r['count']}: {r['sqlanon greedy']['largest']:,} "
            f"(DM {r['sqlanon greedy']['dm_paper']:,})"
            for r in qi
        )
        + ". "
        + greedy_dm_verdict(qi)
        + " On the seed's footing (Eq. 4, no suppression term, as in the tables) the DM "
        "columns compare across models.\n",
        "### Figs. 15-17: AVG relative error (l = 2, capital-loss, 6 QI)\n",
        "*Paper*: with OR, more conditions lower the error; with AND, more conditions raise "
        "it; with a range, a wider range lowers it; the proposed model is close to the others.\n",
        f"Each point is the mean relative error over {result['queries']} random queries "
        "(the seed: 15), one run with a fixed seed; a query no published record matches "
        "is left out of the mean.\n",
    ]
    for op, label, xlabel in (
        ("OR", "Fig. 15, OR", "conditions"),
        ("AND", "Fig. 16, AND", "conditions"),
        ("range", "Fig. 17, age range", "range width"),
    ):
        series = work[op]
        parts.append(f"{label}: " + "; ".join(
            f"{m}: " + ", ".join(f"{x}: {y:.3f}" for x, y in pts) for m, pts in series.items()
        ) + "\n")  # fmt: skip
        parts.append(
            plot_lines(series, xlabel, "mean relative error", f"seed002_{op.lower()}", False)
        )
    parts += [
        f"\n**Agreement**: {workload_verdict(work)} sqlanon's estimate is the interval "
        "rewriter's uniform-spread estimate over each class's labels (README, Interval "
        "answers), not the seed's, so absolute errors differ.\n",
        "### Figs. 18-20: planner seconds vs #QI, #SA, l\n",
        "*Paper*: the proposed model is slower than l-diversity (it also checks the "
        "comparison constraint) and faster than LKC-privacy.\n",
        f"sqlanon and l-diversity: medians of {result['repeats']} runs each; anonypy: one "
        "run per point.\n",
    ]
    for kind, xlabel in (("qi", "QI"), ("sa", "SA"), ("l", "l")):
        series: dict[str, list[tuple[Any, float]]] = {}
        for x, times in runs[kind]:
            for model, seconds in times.items():
                series.setdefault(model, []).append((x, seconds))
        parts.append(f"{xlabel}: " + "; ".join(
            f"{m}: " + ", ".join(f"{x}: {y:.2f} s" for x, y in pts) for m, pts in series.items()
        ) + "\n")  # fmt: skip
        parts.append(plot_lines(series, xlabel, "planner seconds", f"seed002_time_{kind}", True))
    slower = sum(t["sqlanon"] >= t["l-diversity"] for kind in runs for _, t in runs[kind])
    total = sum(len(runs[kind]) for kind in runs)
    parts.append(
        f"\n**Agreement**: sqlanon (release 2 under the cell rule) is at least as slow as "
        f"independent l-diversity in {slower} of {total} points, as the seed reports for its "
        "model.\n"
    )
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-report", action="store_true")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    seed = load_seed_subset(args.data)
    hierarchies = load_directory(args.data, "adult")
    qi = [limited(seed, hierarchies, "qi", c) for c in ([1, 3, 6] if args.quick else range(1, 7))]
    sa = [limited(seed, hierarchies, "sa", c) for c in ([1, 4] if args.quick else range(1, 5))]
    with tempfile.TemporaryDirectory() as tmp:

        def folder(name: str) -> Path:
            target = Path(tmp) / name
            target.mkdir(exist_ok=True)
            for f in args.data.glob("adult_hierarchy_*.csv"):
                (target / f.name.replace("adult_", f"{name}_")).write_bytes(f.read_bytes())
            return target

        work = workloads(seed, folder, args.quick)
    runs = runtimes(seed, hierarchies, args.quick)
    result = {
        "qi": qi,
        "sa": sa,
        "work": work,
        "runs": runs,
        "n": seed["age"].size,
        "queries": 5 if args.quick else 15,
        "repeats": 1 if args.quick else 3,
    }
    body = markdown(result, args.quick)
    if args.no_report:
        print(body)
        return
    if not EXPERIMENTS.exists():
        from ke_experiments import HEADER

        EXPERIMENTS.write_text(HEADER)
    print("wrote", replace_section("seed-002", body, EXPERIMENTS))


if __name__ == "__main__":
    main()
