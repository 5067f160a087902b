"""Bytes a (k,e) release writes on Spark when versions share their rows (issue 27).

For each size n, synthetic rows (those of ``bench/ke_release.py``) are released once,
then changed a little and released again, ``--later`` times: each change deletes n/1000
records, changes the sensitive value of n/1000 and the age of n/1000, and inserts n/1000
new ones (the source is kept in DuckDB and loaded into Spark anew from parquet before
each release: no time of that is counted). For each release the bench lists the data
files of the family's rows table (``sqlanon.fam__rows``), its closed rows
(``sqlanon.fam__closed``) and the version's bounds table, and reports what the release
added: files, bytes, rows appended and rows closed, and the bytes of one whole version
(what a table per version, the layout before, wrote every time: the rows of the
version's view written as parquet once more, measured after the run).

Spark runs in a child process per size (``local[2]``, driver memory 2g, shuffle
partitions 8, AQE on).

    .venv/bin/python bench/spark_incremental.py [--sizes 1000000 10000000] [--later 3]
        [--results runs.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spark_release import GENERATE, QUASI  # noqa: E402 - the same rows

K, E = 5, 20.0
CALL = (
    "sqlanon.release_ke(spark, 't', 'fam', key='id', sensitive='s', "
    "quasi=['age', 'zip', 'sex'], k=5, e=20)"
)


def change(con: Any, n: int, step: int, folder: Path) -> Path:
    """Change the DuckDB source a little (module docstring); its rows as parquet."""
    part = max(n // 1000, 1)
    con.execute("SELECT setseed($1)", [0.1 + step / 100])
    picked = "SELECT id FROM t ORDER BY random() LIMIT $1"
    con.execute(f"CREATE OR REPLACE TEMP TABLE gone AS {picked}", [part])  # noqa: S608
    con.execute("DELETE FROM t WHERE id IN (SELECT id FROM gone)")
    con.execute(f"CREATE OR REPLACE TEMP TABLE moved AS {picked}", [2 * part])  # noqa: S608
    con.execute(
        "UPDATE t SET s = s + 1 WHERE id IN (SELECT id FROM moved ORDER BY id LIMIT $1)", [part]
    )
    con.execute(
        "UPDATE t SET age = least(age + 1, 90) "
        "WHERE id IN (SELECT id FROM moved ORDER BY id OFFSET $1)",
        [part],
    )
    start = 2 * n + step * part
    new = folder / f"new_{step}.parquet"
    con.execute(GENERATE.format(path=new), [start, start + part])
    con.execute("INSERT INTO t SELECT * FROM read_parquet($1)", [str(new)])
    path = folder / f"t_{step}.parquet"
    con.execute(f"COPY t TO '{path}' (FORMAT parquet)")
    return path


def spark_child(n: int, later: int, workdir: str) -> dict[str, Any]:
    import duckdb
    from pyspark.sql import SparkSession

    import sqlanon

    folder = Path(workdir)
    con = duckdb.connect()
    con.execute("SELECT setseed($1)", [(n % 997) / 1000])
    first = folder / "t_0.parquet"
    con.execute(GENERATE.format(path=first), [0, n])
    con.execute("CREATE TABLE t AS SELECT * FROM read_parquet($1)", [str(first)])
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("sqlanon-bench")
        .config("spark.sql.warehouse.dir", str(folder / "warehouse"))
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.local.dir", str(folder / "local"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    sqlanon.install(spark)

    def files(table: str) -> dict[str, int]:
        if not spark.catalog.tableExists(table):
            return {}
        spark.sql(f"REFRESH TABLE {table}").collect()
        return {
            f: os.path.getsize(f.removeprefix("file:")) for f in spark.table(table).inputFiles()
        }

    def load(path: Path) -> None:
        spark.sql("DROP TABLE IF EXISTS t").collect()
        spark.read.parquet(str(path)).write.saveAsTable("t")

    tables = ("sqlanon.fam__rows", "sqlanon.fam__closed")
    out: list[dict[str, Any]] = []
    path = first
    for step in range(later + 1):
        if step:
            path = change(con, n, step, folder)
        load(path)
        before = {t: files(t) for t in tables}
        start = time.perf_counter()
        summary = sqlanon.release_ke(
            spark, "t", "fam", key="id", sensitive="s", quasi=QUASI, k=K, e=E
        )
        seconds = time.perf_counter() - start
        version = int(summary["version"])
        added = {}
        for table in tables:
            now = files(table)
            new = [f for f in now if f not in before[table]]
            added[table] = {"files": len(new), "bytes": sum(now[f] for f in new)}
        bounds = files(f"sqlanon.fam_v{version}_bounds")
        appended, closed = spark.sql(
            "SELECT (SELECT count(*) FROM sqlanon.fam__rows WHERE sqlanon_first = :v), "
            "(SELECT count(*) FROM sqlanon.fam__closed WHERE sqlanon_last = :v - 1)",
            args={"v": version},
        ).collect()[0]
        out.append(
            {
                "version": version,
                "s": seconds,
                "rows_published": summary["rows_published"],
                "groups": summary["groups"],
                "appended": int(appended),
                "closed": int(closed),
                "rows_files": added[tables[0]]["files"],
                "rows_bytes": added[tables[0]]["bytes"],
                "closed_files": added[tables[1]]["files"],
                "closed_bytes": added[tables[1]]["bytes"],
                "bounds_bytes": sum(bounds.values()),
            }
        )
        print(json.dumps(out[-1]), file=sys.stderr, flush=True)
    # the layout before: each version a table of its own, written whole
    for row in out:
        spark.table(f"fam_v{row['version']}").write.saveAsTable(f"whole_{row['version']}")
        row["whole_bytes"] = sum(files(f"whole_{row['version']}").values())
    total = sum(files(tables[0]).values()) + sum(files(tables[1]).values())
    result = {"n": n, "releases": out, "stored_bytes": total, "version": spark.version}
    spark.stop()
    con.close()
    return result


def run_child(n: int, later: int, workdir: Path) -> dict[str, Any]:
    workdir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(n), str(later), str(workdir)],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"child failed:\n{done.stderr[-4000:]}")
    shutil.rmtree(workdir, ignore_errors=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _kib(n_bytes: float) -> str:
    return f"{n_bytes / 1024:,.0f}"


def report(results: list[dict[str, Any]]) -> str:
    lines = [
        "### Bytes a (k,e) release writes on Spark: versions share their rows",
        "",
        f"`bench/spark_incremental.py`, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores, Spark {results[0]['version']} `local[2]` (driver memory "
        f"2g, shuffle partitions 8, AQE on), Python {platform.python_version()}. Synthetic "
        f"rows (those of `bench/ke_release.py`) released with `{CALL}`; then, before each "
        "later release, n/1000 records deleted, n/1000 sensitive values and n/1000 ages "
        "changed, n/1000 records inserted. *Added*: the parquet files the release added to "
        "the family's rows (`sqlanon.fam__rows`) and closed rows (`sqlanon.fam__closed`); "
        "*appended* / *closed*: their rows; *bounds*: the version's own bounds table; "
        "*whole version*: the version's rows written as one parquet table (what a table "
        "per version, the layout before, wrote at every release). One run, on a machine "
        f"shared with other work (load average at the end: {os.getloadavg()[0]:.1f}): "
        "seconds are indicative only, bytes are not.",
        "",
        "| rows | version | release s | rows published | groups | appended | closed "
        "| files added (rows + closed) | KiB added (rows + closed) | bytes / appended row "
        "| bounds KiB | whole version KiB | added / whole |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        for r in result["releases"]:
            added = r["rows_bytes"] + r["closed_bytes"]
            per_row = r["rows_bytes"] / r["appended"] if r["appended"] else 0.0
            lines.append(
                f"| {result['n']:,} | {r['version']} | {r['s']:.1f} | "
                f"{r['rows_published']:,} | {r['groups']:,} | {r['appended']:,} | "
                f"{r['closed']:,} | {r['rows_files']} + {r['closed_files']} | "
                f"{_kib(r['rows_bytes'])} + {_kib(r['closed_bytes'])} | {per_row:.1f} | "
                f"{_kib(r['bounds_bytes'])} | {_kib(r['whole_bytes'])} | "
                f"{added / r['whole_bytes']:.3f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--later", type=int, default=3)
    parser.add_argument("--no-report", action="store_true", help="print, do not write")
    parser.add_argument(
        "--results", type=Path, help="JSON lines: add each size's result, report them all"
    )
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        n, later, workdir = args.child
        print(json.dumps(spark_child(int(n), int(later), workdir), default=str))
        return
    results = []
    with tempfile.TemporaryDirectory(prefix="sqlanon_spark_incremental_") as tmp:
        for n in args.sizes:
            results.append(run_child(n, args.later, Path(tmp) / str(n)))
            print(json.dumps(results[-1]), flush=True)
            if args.results:
                with args.results.open("a") as saved:
                    print(json.dumps(results[-1]), file=saved)
    if args.results:
        lines = args.results.read_text().splitlines()
        results = sorted((json.loads(line) for line in lines), key=lambda r: r["n"])
    body = report(results)
    print(body)
    if not args.no_report:
        import report as bench_report

        print("wrote", bench_report.replace_section("spark_incremental", body))


if __name__ == "__main__":
    main()
