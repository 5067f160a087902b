"""What reading histories instead of records saves the audit (issue 27), on DuckDB.

Synthetic people (age 74 values, zip 20, disease 10, a numeric s with 40 values) in a
fresh DuckDB file: an lHD family (quasi age and zip, l = 3) and a (k,e) family of s
(k = 3, e = 20) on one source, two versions each (n rows, then n/10 more and n/100 of
the first deleted, so ghosts). The audit of the domain twice, each in its own process:
*records*, the reads as they were before issue 27 (``tests/audit_reference.py``: one
row per published record and attribute per release into the driver, one attacker entry
per record), and *histories*, ``sqlanon.audit`` (the engine groups the records by
history and values; the driver reads one row per distinct history).

    .venv/bin/python bench/audit_histories.py [--sizes 100000 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

import sqlanon

ROOT = Path(__file__).resolve().parents[1]


def make(path: Path, n: int) -> None:
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    people = (
        "SELECT i AS id, 18 + hash(i, 1) % 74 AS age, hash(i, 2) % 20 AS zip, "
        "'d' || CAST(hash(i, 3) % 10 AS VARCHAR) AS disease, hash(i, 4) % 40 * 10 AS s "
        "FROM range(?, ?) AS t(i)"
    )
    con.execute(f"CREATE TABLE t AS {people}", [0, n])  # noqa: S608
    sqlanon.hierarchy_widths(con, "t", "age", [5, 10, 20])
    sqlanon.hierarchy_widths(con, "t", "zip", [5, 10])

    def release() -> None:
        sqlanon.release_lhd(con, "t", "t_l", key="id", quasi=["age", "zip"],
                            sensitive=["disease"], l=3)  # fmt: skip
        sqlanon.release_ke(con, "t", "t_ke", key="id", sensitive="s", quasi=["age"], k=3, e=20)

    release()
    con.execute(f"INSERT INTO t {people}", [n, n + n // 10])  # noqa: S608
    con.execute("DELETE FROM t WHERE id % 100 = 7 AND id < ?", [n])
    release()
    con.close()


def child(path: str, how: str) -> dict[str, Any]:
    from sqlanon.duckdb.session import DuckDBSession
    from sqlanon.state import audit_reads, catalog

    read: list[int] = []  # rows of each result the driver reads through the session
    for name in ("query", "query_dicts", "query_arrays"):
        real = getattr(DuckDBSession, name)

        def counted(self: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            out = _real(self, *args, **kwargs)
            read.append(len(next(iter(out.values()))) if isinstance(out, dict) else len(out))
            return out

        setattr(DuckDBSession, name, counted)
    con = duckdb.connect(path)
    session = DuckDBSession(con)
    start = time.perf_counter()
    if how == "histories":
        audit = audit_reads.audit_domain_of(session, "main.t")
    else:
        sys.path.insert(0, str(ROOT))
        from tests.audit_reference import audit_per_record

        chosen = sorted(catalog.releases(session), key=lambda r: r.seq)
        audit = audit_per_record(session, chosen, False)
    seconds = time.perf_counter() - start
    records = con.execute(
        "SELECT count(DISTINCT record_key) FROM sqlanon.members WHERE status = 'published'"
    ).fetchone()
    return {
        "seconds": seconds,
        "read": sum(read),
        "largest": max(read),
        "records": int(records[0]) if records else 0,
        "exposed": [r["exposed"] for r in audit],
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run(path: Path, how: str) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(path), how]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--no-report", action="store_true")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    lines = [
        "### The audit on DuckDB: one row per record vs one per distinct history\n",
        f"`bench/audit_histories.py`, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores, DuckDB {duckdb.__version__}, one run each, each in its "
        "own process. Synthetic rows (age 74 values, zip 20, disease 10, s 40 values); an "
        "lHD family (quasi age, zip; l = 3) and a (k,e) family of s (quasi age; k = 3, "
        "e = 20) on one source, two versions each (then n/10 rows more, 1% deleted: "
        "ghosts), 4 releases in the domain. *records*: the reads before issue 27 "
        "(`tests/audit_reference.py`: every published record of every release read into "
        "the driver, one attacker entry per record); *histories*: `sqlanon.audit` (the "
        "engine groups records by history and values, `sqlanon/sql/audit_histories.sql`). "
        "*Driver rows*: rows every query of the audit returned to Python (in all; the "
        "largest result); *peak*: the process's peak RSS.\n",
        "| rows | published records | path | driver rows | largest result | audit s | peak MiB "
        "| exposed per release |",
        "|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory(prefix="sqlanon_audit_") as tmp:
        for n in args.sizes:
            path = Path(tmp) / f"a{n}.duckdb"
            make(path, n)
            for how in ("records", "histories"):
                r = run(path, how)
                lines.append(
                    f"| {n:,} | {r['records']:,} | {how} | {r['read']:,} | {r['largest']:,} "
                    f"| {r['seconds']:.2f} | {r['peak_mib']:.0f} | {r['exposed']} |"
                )
    markdown = "\n".join(lines) + "\n"
    print(markdown)
    if not args.no_report:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import report

        print("wrote", report.replace_section("audit-histories", markdown))


if __name__ == "__main__":
    main()
