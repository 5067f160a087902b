"""lHD releases through DuckDB, end to end: the full Adult table and a synthetic table of
Adult-like rows, against a sorted copy of the same table in the same database.

(a) the full ARX Adult table (30,162 records, 8 QI with the bundled ARX hierarchies;
    SA occupation), with ``algorithm`` auto and scalable, l = 2;
(b) ``n`` Adult-like rows: Adult records drawn with replacement (each QI and the SA
    as in Adult, so the hierarchies apply), l = 2, scalable (auto runs the same at this
    size).

Each measurement runs in a child process on a fresh DuckDB file; times are medians of
``--reps`` runs, ratios per run, then the median. Peak RSS: the child's VmHWM.

    .venv/bin/python bench/lhd_release.py [--sizes 1000000] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

import sqlanon

ADULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult"
QUASI = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]
QUASI += ["salary-class"]
SENSITIVE = ["occupation"]
SORT_SQL = 'CREATE TABLE t2 AS SELECT * FROM t ORDER BY "occupation"'


def vm_hwm_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def build(path: Path, n: int | None, folder: Path) -> None:
    """Table ``t``: Adult (n None) or n rows drawn from it with replacement, key ``id``;
    its hierarchies copied under the dataset name ``t``."""
    con = duckdb.connect(str(path))
    try:
        sqlanon.install(con)
        con.execute(
            "CREATE TABLE adult AS SELECT * FROM read_csv($1, delim = ';', header = true)",
            [str(ADULT / "adult.csv")],
        )
        if n is None:
            con.execute("CREATE TABLE t AS SELECT row_number() OVER () AS id, * FROM adult")
        else:
            con.execute("SELECT setseed(0.5)")
            con.execute(
                "CREATE TABLE t AS SELECT range AS id, a.* EXCLUDE (k) FROM range($1) AS r "
                "JOIN (SELECT *, row_number() OVER () - 1 AS k FROM adult) AS a "
                "ON a.k = CAST(floor(hash(r.range) % 30162) AS BIGINT)",
                [n],
            )
        con.execute("DROP TABLE adult")
        folder.mkdir(exist_ok=True)
        for f in ADULT.glob("adult_hierarchy_*.csv"):
            shutil.copy(f, folder / f.name.replace("adult_", "t_"))
        sqlanon.load_hierarchies(con, "t", str(folder))
    finally:
        con.close()


def child(mode: str, db: str, algorithm: str) -> dict[str, Any]:
    con = duckdb.connect(db)
    try:
        out: dict[str, Any] = {"mode": mode}
        start = time.perf_counter()
        if mode == "sort":
            con.execute(SORT_SQL)
            out["seconds"] = time.perf_counter() - start
            con.execute("DROP TABLE t2")
        else:
            if mode == "rows":  # the row path, as every lHD release ran before issue 13
                from sqlanon.release import lhd_engine

                lhd_engine.release = lambda *a, **k: None  # type: ignore[assignment]
            sqlanon.install(con)
            summary = sqlanon.release_lhd(
                con, "t", f"fam_{algorithm}", key="id", quasi=QUASI, sensitive=SENSITIVE, l=2,
                algorithm=algorithm,
            )  # fmt: skip
            out["seconds"] = time.perf_counter() - start
            out["summary"] = {k: summary[k] for k in ("rows_published", "groups")}
            out["summary"]["precision_loss"] = summary["precision_loss"]
            out["summary"]["suppressed"] = summary["suppressed"] + summary["held_back"]
        out["vm_hwm_kib"] = vm_hwm_kib()
        return out
    finally:
        con.close()


def run_child(mode: str, db: Path, algorithm: str = "auto") -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", mode, "--db", str(db), "--alg", algorithm]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"child {mode} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(
    n: int | None, algorithm: str, reps: int, tmp: Path, row_path: bool = True
) -> dict[str, Any]:
    runs = []
    for rep in range(reps):
        db = tmp / f"lhd_{n}_{algorithm}_{rep}.duckdb"
        build(db, n, tmp / f"hier_{rep}")
        rows_db = db.with_suffix(".rows.duckdb")
        if row_path:
            shutil.copy(db, rows_db)
        sort = run_child("sort", db)
        release = run_child("release", db, algorithm)
        rows = run_child("rows", rows_db, algorithm) if row_path else None
        runs.append((sort, release, rows))
        db.unlink()
        rows_db.unlink(missing_ok=True)
        print(f"n={n or 'Adult'} {algorithm} rep {rep}: sort {sort['seconds']:.2f}s "
              f"release {release['seconds']:.2f}s row path "
              f"{rows['seconds'] if rows else float('nan'):.2f}s", flush=True)  # fmt: skip
    med = statistics.median
    out = {
        "n": n,
        "algorithm": algorithm,
        "sort": med(s["seconds"] for s, _, _ in runs),
        "release": med(r["seconds"] for _, r, _ in runs),
        "ratio": med(r["seconds"] / s["seconds"] for s, r, _ in runs),
        "rss_mib": med(r["vm_hwm_kib"] for _, r, _ in runs) / 1024,
        "summary": runs[-1][1]["summary"],
    }
    if row_path:
        out["rows"] = med(w["seconds"] for _, _, w in runs if w)
        out["rows_rss_mib"] = med(w["vm_hwm_kib"] for _, _, w in runs if w) / 1024
        out["rows_summary"] = runs[-1][2]["summary"] if runs[-1][2] else None
    return out


def table(results: list[dict[str, Any]], reps: int) -> str:
    lines = [
        f"### lHD release through DuckDB (l = 2, SA occupation, {len(QUASI)} QI)\n",
        f"`bench/lhd_release.py`, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores, DuckDB {duckdb.__version__}. Medians over {reps} runs, each "
        "on a fresh file in its own child process; ratio per run against "
        f"`{SORT_SQL}` in the same file, then the median. Adult: the ARX table (30,162 "
        "records) with the bundled hierarchies; synthetic: Adult records drawn with "
        "replacement. *Release*: the engine path (the planner reads one entry per unit of "
        "identical records; the plan is applied in SQL); *row path*: the same release on a "
        "copy of the file with the engine path turned off (every row read into Python, "
        "planned on units too, written back), which must publish the same classes "
        "(*same counts and PREC*: rows published, classes, precision loss, left out). "
        "Target (issue 13): Adult <= 2 s.\n",
        "| table | algorithm | rows | sort s | release s | release / sort | peak RSS MiB "
        "| row path s | row path peak RSS MiB | classes | precision loss | left out "
        "| same counts and PREC |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        s = r["summary"]
        lines.append(
            f"| {'Adult' if r['n'] is None else 'synthetic'} | {r['algorithm']} "
            f"| {s['rows_published'] + s['suppressed']:,} | {r['sort']:.2f} "
            f"| **{r['release']:.2f}** | {r['ratio']:.0f} | {r['rss_mib']:,.0f} "
            + (f"| {r['rows']:.2f} | {r['rows_rss_mib']:,.0f} " if "rows" in r else "| – | – ")
            + f"| {s['groups']:,} | {s['precision_loss']:.4f} | {s['suppressed']:,} "
            + ("| – |" if "rows" not in r else f"| {'yes' if s == r['rows_summary'] else 'NO'} |")
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-report", action="store_true")
    parser.add_argument(
        "--rows-max", type=int, default=1_000_000, help="largest size the row path runs at"
    )
    parser.add_argument("--child", choices=["sort", "release", "rows"], help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--alg", default="auto", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.db, args.alg)))
        return
    results = []
    with tempfile.TemporaryDirectory(prefix="sqlanon_lhd_") as tmp:
        for algorithm in ("auto", "scalable"):
            results.append(measure(None, algorithm, args.reps, Path(tmp)))
        for n in args.sizes:
            reps = max(1, args.reps // 3)
            results.append(measure(n, "scalable", reps, Path(tmp), n <= args.rows_max))
    markdown = table(results, args.reps)
    print(markdown)
    if not args.no_report:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import report

        print("wrote", report.replace_section("lhd_release", markdown))


if __name__ == "__main__":
    main()
