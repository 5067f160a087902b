"""(k,e) releases on Spark (local mode) beside DuckDB, each against its own sorted copy.

For each size n, one set of synthetic rows (the columns of ``bench/ke_release.py``: id,
age, zip, sex and a skewed integer S) is written once as parquet, then loaded into a
fresh Spark warehouse and a fresh DuckDB file. Each engine then times, one after the
other:

  (a) its own sorted copy of the table: Spark ``spark.table('t').orderBy('s')
      .write.saveAsTable('t2')``, DuckDB ``CREATE TABLE t2 AS SELECT * FROM t ORDER BY
      s`` (the yardstick: one sort and one write of the whole table);
  (b) the first release ``sqlanon.release_ke(<engine>, 't', 'fam', key='id',
      sensitive='s', quasi=['age', 'zip', 'sex'], k=5, e=20)``;
  then the same n/10 new rows are appended to both and
  (c) the second release; (d) the sorted copy again.

Spark runs in its own child process per size (``local[2]``, driver memory 2g, AQE on,
``spark.sql.shuffle.partitions`` = 8): a release's Spark jobs are tagged with a job group,
so the stages (each a shuffle boundary) it ran are counted from Spark's status tracker,
and its shuffle and input bytes read from Spark's event log; the Python driver's peak
RSS (VmHWM) shows what the driver holds. DuckDB runs in a child
of its own on the same parquet files. Ratios are release / the engine's own sort, per
repetition, then the median.

    .venv/bin/python bench/spark_release.py [--sizes 1000000 10000000] [--reps 2]
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

QUASI = ["age", "zip", "sex"]
K, E = 5, 20.0
CALL = (
    "sqlanon.release_ke(<engine>, 't', 'fam', key='id', sensitive='s', "
    "quasi=['age', 'zip', 'sex'], k=5, e=20)"
)

# The rows of bench/ke_release.py, written as parquet by DuckDB (no rows in Python).
GENERATE = """
COPY (
SELECT range AS id,
       CAST(17 + floor(random() * 74) AS INTEGER) AS age,
       CAST(10000 + floor(random() * 90000) AS INTEGER) AS zip,
       CASE WHEN random() < 0.5 THEN 'F' ELSE 'M' END AS sex,
       CAST(round(exp(6 + sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())))
            AS INTEGER) AS s
FROM range($1, $2)
) TO '{path}' (FORMAT parquet)
"""


def vm_hwm_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def generate(folder: Path, n: int, seed: int) -> tuple[Path, Path]:
    """Parquet files of the first n rows and of the n/10 appended ones."""
    import duckdb

    con = duckdb.connect()
    con.execute("SELECT setseed($1)", [seed / 1000])
    first, extra = folder / f"rows_{n}.parquet", folder / f"extra_{n}.parquet"
    con.execute(GENERATE.format(path=first), [0, n])
    con.execute(GENERATE.format(path=extra), [n, n + n // 10])
    con.close()
    return first, extra


# ---------------------------------------------------------------------------- children


def spark_child(first: str, extra: str, workdir: str) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    import sqlanon

    events = Path(workdir) / "events"
    events.mkdir(parents=True, exist_ok=True)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("sqlanon-bench")
        .config("spark.sql.warehouse.dir", str(Path(workdir) / "warehouse"))
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.local.dir", str(Path(workdir) / "local"))
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", str(events))
        .config("spark.eventLog.compress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    tracker = spark.sparkContext.statusTracker()
    sqlanon.install(spark)
    spark.read.parquet(first).write.saveAsTable("t")

    def timed(label: str, work: Any) -> dict[str, Any]:
        spark.sparkContext.setJobGroup(label, label)
        start = time.perf_counter()
        result = work()
        seconds = time.perf_counter() - start
        jobs = tracker.getJobIdsForGroup(label)
        stages = set()
        for job in jobs:
            info = tracker.getJobInfo(job)
            if info is not None:
                stages.update(info.stageIds)
        return {"s": seconds, "jobs": len(jobs), "stages": len(stages), "result": result}

    def sort() -> None:
        spark.table("t").orderBy("s").write.saveAsTable("t2")
        spark.sql("DROP TABLE t2")

    def release() -> dict[str, Any]:
        return dict(
            sqlanon.release_ke(spark, "t", "fam", key="id", sensitive="s", quasi=QUASI, k=K, e=E)
        )

    out: dict[str, Any] = {"a": timed("sort1", sort), "b": timed("release1", release)}
    spark.read.parquet(extra).write.mode("append").saveAsTable("t")
    out["c"] = timed("release2", release)
    out["d"] = timed("sort2", sort)
    out["python_hwm_kib"] = vm_hwm_kib()
    out["version"] = spark.version
    spark.stop()
    out["shuffle"] = shuffle_bytes(events)
    return out


def shuffle_bytes(events: Path) -> dict[str, dict[str, int]]:
    """Per job group: shuffle bytes written and read, and input bytes, summed over its
    completed stages, from Spark's event log."""
    group_of_stage: dict[int, str] = {}
    out: dict[str, dict[str, int]] = {}
    for log in (p for p in events.rglob("*") if p.is_file() and not p.name.startswith(".")):
        with open(log) as lines:
            for line in lines:
                event = json.loads(line)
                kind = event.get("Event")
                if kind == "SparkListenerJobStart":
                    group = (event.get("Properties") or {}).get("spark.jobGroup.id")
                    for stage in event.get("Stage IDs", []):
                        if group:
                            group_of_stage[stage] = group
                elif kind == "SparkListenerStageCompleted":
                    info = event["Stage Info"]
                    group = group_of_stage.get(info["Stage ID"])
                    if group is None:
                        continue
                    sums = out.setdefault(group, {"written": 0, "read": 0, "input": 0})
                    for acc in info.get("Accumulables", []):
                        name, value = acc.get("Name", ""), acc.get("Value", 0)
                        if name == "internal.metrics.shuffle.write.bytesWritten":
                            sums["written"] += int(value)
                        elif name == "internal.metrics.shuffle.read.remoteBytesRead":
                            sums["read"] += int(value)
                        elif name == "internal.metrics.shuffle.read.localBytesRead":
                            sums["read"] += int(value)
                        elif name == "internal.metrics.input.bytesRead":
                            sums["input"] += int(value)
    return out


def duckdb_child(first: str, extra: str, workdir: str) -> dict[str, Any]:
    import duckdb

    import sqlanon

    con = duckdb.connect(str(Path(workdir) / "bench.duckdb"))
    sqlanon.install(con)
    con.execute("CREATE TABLE t AS SELECT * FROM read_parquet($1)", [first])

    def timed(work: Any) -> dict[str, Any]:
        start = time.perf_counter()
        result = work()
        return {"s": time.perf_counter() - start, "result": result}

    def sort() -> None:
        con.execute("CREATE TABLE t2 AS SELECT * FROM t ORDER BY s")
        con.execute("DROP TABLE t2")

    def release() -> dict[str, Any]:
        return dict(
            sqlanon.release_ke(con, "t", "fam", key="id", sensitive="s", quasi=QUASI, k=K, e=E)
        )

    out: dict[str, Any] = {"a": timed(sort), "b": timed(release)}
    con.execute("INSERT INTO t SELECT * FROM read_parquet($1)", [extra])
    out["c"] = timed(release)
    out["d"] = timed(sort)
    out["version"] = duckdb.__version__
    con.close()
    return out


def run_child(engine: str, first: Path, extra: Path, workdir: Path) -> dict[str, Any]:
    workdir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, __file__, "--child", engine, str(first), str(extra), str(workdir)],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"{engine} child failed:\n{done.stderr[-4000:]}")
    shutil.rmtree(workdir, ignore_errors=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# ---------------------------------------------------------------------------- report


def _mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.0f}"


def report(results: dict[int, list[dict[str, Any]]], reps: int) -> str:
    some = next(iter(results.values()))[0]
    lines = [
        "### (k,e) release on Spark (local mode) beside DuckDB, each vs its own sorted copy",
        "",
        f"`bench/spark_release.py`, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "  # noqa: S608 - markdown
        f"{os.cpu_count()} cores, Spark {some['spark']['version']} `local[2]` (driver "
        f"memory 2g, shuffle partitions 8, AQE on), DuckDB {some['duckdb']['version']}, "
        f"Python {platform.python_version()}. The same synthetic rows (those of "
        "`bench/ke_release.py`) as parquet, loaded into a fresh Spark warehouse and a fresh "
        "DuckDB file; (a)/(d) each engine's sorted copy (Spark: `spark.table('t').orderBy('s')"
        ".write.saveAsTable('t2')`; DuckDB: `CREATE TABLE t2 AS SELECT * FROM t ORDER BY s`), "
        f"(b) the first release `{CALL}`, (c) the second after appending n/10 rows. Medians "
        f"over {reps} repetitions; ratios per repetition, then the median. *Stages*: the "
        "Spark stages of the release's jobs (each stage boundary is a shuffle or a "
        "collect); *shuffle written*: bytes the release's stages wrote for shuffles, *input "
        "read*: bytes its stages read from tables (both from Spark's event log); "
        "the driver JVM runs under `spark.driver.memory` 2g, which in local mode also holds "
        "the executors' sort and shuffle buffers (Spark spills past it); *driver Python*: "
        "the Python driver's peak RSS over the whole child (session, loads, four timings): "
        "the planner's aggregates, never the rows. Target (issue 14): Spark release <= 3x "
        "Spark's own sorted copy. Load "
        f"average at the end: {os.getloadavg()[0]:.1f}.",
        "",
        "| rows (v1 → v2) | engine | (a) sort v1 s | (b) release v1 s | **b/a** "
        "| (d) sort v2 s | (c) release v2 s | **c/d** | jobs v1 / v2 | stages v1 / v2 "
        "| shuffle written MiB v1 / v2 | input read MiB v1 / v2 "
        "| driver Python MiB | groups v1 / v2 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n, reps_ in sorted(results.items()):
        for engine in ("spark", "duckdb"):
            rows = [r[engine] for r in reps_]

            def med(step: str, key: str = "s", rows: list[dict[str, Any]] = rows) -> float:
                return statistics.median(float(r[step][key]) for r in rows)

            def ratio(top: str, bottom: str, rows: list[dict[str, Any]] = rows) -> float:
                return statistics.median(r[top]["s"] / r[bottom]["s"] for r in rows)

            last = rows[-1]
            groups = f"{last['b']['result']['groups']:,} / {last['c']['result']['groups']:,}"
            if engine == "spark":

                def moved(group: str, what: str, rows: list[dict[str, Any]] = rows) -> str:
                    return _mib(statistics.median(r["shuffle"][group][what] for r in rows))

                spark_cols = (
                    f"{med('b', 'jobs'):.0f} / {med('c', 'jobs'):.0f} | "
                    f"{med('b', 'stages'):.0f} / {med('c', 'stages'):.0f} | "
                    f"{moved('release1', 'written')} / {moved('release2', 'written')} | "
                    f"{moved('release1', 'input')} / {moved('release2', 'input')} | "
                    f"{_mib(statistics.median(r['python_hwm_kib'] * 1024 for r in rows))}"
                )
            else:
                spark_cols = "– | – | – | – | –"
            lines.append(
                f"| {n:,} → {n + n // 10:,} | {engine} | {med('a'):.2f} | {med('b'):.2f} | "
                f"**{ratio('b', 'a'):.1f}** | {med('d'):.2f} | {med('c'):.2f} | "
                f"**{ratio('c', 'd'):.1f}** | {spark_cols} | {groups} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--no-report", action="store_true", help="print, do not write")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        engine, first, extra, workdir = args.child
        work = spark_child if engine == "spark" else duckdb_child
        print(json.dumps(work(first, extra, workdir), default=str))
        return
    results: dict[int, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="sqlanon_spark_bench_") as tmp:
        root = Path(tmp)
        for n in args.sizes:
            first, extra = generate(root, n, seed=n % 997)
            for rep in range(args.reps):
                r = {
                    engine: run_child(engine, first, extra, root / f"{engine}_{n}_{rep}")
                    for engine in ("spark", "duckdb")
                }
                results.setdefault(n, []).append(r)
                print(
                    f"n={n:,} rep {rep}: "
                    + "; ".join(
                        f"{e} sort {r[e]['a']['s']:.2f}s release {r[e]['b']['s']:.2f}s "
                        f"release2 {r[e]['c']['s']:.2f}s sort2 {r[e]['d']['s']:.2f}s"
                        for e in r
                    ),
                    flush=True,
                )
            first.unlink()
            extra.unlink()
    body = report(results, args.reps)
    print(body)
    if not args.no_report:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import report as bench_report

        print("wrote", bench_report.replace_section("spark_release", body))


if __name__ == "__main__":
    main()
