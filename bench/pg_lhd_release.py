"""lHD releases inside PostgreSQL (the SQL function, run by the server's PL/Python)
against sorting the same table in the same server.

For each size, a fresh database on the test server (``scripts/pg start``) with sqlanon
installed holds ``t``: the ARX Adult table (size 0) or n Adult records drawn with
replacement (seed 0), loaded with COPY, with ARX's hierarchies for its 8 QI. Each
repetition, in a fresh database, on one connection, after a warm-up call that imports
sqlanon into the session's PL/Python, times (a) a sorted copy
``CREATE TABLE t2 AS SELECT * FROM t ORDER BY occupation`` (then dropped) and (b) a
first lHD release (l = 2, SA occupation, 8 QI); medians of the times and of the
per-repetition ratios b/a. Adult is the table ``bench/lhd_release.py`` releases in
DuckDB; the synthetic rows are other draws.

    .venv/bin/python bench/pg_lhd_release.py [--sizes 0 1000000] [--reps 3]
"""

from __future__ import annotations

import argparse
import csv
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lhd_release import ADULT, QUASI, SENSITIVE  # noqa: E402
from pg_release import Database, timed  # noqa: E402
from report import replace_section  # noqa: E402

SORT = 'CREATE TABLE t2 AS SELECT * FROM t ORDER BY "occupation"'
RELEASE = (
    "SELECT sqlanon.release_lhd('t', %s, key => 'id', quasi => ARRAY["
    + ", ".join(f"'{q}'" for q in QUASI)
    + "], sensitive => ARRAY['occupation'], l => 2)"
)


def load(conn: Any, n: int | None, folder: Path) -> int:
    """Table ``t`` of Adult rows (all, or n drawn with replacement) and its hierarchies."""
    with (ADULT / "adult.csv").open() as f:
        reader = csv.reader(f, delimiter=";")
        header = next(reader)
        rows = list(reader)
    pick = range(len(rows)) if n is None else np.random.default_rng(0).integers(0, len(rows), n)
    conn.execute("DROP TABLE t")
    names = ", ".join(f'"{h}" text' for h in header)
    conn.execute(f"CREATE TABLE t (id bigint, {names})")
    with conn.cursor().copy("COPY t FROM STDIN") as copy:
        for i, r in enumerate(pick):
            copy.write_row([i, *rows[int(r)]])
    conn.execute("VACUUM ANALYZE t")
    folder.mkdir(exist_ok=True)
    for f in ADULT.glob("adult_hierarchy_*.csv"):
        shutil.copy(f, folder / f.name.replace("adult_", "t_"))
    folder.chmod(0o755)
    conn.execute("SELECT sqlanon.load_hierarchies('t', %s)", [str(folder)])
    return len(pick)


def measure(n: int | None, reps: int, tmp: Path) -> dict[str, Any]:
    """Each repetition in a fresh database: a second family on the same table would
    compose with the first (one domain) and plan another problem."""
    sorts, releases, ratios, summary, rows, version = [], [], [], {}, 0, ""
    for rep in range(reps):
        db = Database(10)
        try:
            with psycopg.connect(db.url, autocommit=True) as conn:
                rows = load(conn, n, tmp / f"hier_{n}_{rep}")
                conn.execute("SELECT sqlanon.python_info()").fetchall()  # warm-up
                sort_s, _ = timed(conn, SORT)
                conn.execute("DROP TABLE t2")
                release_s, out = timed(conn, RELEASE, ["fam"])
                summary = out[0][0]
                version = conn.execute("SHOW server_version").fetchone()[0]
        finally:
            db.drop()
        sorts.append(sort_s)
        releases.append(release_s)
        ratios.append(release_s / sort_s)
        print(f"n={rows} rep {rep}: sort {sort_s:.2f}s release {release_s:.2f}s", flush=True)
    med = statistics.median
    return {
        "table": "Adult" if n is None else "synthetic",
        "rows": rows,
        "reps": reps,
        "sort": med(sorts),
        "release": med(releases),
        "ratio": med(ratios),
        "summary": summary,
        "server": version,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 1_000_000],
                        help="0: the ARX Adult table itself")  # fmt: skip
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-report", action="store_true", help="print, do not write")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sqlanon_pg_lhd_") as tmp:
        Path(tmp).chmod(0o755)
        results = [
            measure(n or None, args.reps if not n else max(1, args.reps // 3), Path(tmp))
            for n in args.sizes
        ]
    lines = [
        f"### lHD release inside PostgreSQL (l = 2, SA {SENSITIVE[0]}, {len(QUASI)} QI)\n",
        f"`bench/pg_lhd_release.py`, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"PostgreSQL {results[0]['server']} (the `scripts/pg` test server), PL/Python. Each "
        "repetition in a fresh database, one connection, after a warm-up call that imports "
        f"sqlanon into the session's PL/Python. (a) `{SORT}` (dropped again); (b) "
        "`sqlanon.release_lhd('t', 'fam', key => 'id', quasi => <8 QI>, sensitive => "
        "ARRAY['occupation'], l => 2)`, a first version (the engine path: units counted in "
        f"SQL, the plan joined back). Medians over the repetitions of (a), (b) and of the "
        "per-repetition ratio b/a. Adult as in `bench/lhd_release.py` (DuckDB); the synthetic "
        "rows are drawn the same way with other draws (numpy, seed 0).\n",
        "| table | rows | repetitions | (a) sort s | (b) release s | **b/a** | classes "
        "| precision loss | left out |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        s = r["summary"]
        lines.append(
            f"| {r['table']} | {r['rows']:,} | {r['reps']} | {r['sort']:.2f} | {r['release']:.2f} "
            f"| **{r['ratio']:.1f}** | {s['groups']:,} | {s['precision_loss']:.4f} "
            f"| {s['suppressed'] + s['held_back']:,} |"
        )
    body = "\n".join(lines) + "\n"
    print(body)
    if not args.no_report:
        print(replace_section("pg_lhd_release", body))


if __name__ == "__main__":
    main()
