"""What the Python driver holds for an lHD release on Spark (local mode): the engine
path (units) beside the row path (every row collected), at each size.

Synthetic rows, made by Spark SQL (no rows in Python): id, age (17-90), zip (20
values), disease (10 values); quasi-identifiers age and zip (interval hierarchies of
widths 5, 10, 20 and 5, 10), sensitive disease, l = 3. Each (path, size) runs in a child
process of its own (``local[2]``, driver memory 2g, AQE on, 8 shuffle partitions) on a
fresh warehouse: the table is written once, then one first release is timed. Reported:
the seconds of the release, the Python driver's peak RSS (VmHWM) before and after it,
the largest result it collected through sqlanon's session (rows) and the units the
planner read. The row path is the engine path turned off
(``sqlanon.release.lhd_engine.release`` returning None), as tests/test_lhd_engine.py
does.

    .venv/bin/python bench/spark_lhd_release.py [--sizes 100000 1000000] [--no-report]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GENERATE = """
SELECT id,
       CAST(17 + pmod(xxhash64(id, 1), 74) AS INT) AS age,
       CAST(10000 + pmod(xxhash64(id, 2), 20) AS INT) AS zip,
       concat('d', CAST(pmod(xxhash64(id, 3), 10) AS STRING)) AS disease
FROM range({n})
"""


def vm_hwm_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def child(n: int, path: str, warehouse: str) -> dict[str, Any]:
    """One release in this process; returns its figures."""
    import pyspark.sql as pyspark_sql

    import sqlanon
    from sqlanon.release import lhd_engine
    from sqlanon.spark.session import SparkSqlSession

    spark = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    sqlanon.install(spark)
    spark.sql(GENERATE.format(n=int(n))).write.saveAsTable("t")
    sqlanon.hierarchy_widths(spark, "t", "age", [5, 10, 20])
    sqlanon.hierarchy_widths(spark, "t", "zip", [5, 10])
    largest = [0]
    units = [0]
    for name in ("query", "query_dicts", "query_arrays"):
        real = getattr(SparkSqlSession, name)

        def counted(self: Any, sql: str, *args: Any, _real: Any = real, **kw: Any) -> Any:
            out = _real(self, sql, *args, **kw)
            rows = len(next(iter(out.values()))) if isinstance(out, dict) else len(out)
            largest[0] = max(largest[0], rows)
            if "AS first_key" in sql:
                units[0] = rows
            return out

        setattr(SparkSqlSession, name, counted)
    if path == "rows":
        lhd_engine.release = lambda *a, **k: None  # type: ignore[assignment]
    before = vm_hwm_kib()
    start = time.perf_counter()
    summary = sqlanon.release_lhd(
        spark, "t", "fam", key="id", quasi=["age", "zip"], sensitive=["disease"], l=3
    )
    seconds = time.perf_counter() - start
    spark.stop()
    return {
        "n": n,
        "path": path,
        "seconds": round(seconds, 1),
        "driver_hwm_before_mib": round(before / 1024, 1),
        "driver_hwm_after_mib": round(vm_hwm_kib() / 1024, 1),
        "largest_result_rows": largest[0],
        "units": units[0],
        "rows_published": summary["rows_published"],
        "groups": summary["groups"],
    }


def report(results: list[dict[str, Any]]) -> str:
    """The BENCHMARKS.md section."""
    import pyspark

    before = max((r["driver_hwm_before_mib"] for r in results), default=0.0)
    lines = [
        "### lHD release on Spark (local mode): what the Python driver holds, units vs rows",
        "",
        f"`bench/spark_lhd_release.py`, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores, Spark {pyspark.__version__} `local[2]` (driver memory 2g, "
        "shuffle partitions 8, AQE on), one run each, each in a child process on a fresh "
        "warehouse. Synthetic rows made by Spark SQL: age (74 values), zip (20), disease "
        "(10): at most 14,800 units; `sqlanon.release_lhd(spark, 't', 'fam', key='id', "
        "quasi=['age', 'zip'], sensitive=['disease'], l=3)`, a first version. *units*: the "
        "engine path; *rows*: the row path every Spark lHD release took before issue 27 "
        "(the engine path turned off). *Largest result*: the most rows one query returned "
        "to the driver through sqlanon's session; *driver Python*: the Python driver's peak "
        f"RSS (VmHWM) after the release ({before:.0f} MiB before it, with the session "
        f"started and the table written). Load average at the end: {os.getloadavg()[0]:.1f}.",
        "",
        "| rows | path | largest result (rows) | driver Python MiB | release s | classes |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        path = "units" if r["path"] == "engine" else "rows"
        lines.append(
            f"| {r['n']:,} | {path} | {r['largest_result_rows']:,} | "
            f"{r['driver_hwm_after_mib']:,.0f} | {r['seconds']:.1f} | {r['groups']:,} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--paths", nargs="+", default=["engine", "rows"])
    parser.add_argument("--child", nargs=3, metavar=("N", "PATH", "WAREHOUSE"))
    parser.add_argument("--no-report", action="store_true", help="print, do not write")
    args = parser.parse_args()
    if args.child:
        n, path, warehouse = args.child
        print(json.dumps(child(int(n), path, warehouse)))
        return
    results = []
    for n in args.sizes:
        for path in args.paths:
            with tempfile.TemporaryDirectory() as folder:
                done = subprocess.run(
                    [sys.executable, __file__, "--child", str(n), path, str(Path(folder) / "w")],
                    capture_output=True, text=True, check=False, cwd=folder,
                )  # fmt: skip
                lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
                if done.returncode or not lines:
                    print(json.dumps({"n": n, "path": path, "error": done.stderr[-2000:]}))
                    continue
                print(lines[-1], flush=True)
                results.append(json.loads(lines[-1]))
    body = report(results)
    print(body)
    if not args.no_report:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import report as bench_report

        print("wrote", bench_report.replace_section("spark_lhd_release", body))


if __name__ == "__main__":
    main()
