"""(k,e) releases inside PostgreSQL (the SQL function, run by the server's PL/Python)
against sorting the table in the same server, and interval queries against the plain
aggregate on the release.

For each size n, a fresh database on the test server (``scripts/pg start``) with sqlanon
installed holds ``t``: the synthetic rows of ``bench/ke_release.py`` (id, age, zip, sex,
skewed integer S), loaded with COPY. On one connection, after a warm-up call that
imports sqlanon, numpy and sqlglot into the session's PL/Python, each repetition times

  (a) ``CREATE TABLE t2 AS SELECT * FROM t ORDER BY s`` (then dropped), and
  (b) ``SELECT sqlanon.release_ke('t', 'fam_<rep>', key => 'id', sensitive => 's',
      quasi => ARRAY['age', 'zip', 'sex'], k => 5, e => 20)`` (a first version),

and the median of the per-repetition ratios b/a is reported. Then, on the last release,
``SELECT * FROM sqlanon.interval_json('SELECT sex, SUM(s) ... GROUP BY sex')`` against the
same query on the release table (and against running sqlanon.interval_sql's output
directly), alternating, median of per-run ratios. ``--profile N`` runs one release of N
rows inside the server under cProfile, with the time of every SQL statement it sends.

    .venv/bin/python bench/pg_release.py [--sizes 100000 1000000] [--reps 3] [--query-reps 5]
    .venv/bin/python bench/pg_release.py --profile 1000000   # print the profile only
    .venv/bin/python bench/pg_release.py --profile 1000000 --sizes 100000 1000000  # both
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ke_release import synthetic  # noqa: E402
from report import replace_section  # noqa: E402

from sqlanon.postgres.install import install_postgres, with_prologue  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
K, E = 5, 20
RELEASE = (
    "SELECT sqlanon.release_ke('t', %s, key => 'id', sensitive => 's', "
    "quasi => ARRAY['age', 'zip', 'sex'], k => 5, e => 20)"
)
SORT = "CREATE TABLE t2 AS SELECT * FROM t ORDER BY s"
QUERY = "SELECT sex, SUM(s) AS total, COUNT(*) AS n FROM {} GROUP BY sex"

PROFILE_FUNCTION = """\
CREATE OR REPLACE FUNCTION public.bench_profile_release(family text) RETURNS text
LANGUAGE plpython3u AS $py$
# sqlanon: prologue
import cProfile, io, pstats, time
from collections import defaultdict
from sqlanon.release import ke_release as release
from sqlanon.postgres.session import PlpySession

spent = defaultdict(float)

class Timed(PlpySession):
    def _run(self, text, params, types):
        start = time.perf_counter()
        try:
            return super()._run(text, params, types)
        finally:
            lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("--")]
            spent[" ".join(lines[0].split())[:90] if lines else "?"] += time.perf_counter() - start

profiler = cProfile.Profile()
start = time.perf_counter()
profiler.enable()
release.release_ke(Timed(plpy), "t", family, key="id", sensitive="s",
                   quasi=["age", "zip", "sex"], k=5, e=20)
profiler.disable()
total = time.perf_counter() - start
out = io.StringIO()
statements = sum(spent.values())
out.write("release %.2f s inside the server; SQL statements %.2f s:\\n" % (total, statements))
for what, seconds in sorted(spent.items(), key=lambda kv: -kv[1])[:12]:
    out.write("  %7.3f  %s\\n" % (seconds, what))
text = io.StringIO()
pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(25)
out.write("\\ncProfile, cumulative:\\n" + "\\n".join(text.getvalue().splitlines()[6:]))
return out.getvalue()
$py$"""


def server_url() -> str:
    url_file = ROOT / ".pg" / "url"
    if not url_file.is_file():
        raise SystemExit("no test server: run scripts/pg start")
    return url_file.read_text().strip()


class Database:
    """A fresh database with sqlanon installed and ``t`` of ``n`` synthetic rows."""

    def __init__(self, n: int) -> None:
        self.admin_url = server_url()
        self.name = f"bench_pg_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(self.admin_url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))
        self.url = self.admin_url.rsplit("/", 1)[0] + "/" + self.name
        self.installed = install_postgres(self.url, python_root=ROOT / ".pg" / "python")
        rows = synthetic(n, 1, seed=n)
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(
                "CREATE TABLE t (id bigint, age integer, zip integer, sex text, s integer)"
            )
            columns = [np.asarray(v).tolist() for v in rows.values()]
            with conn.cursor().copy("COPY t FROM STDIN") as copy:
                for row in zip(*columns, strict=True):
                    copy.write_row(row)
            conn.execute("VACUUM ANALYZE t")

    def drop(self) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.name))
            )


def timed(conn: Any, query: Any, params: Any = None) -> tuple[float, Any]:
    start = time.perf_counter()
    cursor = conn.execute(query, params)
    rows = cursor.fetchall() if cursor.description else []
    return time.perf_counter() - start, rows


def drop_family(conn: Any, family: str) -> None:
    """A first version's family gone, so the next repetition releases a first version too:
    its views (the version and its bounds are views since issue 27), its rows, history and
    bounds tables, and its private state."""
    conn.execute(sql.SQL("DROP VIEW {}").format(sql.Identifier(family)))
    conn.execute(sql.SQL("DROP VIEW {}").format(sql.Identifier(f"{family}_v1")))
    conn.execute(
        sql.SQL("DROP VIEW sqlanon_bounds.{}").format(sql.Identifier(f"{family}_v1_bounds"))
    )
    for table in ("rows", "history", "bounds"):
        conn.execute(
            sql.SQL("DROP TABLE sqlanon_bounds.{}").format(sql.Identifier(f"{family}__{table}"))
        )
    conn.execute("DELETE FROM sqlanon.member_spans WHERE family = %s", [family])
    conn.execute("DELETE FROM sqlanon.cell_spans WHERE family = %s", [family])
    conn.execute("DELETE FROM sqlanon.state_versions WHERE family = %s", [family])
    conn.execute("DELETE FROM sqlanon.releases WHERE family = %s", [family])


def measure(n: int, reps: int, query_reps: int) -> dict[str, Any]:
    db = Database(n)
    try:
        with psycopg.connect(db.url, autocommit=True) as conn:
            start = time.perf_counter()
            conn.execute("SELECT sqlanon.python_info()").fetchall()
            cold = time.perf_counter() - start
            sorts, releases, ratios, summary = [], [], [], {}
            for rep in range(reps):
                family = f"fam_{rep}"
                sort_s, _ = timed(conn, SORT)
                conn.execute("DROP TABLE t2")
                release_s, rows = timed(conn, RELEASE, [family])
                summary = rows[0][0]
                sorts.append(sort_s)
                releases.append(release_s)
                ratios.append(release_s / sort_s)
                if rep < reps - 1:
                    drop_family(conn, family)
            family = f"fam_{reps - 1}"
            plain_q = QUERY.format(f"{family}_v1")
            analyst_q = QUERY.format(family)
            rewritten = conn.execute("SELECT sqlanon.interval_sql(%s)", [analyst_q]).fetchone()[0]
            timed(conn, "SELECT * FROM sqlanon.interval_json(%s)", [analyst_q])  # warm-up
            plain, interval, direct, by_interval, by_direct = [], [], [], [], []
            answers: list[Any] = []
            for _ in range(query_reps):
                p, _ = timed(conn, plain_q)
                i, answers = timed(conn, "SELECT * FROM sqlanon.interval_json(%s)", [analyst_q])
                d, _ = timed(conn, rewritten)
                plain.append(p)
                interval.append(i)
                direct.append(d)
                by_interval.append(i / p)
                by_direct.append(d / p)
            truth = dict(
                conn.execute(
                    "SELECT t.sex, sum(t.s) FROM sqlanon.members AS m JOIN t"
                    " ON t.id::text = m.record_key WHERE m.family = %s"
                    " AND m.status = 'published' GROUP BY t.sex",
                    [family],
                ).fetchall()
            )
            missed = sum(
                not (a["total_low"] <= truth[a["sex"]] <= a["total_high"]) for (a,) in answers
            )
            version = conn.execute("SHOW server_version").fetchone()[0]
            work_mem = conn.execute("SHOW work_mem").fetchone()[0]
    finally:
        db.drop()
    med = statistics.median
    return {
        "n": n,
        "cold": cold,
        "sort": med(sorts),
        "release": med(releases),
        "ratio": med(ratios),
        "groups": summary.get("groups"),
        "held_back": summary.get("held_back"),
        "plain_ms": med(plain) * 1000,
        "interval_ms": med(interval) * 1000,
        "direct_ms": med(direct) * 1000,
        "interval_ratio": med(by_interval),
        "direct_ratio": med(by_direct),
        "missed": missed,
        "server": version,
        "work_mem": work_mem,
    }


def profile(n: int) -> str:
    db = Database(n)
    try:
        with psycopg.connect(db.url, autocommit=True) as conn:
            conn.execute(
                with_prologue(PROFILE_FUNCTION, db.installed.python_dir, db.installed.deps_dir)
            )
            conn.execute("SELECT sqlanon.python_info()").fetchall()
            return str(conn.execute("SELECT public.bench_profile_release('prof')").fetchone()[0])
    finally:
        db.drop()


def report(results: list[dict[str, Any]], reps: int, query_reps: int, profiled: str) -> str:
    first = results[0]
    lines = [
        "### (k,e) release inside PostgreSQL vs a sorted copy; interval queries",
        "",
        f"`bench/pg_release.py`, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"PostgreSQL {first['server']} (the `scripts/pg` test server: fsync off, "
        f"work_mem {first['work_mem']}), PL/Python running the server's Python. Each size "
        "in a fresh database, one connection, after a warm-up call that imports sqlanon into "
        f"the session's PL/Python (that first call took {first['cold']:.2f} s). (a) `{SORT}` "
        f"(dropped again); (b) `{RELEASE % repr('fam_<rep>')}`, a first version. Median "
        f"over {reps} repetitions of (a), (b) and of the per-repetition ratio b/a.",
        "",
        "| rows | (a) sort s | (b) release s | **b/a** | groups | held back |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['n']:,} | {r['sort']:.2f} | {r['release']:.2f} | **{r['ratio']:.1f}** | "
            f"{r['groups']} | {r['held_back']} |"
        )
    plain_q, analyst_q = QUERY.format("fam_v1"), QUERY.format("fam")
    lines += [
        "",
        f"Interval query on that release, median of {query_reps} alternating runs (per-run "  # noqa: S608 - markdown, not SQL
        f"ratios): plain `{plain_q}` vs `SELECT * FROM sqlanon.interval_json('{analyst_q}')` "
        "(PL/Python: catalog lookup, rewrite, run, one jsonb per row) and vs running the "
        "`sqlanon.interval_sql(...)` text directly.",
        "",
        "| rows | plain ms | interval ms | **interval / plain** | rewritten SQL ms | "
        "rewritten / plain | intervals missing the truth |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['n']:,} | {r['plain_ms']:.1f} | {r['interval_ms']:.1f} | "
            f"**{r['interval_ratio']:.2f}** | {r['direct_ms']:.1f} | {r['direct_ratio']:.2f} | "
            f"{r['missed']} |"
        )
    if profiled:
        lines += ["", "Where the release's time goes (one release, inside the server):", "",
                  "```", profiled.strip(), "```"]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--query-reps", type=int, default=5)
    parser.add_argument("--profile", type=int, default=None, help="profile one release of N rows")
    parser.add_argument("--no-report", action="store_true", help="print, do not write")
    args = parser.parse_args()
    if args.profile and args.sizes is None:
        print(profile(args.profile))
        return
    results = []
    for n in args.sizes or [100_000, 1_000_000]:
        results.append(measure(n, args.reps, args.query_reps))
        print(json.dumps(results[-1]), flush=True)
    profiled = profile(args.profile) if args.profile else ""
    body = report(results, args.reps, args.query_reps, profiled)
    print(body)
    if not args.no_report:
        print(replace_section("postgres", body))


if __name__ == "__main__":
    main()
