"""How a (k,e) release through DuckDB compares with sorting the table, and its memory.

For each size n (synthetic rows made by DuckDB itself, so 10^8 rows need no Python
memory: id BIGINT, age INTEGER, zip INTEGER, sex VARCHAR and a skewed integer
S = round(lognormal(6, 1)), ~8k distinct values at 10^6), each repetition builds a fresh
DuckDB file in a temp dir and times, each in its own child process:

  (a) ``CREATE TABLE t2 AS SELECT * FROM t ORDER BY s`` (the yardstick: one sort and
      one write of the whole table), dropped again;
  (b) the first release ``sqlanon.release_ke(con, 't', 'fam', key='id', sensitive='s',
      quasi=['age', 'zip', 'sex'], k=5, e=20)``;
  (a1), (b1) the same two on a copy of the file made before (b), both under
      ``SET threads = 1`` ((a) and (b) use every core, DuckDB's default);
  then 10% new rows are appended and
  (c) the second release of the same family;
  (d) the sorted copy again, at the new size.

Ratios b/a, b1/a1 and c/d are taken per repetition (side by side on the same file) and
the median is reported. Peak memory: every child reads its own high-water RSS (VmHWM in
/proc/self/status) when done; the release's peak is reported both as is and minus the
VmHWM of a baseline child that imported sqlanon, opened the file and scanned every
column of ``t`` (so DuckDB paged the table in) and did nothing else.

    .venv/bin/python bench/ke_release.py [--sizes 10000 1000000 10000000 100000000] [--reps 3]
    .venv/bin/python bench/ke_release.py --profile 1000000   # where release time goes
                                                              # (section ke_release_profile)
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

import sqlanon
from sqlanon.duckdb.session import DuckDBSession

QUASI = ["age", "zip", "sex"]
K, E = 5, 20.0
SORT_SQL = "CREATE TABLE t2 AS SELECT * FROM t ORDER BY s"


# ----------------------------------------------------------------------------- data


def synthetic(n: int, first_id: int, seed: int) -> dict[str, np.ndarray]:
    """``n`` rows with ids first_id.. ; S is skewed with many duplicates."""
    rng = np.random.default_rng(seed)
    return {
        "id": np.arange(first_id, first_id + n, dtype=np.int64),
        "age": rng.integers(17, 91, n, dtype=np.int32),
        "zip": rng.integers(10_000, 100_000, n, dtype=np.int32),
        "sex": np.where(rng.random(n) < 0.5, "F", "M").astype(object),
        "s": np.rint(rng.lognormal(6.0, 1.0, n)).astype(np.int32),
    }


GENERATE_SQL = """
INSERT INTO t
SELECT range AS id,
       CAST(17 + floor(random() * 74) AS INTEGER) AS age,
       CAST(10000 + floor(random() * 90000) AS INTEGER) AS zip,
       CASE WHEN random() < 0.5 THEN 'F' ELSE 'M' END AS sex,
       -- lognormal(6, 1) by Box-Muller
       CAST(round(exp(6 + sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())))
            AS INTEGER) AS s
FROM range($1, $2)
"""


def generate_rows(con: duckdb.DuckDBPyConnection, first_id: int, n: int, seed: int) -> None:
    """``n`` rows with ids first_id.., generated inside DuckDB (the distribution of
    :func:`synthetic`; DuckDB's random() under setseed, repeatable up to threading)."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS t (id BIGINT, age INTEGER, zip INTEGER, sex VARCHAR, s INTEGER)"
    )
    con.execute("SELECT setseed(?)", [(seed % 1000) / 1000])
    con.execute(GENERATE_SQL, [first_id, first_id + n])


def build_file(path: Path, n: int, seed: int) -> None:
    con = duckdb.connect(str(path))
    try:
        sqlanon.install(con)
        generate_rows(con, 0, n, seed)
    finally:
        con.close()


def grow_file(path: Path, n: int, seed: int) -> int:
    """Append n/10 new rows; returns the new row count."""
    extra = n // 10
    con = duckdb.connect(str(path))
    try:
        generate_rows(con, n, extra, seed + 1)
    finally:
        con.close()
    return n + extra


# ---------------------------------------------------------------------- child processes


def vm_hwm_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def connect(db: str, threads: int = 0) -> duckdb.DuckDBPyConnection:
    """The file, with DuckDB's memory limit from $SQLANON_BENCH_MEMORY (e.g. 8GB) when
    set (sorts, joins and temporary tables beyond it spill to disk), and ``threads``
    threads (0: DuckDB's default, every core)."""
    limit = os.environ.get("SQLANON_BENCH_MEMORY")
    con = duckdb.connect(db, config={"memory_limit": limit} if limit else {})
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    return con


def child(mode: str, db: str, family: str, threads: int = 0) -> dict[str, Any]:
    """One measurement in this (fresh) process; prints JSON for the parent."""
    if mode == "profile":
        return {"mode": mode, "text": profile_release(db, family), "vm_hwm_kib": vm_hwm_kib()}
    con = connect(db, threads)
    try:
        out: dict[str, Any] = {"mode": mode}
        if mode == "baseline":
            con.execute("SELECT count(*), max(id), max(age), max(zip), max(sex), max(s) FROM t")
            con.fetchall()
        elif mode == "sort":
            start, cpu = time.perf_counter(), time.process_time()
            con.execute(SORT_SQL)
            out["seconds"] = time.perf_counter() - start
            out["cpu"] = time.process_time() - cpu
            con.execute("DROP TABLE t2")
        elif mode in ("release", "release_rows"):
            if mode == "release_rows":  # the row path, as every release ran before issue 13
                from sqlanon.release import ke_engine

                ke_engine.release_ke = lambda *args, **kwargs: None  # type: ignore[assignment]
            # Python's own heap (numpy included; DuckDB's buffers are not Python's) peaks
            # with what the release holds in Python: counts, not rows.
            tracemalloc.start()
            start, cpu = time.perf_counter(), time.process_time()
            summary = sqlanon.release_ke(
                con, "t", family, key="id", sensitive="s", quasi=QUASI, k=K, e=E
            )
            out["seconds"] = time.perf_counter() - start
            out["cpu"] = time.process_time() - cpu
            out["python_peak_kib"] = tracemalloc.get_traced_memory()[1] / 1024
            tracemalloc.stop()
            out["summary"] = summary
        else:
            raise ValueError(mode)
        out["vm_hwm_kib"] = vm_hwm_kib()
        return out
    finally:
        con.close()


def run_child(mode: str, db: Path, family: str = "fam", threads: int = 0) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", mode, "--db", str(db), "--family", family]
    command += ["--threads", str(threads)]
    # The children import this checkout's sqlanon (not whichever one the venv points at).
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"child {mode} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- main run


def repetition(n: int, rep: int, workdir: Path, row_path: bool) -> dict[str, Any]:
    db = workdir / f"bench_{n}_{rep}.duckdb"
    rows_db = workdir / f"bench_{n}_{rep}_rows.duckdb"
    one_db = workdir / f"bench_{n}_{rep}_one_thread.duckdb"
    seed = 1000 * rep + n % 997
    build_file(db, n, seed)
    if row_path:
        shutil.copy(db, rows_db)
    shutil.copy(db, one_db)
    base = run_child("baseline", db)
    a1 = run_child("sort", one_db, threads=1)
    b1 = run_child("release", one_db, threads=1)
    one_db.unlink()
    a = run_child("sort", db)
    b = run_child("release", db)
    b_rows = run_child("release_rows", rows_db) if row_path else None
    grown = grow_file(db, n, seed)
    c_rows = None
    if row_path:
        con = duckdb.connect(str(rows_db))
        try:  # the same appended rows
            con.execute(f"ATTACH '{db}' AS grown (READ_ONLY)")
            con.execute("INSERT INTO t SELECT * FROM grown.t WHERE id >= ?", [n])
        finally:
            con.close()
        c_rows = run_child("release_rows", rows_db)
    c = run_child("release", db)
    d = run_child("sort", db)
    for stale in (db, Path(f"{db}.wal"), rows_db, Path(f"{rows_db}.wal")):
        stale.unlink(missing_ok=True)
    return {
        "rows_b": b_rows["seconds"] if b_rows else None,
        "rows_c": c_rows["seconds"] if c_rows else None,
        "rows_python_kib": (
            max(b_rows["python_peak_kib"], c_rows["python_peak_kib"]) if b_rows and c_rows else None
        ),
        "n": n,
        "grown": grown,
        "a": a["seconds"],
        "b": b["seconds"],
        "c": c["seconds"],
        "d": d["seconds"],
        "b_over_a": b["seconds"] / a["seconds"],
        "a1": a1["seconds"],
        "b1": b1["seconds"],
        "b1_over_a1": b1["seconds"] / a1["seconds"],
        "cpu_b_over_a": b["cpu"] / a["cpu"],
        "cpu_b1_over_a1": b1["cpu"] / a1["cpu"],
        "sort1_kib": a1["vm_hwm_kib"],
        "release1t_kib": b1["vm_hwm_kib"],
        "c_over_d": c["seconds"] / d["seconds"],
        "base_kib": base["vm_hwm_kib"],
        "sort_kib": max(a["vm_hwm_kib"], d["vm_hwm_kib"]),
        "release_kib": max(b["vm_hwm_kib"], c["vm_hwm_kib"]),
        "python_kib": max(b["python_peak_kib"], c["python_peak_kib"]),
        "release1_kib": b["vm_hwm_kib"],
        "release2_kib": c["vm_hwm_kib"],
        "v1": b["summary"],
        "v2": c["summary"],
    }


def _mib(kib: float) -> str:
    return f"{kib / 1024:,.0f}"


def row_path(rows: list[dict[str, Any]]) -> str:
    """The row path's median times and Python heap, or a dash where it was not run."""
    timed = [r for r in rows if r["rows_b"] is not None]
    if not timed:
        return "– | –"
    med = statistics.median
    return (
        f"{med(r['rows_b'] for r in timed):.2f} / {med(r['rows_c'] for r in timed):.2f} "
        f"| {med(r['rows_python_kib'] for r in timed) / 1024:,.0f}"
    )


def table(results: list[dict[str, Any]], reps: int) -> str:
    lines = [
        "| rows (v1 → v2) | (a) sort v1 s | (b) release v1 s | b/a all cores "
        "| (a1) sort 1 thread s | (b1) release 1 thread s | b1/a1 1 thread "
        "| CPU b/a all cores / b1/a1 1 thread "
        "| (d) sort v2 s | (c) release v2 s | c/d | release peak RSS MiB | sort peak RSS MiB "
        "| 1 thread: release / sort peak MiB | baseline MiB | release − baseline MiB "
        "| Python heap peak MiB | v2 held back | groups v1 / v2 "
        "| row path v1 / v2 s | row path Python heap MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_n: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        by_n[r["n"]].append(r)
    for n, rows in sorted(by_n.items()):

        def med(key: str, rows: list[dict[str, Any]] = rows) -> float:
            return statistics.median(r[key] for r in rows)

        delta = statistics.median(r["release_kib"] - r["base_kib"] for r in rows)
        last = rows[-1]
        lines.append(
            f"| {n:,} → {last['grown']:,} | {med('a'):.2f} | {med('b'):.2f} "
            f"| **{med('b_over_a'):.1f}** | {med('a1'):.2f} | {med('b1'):.2f} "
            f"| **{med('b1_over_a1'):.1f}** "
            f"| {med('cpu_b_over_a'):.1f} / {med('cpu_b1_over_a1'):.1f} "
            f"| {med('d'):.2f} | {med('c'):.2f} "
            f"| **{med('c_over_d'):.1f}** | {_mib(med('release_kib'))} | {_mib(med('sort_kib'))} "
            f"| {_mib(med('release1t_kib'))} / {_mib(med('sort1_kib'))} "
            f"| {_mib(med('base_kib'))} | **{_mib(delta)}** "
            f"| **{med('python_kib') / 1024:,.1f}** | {last['v2']['held_back']:,} "
            f"| {last['v1']['groups']:,} / {last['v2']['groups']:,} | {row_path(rows)} |"
        )
    header = (
        f"### (k,e) release vs a sorted copy (DuckDB file, k={K}, e={E:g})\n\n"
        f"`bench/ke_release.py`, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores, "
        f"DuckDB {duckdb.__version__}, Python {platform.python_version()}. "
        f"Medians over {reps} repetitions, each on a fresh file; ratios are per repetition "
        "(same file, one after the other), then the median. Every measurement runs in its "
        "own child process; peak RSS is that child's VmHWM. *Baseline* is a child that "
        "imported sqlanon, opened the file and scanned every column of `t`; "
        "*release − baseline* is the release's own peak; *Python heap peak*: tracemalloc's "
        "peak during the release (Python objects and numpy arrays; DuckDB's own buffers are "
        "not in it). With `--memory` every child runs under that DuckDB `memory_limit` "
        "(beyond it DuckDB spills to disk). *Row path*: the same two releases on a copy of "
        "the file with the engine path turned off, as every (k,e) release ran before "
        "issue 13 (rows read into numpy, planned, written back). (a)/(d): "
        f"`{SORT_SQL}`; (b)/(c): `sqlanon.release_ke(con, 't', 'fam', key='id', "
        "sensitive='s', quasi=['age', 'zip', 'sex'], k=5, e=20)`, first version on n rows, "
        "second after appending n/10 rows; (a1)/(b1): (a) and (b) on a copy of the file "
        "made before (b), both under `SET threads = 1` (the others use every core). *CPU*: "
        "the same ratios in CPU seconds of the child process (every thread; on a machine "
        "other work shares, what the statements cost rather than when they got a core). "
        "Target (issue 27): the first release b/a and b1/a1 <= 4 at 10^6 and 10^7, peak "
        "RSS beside the sorted copy's. Sizes of 10^8 rows and more run one repetition.\n"
    )
    return header + "\n" + "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------- profile


class TimedSession(DuckDBSession):
    """A DuckDB session that adds up the time of every statement, by its first line."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        super().__init__(con)
        self.spent: dict[str, float] = defaultdict(float)
        # growth of the process's RSS high-water mark during each statement, and in the
        # Python code between statements (attributed to the statement that follows it)
        self.grew: dict[str, int] = defaultdict(int)
        self._hwm = vm_hwm_kib()

    def _label(self, sql: str) -> str:
        lines = [ln.strip() for ln in sql.splitlines() if ln.strip()]
        code = [ln for ln in lines if not ln.startswith("--")]
        comment = lines[0] if lines and lines[0].startswith("--") else ""
        return (comment[:60] + " | " if comment else "") + (code[0][:70] if code else "")

    def _timed(self, label: str, fn: Any, *args: Any) -> Any:
        before = vm_hwm_kib()
        self.grew[f"python before: {label}"] += before - self._hwm
        start = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.spent[label] += time.perf_counter() - start
            self._hwm = vm_hwm_kib()
            self.grew[label] += self._hwm - before

    def execute(self, sql: str, params: Any = ()) -> None:
        return self._timed(self._label(sql), super().execute, sql, params)

    def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        return self._timed(self._label(sql), super().query, sql, params)

    def query_arrays(self, sql: str, params: Any = ()) -> dict[str, np.ndarray]:
        return self._timed("arrays: " + self._label(sql), super().query_arrays, sql, params)

    def load_temp(self, name: str, columns: Any, types: Any) -> None:
        return self._timed(f"load_temp {name}", super().load_temp, name, columns, types)


def profile_release(db: str, family: str) -> str:
    """One release under cProfile and a :class:`TimedSession` (run in a fresh child)."""
    from sqlanon.release import ke_release as release

    con = connect(db)
    session = TimedSession(con)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    summary = release.release_ke(
        session, "t", family, key="id", sensitive="s", quasi=QUASI, k=K, e=E
    )
    profiler.disable()
    total = time.perf_counter() - start
    session.grew["python after the last statement"] += vm_hwm_kib() - session._hwm
    session.close()
    con.close()
    out = io.StringIO()
    out.write(
        f"\n## release v{summary['version']}: {total:.2f} s, "
        f"{summary['rows_published']:,} rows, {summary['groups']:,} groups, "
        f"{summary['held_back']:,} held back\n"
    )
    out.write("\nstatements (seconds, summed over calls):\n")
    for what, spent in sorted(session.spent.items(), key=lambda x: -x[1])[:12]:
        out.write(f"  {spent:7.3f}  {what}\n")
    out.write(f"\nRSS high-water growth (MiB; child's peak {_mib(vm_hwm_kib())}):\n")
    for what, grew in sorted(session.grew.items(), key=lambda x: -x[1])[:10]:
        if grew > 0:
            out.write(f"  {grew / 1024:7.0f}  {what}\n")
    for sort in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(sort).print_stats(22)
        out.write(f"\ncProfile by {sort}:\n")
        out.write("\n".join(text.getvalue().splitlines()[6:]) + "\n")
    return out.getvalue()


def profile(n: int, workdir: Path) -> str:
    """Profile the first release of n rows and the second after n/10 more, each in a child."""
    db = workdir / f"profile_{n}.duckdb"
    build_file(db, n, 7)
    first = run_child("profile", db)["text"]
    grow_file(db, n, 7)
    second = run_child("profile", db)["text"]
    db.unlink(missing_ok=True)
    return first + second


def profile_section(n: int, text: str) -> str:
    """The profile of :func:`profile` as a BENCHMARKS.md section."""
    return "\n".join([
        f"### Where a (k,e) release's time goes in DuckDB ({n:,} rows, then +{n // 10:,})",
        "",
        f"`bench/ke_release.py --profile {n}`, {time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, {os.cpu_count()} cores, DuckDB {duckdb.__version__}. One "
        "release pair, each in a fresh child process; statements are timed one by one "
        "(seconds summed over calls, the first 60 characters of their text), then the RSS "
        "high-water growth per statement (the Python profile: run it). For the yardstick, the "
        "`ke_release` section's sorted copy of the same table. Load average when it "
        f"ended: {os.getloadavg()[0]:.1f} (on 2 cores; shares matter here, not seconds).",
        "",
        "```",
        re.sub(r"\ncProfile by .*?(?=\n## release|\Z)", "", text, flags=re.S).strip(),
        "```",
    ]) + "\n"  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--profile", type=int, metavar="N", help="profile one release pair")
    parser.add_argument("--no-report", action="store_true", help="print, do not write")
    parser.add_argument("--memory", help="DuckDB memory_limit of every child, e.g. 8GB")
    parser.add_argument(
        "--section", default="ke_release", help="BENCHMARKS.md section to write (ke_release)"
    )
    parser.add_argument(
        "--row-path-upto",
        type=int,
        default=10_000_000,
        help="also time the row path (before issue 13) on a copy, up to this many rows",
    )
    parser.add_argument(
        "--child",
        choices=["baseline", "sort", "release", "release_rows", "profile"],
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--family", default="fam", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory:
        os.environ["SQLANON_BENCH_MEMORY"] = args.memory
    if args.child:
        print(json.dumps(child(args.child, args.db, args.family, args.threads), default=float))
        return
    with tempfile.TemporaryDirectory(prefix="sqlanon_bench_") as tmp:
        if args.profile:
            text = profile(args.profile, Path(tmp))
            print(text)
            if not args.no_report:
                sys.path.insert(0, str(Path(__file__).resolve().parent))
                import report

                print("wrote", report.replace_section("ke_release_profile", profile_section(
                    args.profile, text)))  # fmt: skip
            return
        results = []
        for n in args.sizes:
            for rep in range(args.reps if n < 10**8 else 1):
                r = repetition(n, rep, Path(tmp), n <= args.row_path_upto)
                results.append(r)
                print(
                    f"n={n:,} rep {rep}: a {r['a']:.2f}s b {r['b']:.2f}s c {r['c']:.2f}s "
                    f"d {r['d']:.2f}s  b/a {r['b_over_a']:.1f} c/d {r['c_over_d']:.1f}  "
                    f"1 thread: a1 {r['a1']:.2f}s b1 {r['b1']:.2f}s b1/a1 {r['b1_over_a1']:.1f}  "
                    f"CPU b/a {r['cpu_b_over_a']:.1f} b1/a1 {r['cpu_b1_over_a1']:.1f}  "
                    f"release peak {_mib(r['release_kib'])} MiB (baseline "
                    f"{_mib(r['base_kib'])}, sort {_mib(r['sort_kib'])})",
                    flush=True,
                )
    markdown = table(results, args.reps)
    if args.memory:
        markdown = markdown.replace(
            "first version on n rows", f"DuckDB memory_limit {args.memory}; first version on n rows"
        )
    print(markdown)
    if not args.no_report:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import report

        print("wrote", report.replace_section(args.section, markdown))


if __name__ == "__main__":
    main()
