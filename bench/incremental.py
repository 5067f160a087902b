"""Incremental releases (issue 27): what each weekly version of a (k,e) family costs in
time and storage, versions sharing their rows (DuckDB) beside a table per version.

The synthetic table of ``bench/ke_release.py`` (``--rows`` n), in a DuckDB file;
``sqlanon.release_ke(..., k=5, e=20)`` once, then ``--weeks`` more versions, each after
a week's change: +1% inserted rows, 0.2% deleted, 0.2% with a changed quasi-identifier
(age + 1). Per version: the release's wall time, the file's size after ``CHECKPOINT``
and what the version added to it, rows in the family's rows tables (current and
history) and the members' spans stored (``sqlanon.member_spans``, migration 011).
*Later / first*: a version's time over the first release's, its bytes added over the
bytes the first release added (the file after it minus the file with the source alone).
*Layouts*: ``shared`` (this sqlanon), ``tables`` (a table per version, as before issue
27: ``release_rows.SHARED`` emptied for that run), each run on its own file with the
same changes. Last, an analyst's query on the newest version's view beside the same
query on a table copy of it: medians of ``--runs`` alternated runs.

    .venv/bin/python bench/incremental.py [--model ke|lhd] [--e 20] [--rows 1000000] [--weeks 8]
        [--layouts shared,tables]
    .venv/bin/python bench/incremental.py --curve --weeks 51 [--e 10] [--keep 13]   # the year

``--curve``: the shared layout alone over ``--weeks`` weekly versions, written as its own
section (``incremental-curve-<model>``): per version the release time and the file, and
the file at the last version over the file at v1 (target: <= 2 at v52), and where the
file's bytes are at v1 and the last version. ``--keep N``: ``sqlanon.retire`` keeps the
newest N versions served after each release (section ``incremental-curve-<model>-keepN``).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

import sqlanon
from sqlanon.state import release_rows

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ke_release  # noqa: E402  (bench/ is not a package)
import report  # noqa: E402

RELEASE = {"key": "id", "sensitive": "s", "quasi": ["age", "zip", "sex"], "k": 5, "e": 20}
LHD = {"key": "id", "quasi": ["age", "zip"], "sensitive": ["s"], "l": 3, "max_suppression": 1.0}
WIDTHS = {"age": [5, 10, 20, 40], "zip": [1000, 10000, 50000]}
QUERY = (
    "SELECT sex, SUM(s) AS total, AVG(s) AS mean FROM {} WHERE age BETWEEN 30 AND 60 GROUP BY sex"
)


def size(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    con.execute("CHECKPOINT")
    return path.stat().st_size


def breakdown(con: duckdb.DuckDBPyConnection, tmp: Path) -> dict[str, Any]:
    """Where the file's bytes are: each table of the file as an empty file stores it
    alone (copied into a fresh attached file and checkpointed, minus the empty file's
    size: the table's compacted bytes, to a 256 KiB block), and the file's free blocks
    (``PRAGMA database_size``)."""

    def copied(name: str, table: str | None) -> int:
        target = tmp / f"{name}.duckdb"
        target.unlink(missing_ok=True)
        con.execute(f"ATTACH '{target}' AS sizing")
        if table is not None:
            con.execute(f"CREATE TABLE sizing.t AS SELECT * FROM {table}")  # noqa: S608
        con.execute("DETACH sizing")
        return target.stat().st_size

    empty = copied("empty", None)
    tables = {}
    for schema, name in con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables()"
        " WHERE database_name = current_database() ORDER BY 1, 2"
    ).fetchall():
        relation = f'{schema}."{name}"'
        rows = con.execute(f"SELECT count(*) FROM {relation}").fetchone()[0]  # noqa: S608
        tables[f"{schema}.{name}"] = (rows, copied(name, relation) - empty)
    size = con.execute("PRAGMA database_size").fetchone()
    return {"tables": tables, "free": size[5] * size[2]}


def week(con: duckdb.DuckDBPyConnection, n: int, w: int, next_id: int) -> int:
    """One week's change; returns the next free id."""
    con.execute("DELETE FROM t WHERE hash(id, $1, 'd') % 500 = 0", [w])
    con.execute("UPDATE t SET age = age + 1 WHERE hash(id, $1, 'q') % 500 = 0", [w])
    ke_release.generate_rows(con, next_id, n // 100, 1000 + w)
    return next_id + n // 100


def release(con: duckdb.DuckDBPyConnection, model: str, e: float) -> dict[str, Any]:
    if model == "lhd":
        return sqlanon.release_lhd(con, "t", "fam", **LHD)
    return sqlanon.release_ke(con, "t", "fam", **{**RELEASE, "e": e})


def run(
    n: int,
    weeks: int,
    layout: str,
    path: Path,
    runs: int,
    model: str,
    e: float,
    sizes: bool = False,
    keep: int | None = None,
) -> dict[str, Any]:
    """The layout's versions; with ``sizes``, :func:`breakdown` after v1 and the last;
    with ``keep``, ``sqlanon.retire(keep=keep)`` after each release (timed apart)."""
    saved = release_rows.SHARED
    if layout == "tables":
        release_rows.SHARED = frozenset()
    try:
        con = duckdb.connect(str(path))
        sqlanon.install(con)
        ke_release.generate_rows(con, 0, n, 7)
        for attribute, widths in WIDTHS.items():
            sqlanon.hierarchy_widths(con, "t", attribute, widths)
        empty = size(con, path)
        versions = []
        next_id = n
        for v in range(1, weeks + 2):
            if v > 1:
                next_id = week(con, n, v, next_id)
            before = size(con, path)
            start = time.perf_counter()
            summary = release(con, model, e)
            seconds = time.perf_counter() - start
            if keep is not None:
                sqlanon.retire(con, "fam", keep=keep)
            after = size(con, path)
            rows = (
                con.execute(
                    "SELECT (SELECT count(*) FROM sqlanon.fam__rows)"
                    " + (SELECT count(*) FROM sqlanon.fam__history)"
                ).fetchone()[0]
                if layout == "shared"
                else None
            )
            members = con.execute("SELECT count(*) FROM sqlanon.member_spans").fetchone()[0]
            versions.append({
                "version": v, "seconds": seconds, "bytes": after,
                "added": after - (empty if v == 1 else before), "rows": rows,
                "members": members, "published": summary["rows_published"],
            })  # fmt: skip
            if sizes and v in (1, weeks + 1):
                versions[-1]["breakdown"] = breakdown(con, path.parent)
        query = query_ratio(con, weeks + 1, runs)
        con.close()
        return {"layout": layout, "model": model, "versions": versions, "query": query}
    finally:
        release_rows.SHARED = saved


def query_ratio(con: Any, version: int, runs: int, analyze: bool = False) -> dict[str, float]:
    """:data:`QUERY` on ``fam_v<version>`` beside a table copy of it, alternated on one
    connection (DuckDB or psycopg; ``analyze``: ANALYZE the copy first, PostgreSQL)."""
    con.execute(f"CREATE TABLE copy AS SELECT * FROM fam_v{version}")  # noqa: S608
    if analyze:
        con.execute("ANALYZE copy")
    ratios, on_view, on_table = [], [], []
    for _ in range(runs + 1):
        a = time.perf_counter()
        con.execute(QUERY.format(f"fam_v{version}")).fetchall()
        b = time.perf_counter()
        con.execute(QUERY.format("copy")).fetchall()
        c = time.perf_counter()
        on_view.append(b - a)
        on_table.append(c - b)
        ratios.append((b - a) / (c - b))
    con.execute("DROP TABLE copy")
    return {  # the first run warms up
        "view_ms": 1000 * statistics.median(on_view[1:]),
        "table_ms": 1000 * statistics.median(on_table[1:]),
        "ratio": statistics.median(ratios[1:]),
    }


def section(
    n: int, weeks: int, results: list[dict[str, Any]], runs: int, model: str, e: float
) -> str:
    family = (
        f"(k,e) k=5, e={e:g} (quasi age, zip, sex)"
        if model == "ke"
        else "lHD l=3 (quasi age, zip by widths 5/10/20/40 and 1,000/10,000/50,000; "
        "max_suppression 1.0)"
    )
    lines = [
        f"### Incremental releases: time and storage per weekly version (DuckDB, {model})",
        "",
        f"`bench/incremental.py`, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores, DuckDB {duckdb.__version__}, Python {platform.python_version()}. "
        f"{n:,} rows (the synthetic table of `bench/ke_release.py`), {family}; version 1, "
        f"then {weeks} weekly versions, each after +1% inserted rows, 0.2% deleted, 0.2% with "
        "a changed age. One run per layout on its own file, the same changes; times are one "
        "release each (the machine is shared: read the curve, not one point). *Added*: file "
        "bytes after the release minus before (`CHECKPOINT`ed), the first release's counted "
        "from the file with the source alone. *Shared*: versions are views of the family's "
        "current rows and history (issue 27); *tables*: a table per version (before); the "
        "private state is stored as changes in both (migration 011). Target (issue 27): a later "
        "release <= 0.2x the first's time and <= 0.1x its bytes added; the file at v52 <= 2x "
        "the file at v1.",
        "",
        "| layout | version | release s | later / first time | file MiB | added MiB "
        "| added / first added | rows stored (current + history) | member spans stored |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        first = result["versions"][0]
        for v in result["versions"]:
            rows = "" if v["rows"] is None else f"{v['rows']:,}"
            lines.append(
                f"| {result['layout']} | {v['version']} | {v['seconds']:.2f} "
                f"| {v['seconds'] / first['seconds']:.2f} | {v['bytes'] / 2**20:.1f} "
                f"| {v['added'] / 2**20:.1f} | {v['added'] / first['added']:.2f} "
                f"| {rows} "
                f"| {v['members']:,} |"
            )
    lines += [
        "",
        f"An analyst's query on the newest version (`{QUERY.format('fam_vN')}`), medians of "
        f"{runs} alternated runs after one warm-up:",
        "",
        "| layout | on the version ms | on a table copy ms | **version / copy** |",
        "|---|---|---|---|",
    ]
    for result in results:
        q = result["query"]
        lines.append(
            f"| {result['layout']} | {q['view_ms']:.1f} | {q['table_ms']:.1f} "
            f"| **{q['ratio']:.2f}** |"
        )
    return "\n".join(lines) + "\n"


def curve_section(
    n: int, result: dict[str, Any], model: str, e: float, keep: int | None = None
) -> str:
    versions = result["versions"]
    first = versions[0]
    last = versions[-1]
    family = f"(k,e) k=5, e={e:g}" if model == "ke" else "lHD l=3"
    later = [v["seconds"] / first["seconds"] for v in versions[1:]]
    added = [v["added"] / first["added"] for v in versions[1:]]
    lines = [
        f"### A year of weekly versions (DuckDB, {model}, shared rows"
        + (f", the newest {keep} served)" if keep else ")"),
        "",
        f"`bench/incremental.py --curve`, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores, DuckDB {duckdb.__version__}. {n:,} rows, {family}; version "
        f"1, then {len(versions) - 1} weekly versions (+1% inserted, 0.2% deleted, 0.2% with "
        "a changed age). One run; each time is one release on a shared machine. Target (issue "
        "27): the file at v52 <= 2x the file at v1."
        + (
            f" After each release `sqlanon.retire(con, 'fam', keep={keep})` (not in the "
            "release's time): the older versions' views, history rows and bounds rows go; "
            "the private state stays."
            if keep
            else ""
        ),
        "",
        f"**File at v{last['version']}: {last['bytes'] / 2**20:.1f} MiB = "
        f"{last['bytes'] / first['bytes']:.2f}x the file at v1 ({first['bytes'] / 2**20:.1f} "
        f"MiB).** Later releases: time {statistics.median(later):.2f}x the first's (median; "
        f"{min(later):.2f}-{max(later):.2f}), bytes added {statistics.median(added):.3f}x the "
        f"first's (median; {min(added):.3f}-{max(added):.3f}).",
        "",
        "| version | release s | later / first time | file MiB | added MiB | added / first added "
        "| rows stored (current + history) | member spans stored |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for v in versions:
        lines.append(
            f"| {v['version']} | {v['seconds']:.2f} | {v['seconds'] / first['seconds']:.2f} "
            f"| {v['bytes'] / 2**20:.1f} | {v['added'] / 2**20:.1f} "
            f"| {v['added'] / first['added']:.3f} | {v['rows']:,} | {v['members']:,} |"
        )
    return "\n".join(lines + breakdown_lines(first, last)) + "\n"


def breakdown_lines(first: dict[str, Any], last: dict[str, Any]) -> list[str]:
    """Where the file's bytes are at v1 and at the last version (:func:`breakdown`)."""
    a, b = first["breakdown"], last["breakdown"]
    mib = 2**20
    lines = [
        "",
        f"Where the bytes are, at v1 and v{last['version']}: each table's bytes as a fresh "
        "file stores it alone (compacted, to a 256 KiB block; tables under 0.3 MiB in both "
        "left out), and the file's free blocks (space DuckDB freed and has not reused).",
        "",
        f"| table | rows v1 | MiB v1 | rows v{last['version']} | MiB v{last['version']} |",
        "|---|---|---|---|---|",
    ]
    for name in sorted(b["tables"], key=lambda t: -b["tables"][t][1]):
        rows_b, bytes_b = b["tables"][name]
        rows_a, bytes_a = a["tables"].get(name, (0, 0))
        if max(bytes_a, bytes_b) >= 0.3 * mib:
            lines.append(
                f"| {name} | {rows_a:,} | {bytes_a / mib:.1f} | {rows_b:,} | {bytes_b / mib:.1f} |"
            )
    lines.append(f"| *free blocks* | | {a['free'] / mib:.1f} | | {b['free'] / mib:.1f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--weeks", type=int, default=8)
    parser.add_argument("--layouts", default="shared,tables")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--model", choices=["ke", "lhd"], default="ke")
    parser.add_argument("--e", type=float, default=20.0, help="(k,e): e")
    parser.add_argument("--no-report", action="store_true")
    parser.add_argument("--curve", action="store_true", help="the shared layout's curve only")
    parser.add_argument("--keep", type=int, help="--curve: retire all but the newest KEEP")
    args = parser.parse_args()
    if args.curve:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "curve.duckdb"
            result = run(
                args.rows, args.weeks, "shared", path, args.runs, args.model, args.e,
                sizes=True, keep=args.keep,
            )  # fmt: skip
        markdown = curve_section(args.rows, result, args.model, args.e, args.keep)
        print(markdown)
        if not args.no_report:
            name = f"incremental-curve-{args.model}" + (f"-keep{args.keep}" if args.keep else "")
            print("wrote", report.replace_section(name, markdown))
        return
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for layout in args.layouts.split(","):
            path = Path(tmp) / f"{layout}.duckdb"
            result = run(args.rows, args.weeks, layout, path, args.runs, args.model, args.e)
            results.append(result)
            print(
                layout,
                [(v["version"], round(v["seconds"], 2), v["added"]) for v in result["versions"]],
            )
    markdown = section(args.rows, args.weeks, results, args.runs, args.model, args.e)
    print(markdown)
    if not args.no_report:
        name = f"incremental-{args.model}" + (f"-e{args.e:g}" if args.model == "ke" else "")
        print("wrote", report.replace_section(name, markdown))


if __name__ == "__main__":
    main()
