"""Rewrite time against query size, up to the analyst limits (issue 23).

Releases of the bundled Adult data (1,427 records) in an in-memory DuckDB: (k,e)
``adult_ke`` (quasi age, sex, education; k=5, e=20), lHD ``adult_arx`` (quasi age,
marital_status, sex by the bundled ARX hierarchies, 136 labels for age) and lHD
``adult_widths`` (the same with age by a widths hierarchy of 5/10/20 years), l=3.

For each release and WHERE shape, queries of growing size up to the most terms that fit
the default limits (10,000 tokens, 50,000 characters) are rewritten with
``sqlanon.rewriter.rewrite`` (parse, checks, build, SQL text; no database access); the
time is the median of ``--runs`` runs (CPU time of the process, and the wall clock).
Linear growth shows as a constant time per token, and as a constant number of Python
calls per token (the work, free of the clock's noise; tests/test_rewrite_scaling.py
counts the same).

    .venv/bin/python bench/rewrite_speed.py [--runs 5] [--no-report]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import duckdb
from sqlglot.dialects.dialect import Dialect

import sqlanon
from sqlanon import demo, intervals
from sqlanon.duckdb.session import DuckDBSession
from sqlanon.rewriter import rewrite
from sqlanon.rewriter.limits import DEFAULT_LIMITS

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report  # noqa: E402  (bench/ is not a package)

SELECT = "SELECT SUM(capital_loss) AS s FROM {table} WHERE "


def _chain(joiner: str, term: Callable[[int], str]) -> Callable[[int], str]:
    return lambda n: f" {joiner} ".join(term(i) for i in range(n))


SEX = ("Male", "Female")
SHAPES: dict[str, tuple[str, Callable[[int], str]]] = {
    "ORs of equalities": ("`age = 0 OR age = 1 OR ...`", _chain("OR", lambda i: f"age = {i}")),
    "IN list": ("`age IN (0, 1, 2, ...)`", lambda n: f"age IN ({', '.join(map(str, range(n)))})"),
    "ANDs of inequalities": (
        "`age <> 0 AND age <> 1 AND ...`",
        _chain("AND", lambda i: f"age <> {i}"),
    ),
    "ORs over two columns": (
        "`age = 0 OR sex = 'Male' OR age = 2 OR ...`",
        _chain("OR", lambda i: f"sex = '{SEX[i % 4 // 2]}'" if i % 2 else f"age = {i}"),
    ),
    "ORs of BETWEENs": (
        "`age BETWEEN 0 AND 2 OR age BETWEEN 1 AND 3 OR ...`",
        _chain("OR", lambda i: f"age BETWEEN {i} AND {i + 2}"),
    ),
    "ORs of two-column ANDs": (
        "`(age = 0 AND sex = 'Male') OR (age = 1 AND sex = 'Female') OR ...`",
        _chain("OR", lambda i: f"(age = {i} AND sex = '{SEX[i % 2]}')"),
    ),
}
SLOW = "ORs of two-column ANDs"
RELEASES = {"adult_ke": "(k,e)", "adult_arx": "lHD, ARX hierarchy", "adult_widths": "lHD, widths"}


def _query(table: str, where: Callable[[int], str]) -> Callable[[int], str]:
    return lambda n: SELECT.format(table=table) + where(n)


def build(con: duckdb.DuckDBPyConnection, folder: Path) -> dict[str, Any]:
    """The three releases; the rewriter's catalog of them."""
    sqlanon.install(con)
    demo.load_adult(con, "adult")
    con.execute("CREATE TABLE adult_w AS SELECT * FROM adult")
    bundled = Path(sqlanon.__file__).parent / "data" / "hierarchies"
    for path in bundled.glob("adult_hierarchy_*.csv"):
        (folder / path.name.replace("adult_", "adult_w_", 1)).write_text(path.read_text())
    sqlanon.load_hierarchies(con, "adult")
    sqlanon.load_hierarchies(con, "adult_w", str(folder))
    con.execute("SELECT sqlanon_hierarchy_widths('adult_w', 'age', [5, 10, 20])")
    sqlanon.release_ke(
        con, "adult", "adult_ke", key="id", sensitive="capital_loss",
        quasi=["age", "sex", "education"], k=5, e=20,
    )  # fmt: skip
    for source, family in (("adult", "adult_arx"), ("adult_w", "adult_widths")):
        sqlanon.release_lhd(
            con, source, family, key="id", quasi=["age", "marital_status", "sex"],
            sensitive=["capital_loss"], l=3,
        )  # fmt: skip
    session = DuckDBSession(con)
    try:
        return intervals.release_catalog(session)
    finally:
        session.close()


def token_count(sql: str) -> int:
    return len(Dialect.get_or_raise("duckdb").tokenize(sql))


def largest(sql_of: Callable[[int], str]) -> int:
    """The most terms whose query stays within the default limits."""

    def fits(n: int) -> bool:
        sql = sql_of(n)
        limits = DEFAULT_LIMITS
        return len(sql) <= limits.max_query_chars and token_count(sql) <= limits.max_query_tokens

    low, high = 1, 2
    while fits(high):
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def timed(sql: str, catalog: dict[str, Any], runs: int) -> tuple[float, float]:
    """Medians of the wall time and of this process's CPU time of one rewrite, seconds."""
    rewrite(sql, catalog)  # warm: dialect, fixed fragments
    wall, cpu = [], []
    for _ in range(runs):
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        rewrite(sql, catalog)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def python_calls(sql: str, catalog: dict[str, Any]) -> int:
    """Python function calls one rewrite makes (``sys.setprofile``): the work, free of
    the clock's noise on a shared machine (tests/test_rewrite_scaling.py counts the same)."""
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        count += event == "call"

    sys.setprofile(profile)
    try:
        rewrite(sql, catalog)
    finally:
        sys.setprofile(None)
    return count


def measure(catalog: dict[str, Any], runs: int) -> list[dict[str, Any]]:
    rows = []
    for table, model in RELEASES.items():
        for shape, (_, where) in SHAPES.items():
            sql_of = _query(table, where)
            top = largest(sql_of)
            for n in (top // 8, top // 4, top // 2, top):
                sql = sql_of(n)
                wall, cpu = timed(sql, catalog, runs)
                tokens = token_count(sql)
                rows.append(
                    {"release": f"{model}: `{table}`", "shape": shape, "terms": n,
                     "tokens": tokens, "ms": 1000 * cpu, "wall_ms": 1000 * wall,
                     "us_token": 1e6 * cpu / tokens,
                     "calls_token": python_calls(sql, catalog) / tokens}
                )  # fmt: skip
                print(rows[-1], flush=True)
    return rows


def table(rows: list[dict[str, Any]], runs: int) -> str:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["release"], row["shape"]), []).append(row)
    lines = [
        "| release | WHERE | terms | tokens | **rewrite CPU ms** | wall ms | CPU µs per token "
        "| calls per token | CPU µs per token, largest / smallest "
        "| calls per token, largest / smallest |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for group in groups.values():
        first, last = group[0], group[-1]
        growth = (
            f"{last['us_token'] / first['us_token']:.2f} "
            f"| {last['calls_token'] / first['calls_token']:.2f}"
        )
        for row in group:
            lines.append(
                f"| {row['release']} | {row['shape']} | {row['terms']:,} | {row['tokens']:,} "
                f"| **{row['ms']:,.0f}** | {row['wall_ms']:,.0f} | {row['us_token']:.0f} "
                f"| {row['calls_token']:.0f} "
                f"| {growth if row is last else ' | '} |"
            )
    at_limit = [group[-1] for group in groups.values()]
    slow = [r for r in at_limit if r["shape"] == SLOW and "lHD" in r["release"]]
    fast = max(r["ms"] for r in at_limit if r not in slow)
    slowest = ", ".join(f"{r['ms']:,.0f} ms on {r['release']}" for r in slow)
    shapes = "\n".join(f"- {name}: {example}" for name, (example, _) in SHAPES.items())
    return (
        "### Rewrite time against query size, up to the analyst limits\n\n"
        f"{_machine()} Releases of the bundled Adult data (1,427 records): (k,e) "
        "`adult_ke` (age, sex, education; k=5, e=20), lHD `adult_arx` (age, "
        "marital_status, sex by the bundled ARX hierarchies: 136 labels for age) and lHD "
        "`adult_widths` (age by widths 5/10/20), l=3. Each query is rewritten by "
        "`sqlanon.rewriter.rewrite` (tokenize, parse, checks, build, SQL text; no database "
        f"access), medians of {runs} runs after one warm-up of the CPU time of the "
        "process (the wall clock, shown too, adds whatever else the shared machine ran "
        "meanwhile); sizes are 1/8, 1/4, 1/2 and all of the most terms that fit the default "
        "limits (10,000 tokens, 50,000 characters). Linear growth shows as a constant time "
        "per token; as timings stay noisy, the work is also counted as the Python function "
        "calls of one rewrite (`sys.setprofile`, as tests/test_rewrite_scaling.py does): "
        "the last two columns compare the largest query with the smallest. Shapes:\n\n"
        f"{shapes}\n\n"
        f"At the limits: at most **{fast:,.0f} ms** of CPU for every shape on every release but "
        f"{SLOW} on lHD releases ({slowest}): each such term is two components judged "
        "on every label of their columns.\n\n" + "\n".join(lines) + "\n"
    )


def _machine() -> str:
    return (
        f"`bench/rewrite_speed.py`, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores, DuckDB {duckdb.__version__}, "
        f"Python {platform.python_version()}."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-report", action="store_true", help="print, do not write")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sqlanon_rewrite_") as tmp:
        con = duckdb.connect()
        try:
            catalog = build(con, Path(tmp))
        finally:
            con.close()
    markdown = table(measure(catalog, args.runs), args.runs)
    print(markdown)
    if not args.no_report:
        print("wrote", report.replace_section("rewrite_speed", markdown))


if __name__ == "__main__":
    main()
