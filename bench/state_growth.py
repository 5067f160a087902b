"""What each version of a (k,e) family adds to the private state (issue 27, "State as
changes"): ``sqlanon.members`` and ``sqlanon.cells`` rows stored, and the DuckDB file's
bytes, per version.

A source of ``--rows`` records (integer key, quasi-identifiers age and zip, a salary),
a first (k,e) release (k=5), then ``--versions - 1`` releases each after +1% inserts,
0.2% deletes and 0.2% changed quasi-identifiers. The state's rows are counted as
stored: one ``members`` row per record per version before migration 011, one span per
record state after it (and likewise the cells). With ``--compare ROOT``, the same run
on the sqlanon checked out at ROOT (a worktree of the code before 011) beside this one.

    .venv/bin/python bench/state_growth.py [--rows 1000000] [--versions 4]
        [--compare /tmp/main-worktree] [--no-report]
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
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

INSERTS, DELETES, QUASI = 0.01, 0.002, 0.002


def _stored(con: Any, spans: str, table: str) -> int:
    """Rows physically stored for the state: the spans table when there is one."""
    found = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'sqlanon' "
        "AND table_name = ? AND table_type = 'BASE TABLE'",
        [spans],
    ).fetchone()[0]
    name = spans if found else table
    return int(con.execute(f"SELECT count(*) FROM sqlanon.{name}").fetchone()[0])  # noqa: S608


def measure(rows: int, versions: int, e: float, seed: int = 1) -> list[dict[str, Any]]:
    """One run with the sqlanon this interpreter imports; per version, the state."""
    import duckdb

    import sqlanon

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.duckdb"
        con = duckdb.connect(str(path))
        sqlanon.install(con)
        con.execute(
            "CREATE TABLE src AS SELECT i AS id, 20 + hash(i, ?) % 60 AS age, "
            "hash(i, ? + 1) % 100 AS zip, hash(i, ? + 2) % 10000 AS salary "
            "FROM range(?) AS t(i)",
            [seed, seed, seed, rows],
        )
        next_id = rows
        args = {"key": "id", "sensitive": "salary", "quasi": ["age", "zip"], "k": 5, "e": e}
        for version in range(1, versions + 1):
            if version > 1:
                n = int(con.execute("SELECT count(*) FROM src").fetchone()[0])
                added = int(n * INSERTS)
                con.execute(
                    "INSERT INTO src SELECT i, 20 + hash(i, ?) % 60, hash(i, ? + 1) % 100, "
                    "hash(i, ? + 2) % 10000 FROM range(?, ?) AS t(i)",
                    [seed, seed, seed, next_id, next_id + added],
                )
                next_id += added
                con.execute(
                    "DELETE FROM src WHERE id IN (SELECT id FROM src "
                    "ORDER BY hash(id, ?, 'd') LIMIT ?)",
                    [version, int(n * DELETES)],
                )
                con.execute(
                    "UPDATE src SET age = 20 + (age - 19) % 60 WHERE id IN (SELECT id FROM src "
                    "ORDER BY hash(id, ?, 'q') LIMIT ?)",
                    [version, int(n * QUASI)],
                )
            start = time.perf_counter()
            summary = sqlanon.release_ke(con, "src", "fam", **args)
            seconds = time.perf_counter() - start
            con.execute("CHECKPOINT")
            out.append(
                {
                    "version": version,
                    "seconds": round(seconds, 2),
                    "rows_published": summary["rows_published"],
                    "members_per_version": int(
                        con.execute(
                            "SELECT count(*) FROM sqlanon.members WHERE family = 'fam' "
                            "AND version = ?",
                            [version],
                        ).fetchone()[0]
                    ),
                    "members_stored": _stored(con, "member_spans", "members"),
                    "cells_stored": _stored(con, "cell_spans", "cells"),
                    "file_bytes": os.path.getsize(path),
                }
            )
        con.close()
    return out


def _table(label: str, runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"**{label}**",
        "",
        "| version | release s | rows per version | members rows stored | cells rows stored "
        "| file MiB | file growth MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    previous = 0
    for r in runs:
        mib = r["file_bytes"] / 2**20
        lines.append(
            f"| {r['version']} | {r['seconds']:.2f} | {r['members_per_version']:,} "
            f"| {r['members_stored']:,} | {r['cells_stored']:,} | {mib:.1f} "
            f"| {mib - previous:+.1f} |"
        )
        previous = mib
    return lines + [""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--versions", type=int, default=4)
    parser.add_argument("--e", default="10,100", help="comma-separated e values (k = 5)")
    parser.add_argument("--compare", help="a checkout of sqlanon before migration 011")
    parser.add_argument("--json", action="store_true", help="print one run as JSON")
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args(argv)
    if args.json:
        print(json.dumps(measure(args.rows, args.versions, float(args.e))))
        return 0
    runs: list[tuple[str, list[dict[str, Any]]]] = []
    roots = [("before (one row per record per version)", args.compare)] if args.compare else []
    roots.append(("after (spans: migration 011)", str(ROOT)))
    for e in args.e.split(","):
        for label, root in roots:
            done = subprocess.run(  # noqa: S603 - this interpreter, this script
                [sys.executable, __file__, "--json", "--rows", str(args.rows),
                 "--versions", str(args.versions), "--e", e],
                env={**os.environ, "PYTHONPATH": root}, cwd=tempfile.gettempdir(),
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            runs.append((f"e = {e}, {label}", json.loads(done.stdout.splitlines()[-1])))
    lines = [
        f"`bench/state_growth.py --rows {args.rows} --versions {args.versions} --e {args.e}`, "
        f"{date.today().isoformat()}, {platform.machine()}, {os.cpu_count()} cores (shared). "
        f"A (k,e) family (k=5) of {args.rows:,} records; before each later version "
        f"+{INSERTS:.0%} inserts, {DELETES:.1%} deletes, {QUASI:.1%} changed "
        "quasi-identifiers. Rows stored: the whole state table after the version "
        "(before: `sqlanon.members` / `sqlanon.cells` rows; after: their spans). "
        "File bytes after a CHECKPOINT; the release table and its bounds are in them too "
        "(issue 27's other half). Spans grow with the records whose state changed: with "
        "e = 10 the incremental planner keeps the groups, with e = 100 it merges most "
        "of them (most records change group), and the spans grow almost as fast as the "
        "rows per version did. Release seconds: one run each, on a machine shared with "
        "other jobs: compare the rows and bytes, not the times.",
        "",
    ]
    for label, run in runs:
        lines += _table(label, run)
    body = "\n".join(lines)
    print(body)
    if not args.no_report:
        import report

        report.replace_section("state_growth", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
