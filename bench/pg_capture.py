"""Change capture on PostgreSQL (issue 27): what it costs the source's writers, and
what it saves a later release.

A fresh database on the test server (``scripts/pg start``) with sqlanon installed.

**Writers.** Two equal tables ``w_on`` and ``w_off`` (id bigint PRIMARY KEY, age, zip,
sex, s; ``--background`` rows each), ``sqlanon.capture_changes('w_on', 'id')`` on the
first. Per size N (``--sizes``), per run (``--runs``, the two tables alternating, which
goes first alternating too), each statement in autocommit: a bulk INSERT of N rows
(``INSERT ... SELECT FROM generate_series``), an UPDATE of a value of those N rows, an
UPDATE of their key (each key leaves: N captured keys), a DELETE of them; then
``--single`` single-row statements in a loop inside one server-side ``DO`` block (no
client round trip to hide the triggers' cost), then the same from the client, each in
autocommit: INSERT, UPDATE of a value, DELETE. Each
run's captured entries are deleted and both tables vacuumed between runs (untimed).
Reported: medians, and the median of the per-run ratios on / off.

**A later release.** Two copies of the synthetic table of ``bench/ke_release.py``
(``--rows``), each released by the server's PL/Python (``sqlanon.release_ke``, its own
domain), capture on for the first before its version 1. Then ``--weeks`` times: the
week's change of ``bench/pg_incremental.py`` (+1% inserted, 0.2% deleted, 0.2% with age
+ 1) on both, the deleted records looked up both ways (``sqlanon/sql/live_gone.sql``,
the full anti-join, and ``capture_gone*.sql`` over the captured keys: ``--runs``
alternated runs each, with the settings a release runs under), then both releases, the
order alternating.

    .venv/bin/python bench/pg_capture.py [--rows 200000] [--weeks 2] [--runs 5]

(10^6 rows did not run within a few minutes on the shared machine: a later release there
takes about a minute, BENCHMARKS.md ``pg-incremental``.)
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ke_release import synthetic  # noqa: E402
from pg_release import Database  # noqa: E402
from report import replace_section  # noqa: E402

from sqlanon import sqltext  # noqa: E402
from sqlanon.postgres.session import PsycopgSession  # noqa: E402
from sqlanon.release.engine_path import tune_postgres  # noqa: E402
from sqlanon.state import capture, catalog  # noqa: E402
from sqlanon.state.source import resolve_source  # noqa: E402

RELEASE = (
    "SELECT sqlanon.release_ke({}, {}, key => 'id', sensitive => 's', "
    "quasi => ARRAY['age', 'zip', 'sex'], k => 5, e => 10, domain => {})"
)
#: The writers' statements, each on table {t} with N rows from id {base} (bench names
#: and integers only).
BULK = {
    "INSERT": "INSERT INTO {t} SELECT {base} + i, 17 + mod(i, 74), 10000 + mod(i * 7, 90000), "
    "'F', mod(i, 997) FROM generate_series(0, {n} - 1) AS i",
    "UPDATE value": "UPDATE {t} SET s = s + 1 WHERE id >= {base} AND id < {base} + {n}",
    "UPDATE key": "UPDATE {t} SET id = id + 1000000000 WHERE id >= {base} AND id < {base} + {n}",
    "DELETE": "DELETE FROM {t} WHERE id >= 1000000000 + {base}",
}
SINGLE = {
    "INSERT": "INSERT INTO {t} VALUES ({base} + i, 17 + mod(i, 74), 10000 + mod(i * 7, 90000), "
    "'F', mod(i, 997))",
    "UPDATE value": "UPDATE {t} SET s = s + 1 WHERE id = {base} + i",
    "DELETE": "DELETE FROM {t} WHERE id = {base} + i",
}


def _timed(conn: Any, statement: str) -> float:
    start = time.perf_counter()
    conn.execute(statement)
    return time.perf_counter() - start


def writers(conn: Any, sizes: list[int], single: int, runs: int, background: int) -> dict[str, Any]:
    """Per (statement, size): the times with and without capture, per run."""
    for table in ("w_on", "w_off"):
        conn.execute(
            f"CREATE TABLE {table} (id bigint PRIMARY KEY, age integer, zip integer, "
            "sex text, s integer)"
        )
        conn.execute(BULK["INSERT"].format(t=table, base=1, n=background))
        conn.execute(f"VACUUM ANALYZE {table}")
    conn.execute("SELECT sqlanon.capture_changes('w_on', 'id')")
    times: dict[tuple[str, str], dict[str, list[float]]] = {}
    base = 10_000_000
    for run in range(runs):
        order = ("w_on", "w_off") if run % 2 == 0 else ("w_off", "w_on")
        for n in sizes:
            for table in order:
                for name, template in BULK.items():
                    spent = _timed(conn, template.format(t=table, base=base, n=n))
                    times.setdefault((name, f"{n:,} rows"), {}).setdefault(table, []).append(spent)
        for table in order:
            for name, body in SINGLE.items():
                loop = (
                    f"DO $$ BEGIN FOR i IN 0..{single - 1} LOOP "
                    + body.format(t=table, base=base)
                    + "; END LOOP; END $$"
                )
                spent = _timed(conn, loop)
                times.setdefault((name, f"{single:,} x 1 row, server loop"), {}).setdefault(
                    table, []
                ).append(spent)
        for table in order:  # the same from the client, a round trip and commit each
            for name, body in SINGLE.items():
                statement = re.sub(r"\bi\b", "%s::int", body.format(t=table, base=base))
                start = time.perf_counter()
                for i in range(single):
                    conn.execute(statement, [i] * statement.count("%s"))
                spent = time.perf_counter() - start
                times.setdefault((name, f"{single:,} x 1 row, client"), {}).setdefault(
                    table, []
                ).append(spent)
        conn.execute("DELETE FROM sqlanon.captured")
        conn.execute("VACUUM ANALYZE w_on, w_off")
    return {
        "rows": [
            {
                "statement": name,
                "size": size,
                "on": statistics.median(t["w_on"]),
                "off": statistics.median(t["w_off"]),
                "ratio": statistics.median(
                    a / b for a, b in zip(t["w_on"], t["w_off"], strict=True)
                ),
            }
            for (name, size), t in times.items()
        ],
    }


def load(conn: Any, table: str, rows: dict[str, np.ndarray]) -> None:
    conn.execute(
        sql.SQL(
            "CREATE TABLE {} (id bigint PRIMARY KEY, age integer, zip integer, sex text, s integer)"
        ).format(sql.Identifier(table))
    )
    columns = [np.asarray(v).tolist() for v in rows.values()]
    with conn.cursor().copy(sql.SQL("COPY {} FROM STDIN").format(sql.Identifier(table))) as copy:
        for row in zip(*columns, strict=True):
            copy.write_row(row)
    conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table)))


def week(conn: Any, table: str, n: int, w: int, next_id: int) -> None:
    """The week's change of bench/pg_incremental.py."""
    t = sql.Identifier(table)
    conn.execute(
        sql.SQL("DELETE FROM {} WHERE mod(abs(hashtext(id::text || %s || 'd')), 500) = 0").format(
            t
        ),
        [w],
    )
    conn.execute(
        sql.SQL(
            "UPDATE {} SET age = age + 1 WHERE mod(abs(hashtext(id::text || %s || 'q')), 500) = 0"
        ).format(t),
        [w],
    )
    rows = synthetic(n // 100, next_id, seed=1000 + w)
    columns = [np.asarray(v).tolist() for v in rows.values()]
    with conn.cursor().copy(sql.SQL("COPY {} FROM STDIN").format(t)) as copy:
        for row in zip(*columns, strict=True):
            copy.write_row(row)
    conn.execute(sql.SQL("ANALYZE {}").format(t))


def lookups(conn: Any, runs: int) -> dict[str, Any]:
    """The deleted records of each family's last version, found by the full anti-join
    (on the copy without capture) and from the captured keys (on the captured copy)."""
    session = PsycopgSession(conn)
    with session.transaction():
        tune_postgres(session)  # as a release runs: work_mem raised, no JIT
        on, off = resolve_source(session, "t_on"), resolve_source(session, "t_off")
        last_on = catalog.releases(session, "fon")[-1]
        last_off = catalog.releases(session, "foff")[-1]
        full = sqltext.render(
            sqltext.load("postgres", "live_gone"),
            key=session.quote_ident("id"),
            source=off.qualified(session),
        )
        spent: dict[str, list[float]] = {"full": [], "captured": []}
        found: dict[str, int] = {}
        for run in range(runs):
            for way in ("full", "captured") if run % 2 == 0 else ("captured", "full"):
                start = time.perf_counter()
                if way == "full":
                    rows = session.query(full, [last_off.family, last_off.version])
                else:
                    got = capture.gone(session, last_on, on, "id")
                    assert got is not None, "capture not usable"
                    rows = list(got)
                spent[way].append(time.perf_counter() - start)
                found[way] = len(rows)
    assert found["full"] == found["captured"], found
    return {
        "full": statistics.median(spent["full"]),
        "captured": statistics.median(spent["captured"]),
        "ratio": statistics.median(
            a / b for a, b in zip(spent["captured"], spent["full"], strict=True)
        ),
        "gone": found["full"],
    }


def releases(conn: Any, n: int, weeks: int, runs: int) -> dict[str, Any]:
    rows = synthetic(n, 1, seed=n)
    load(conn, "t_on", rows)
    load(conn, "t_off", rows)
    conn.execute("SELECT sqlanon.capture_changes('t_on', 'id')")

    def release(table: str, family: str) -> float:
        statement = sql.SQL(RELEASE).format(
            sql.Literal(table), sql.Literal(family), sql.Literal(f"d_{table}")
        )
        return _timed(conn, statement.as_string(conn))

    firsts = {"on": release("t_on", "fon"), "off": release("t_off", "foff")}
    later: dict[str, list[float]] = {"on": [], "off": []}
    found = []
    next_id = n + 1
    for w in range(1, weeks + 1):
        for table in ("t_on", "t_off"):
            week(conn, table, n, w, next_id)
        next_id += n // 100
        found.append(lookups(conn, runs))
        order = [("t_on", "fon", "on"), ("t_off", "foff", "off")]
        for table, family, side in order if w % 2 else order[::-1]:
            later[side].append(release(table, family))
    left = conn.execute("SELECT count(*) FROM sqlanon.captured").fetchone()[0]
    return {"firsts": firsts, "later": later, "lookups": found, "left": left}


def section(args: argparse.Namespace, written: dict[str, Any], released: dict[str, Any]) -> str:
    lines = [
        "### Change capture on PostgreSQL: the writers' cost, a later release's gain",
        "",
        f"`bench/pg_capture.py`, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"PostgreSQL {written['server']} (the `scripts/pg` test server: fsync off), on a "
        "2-core machine shared with other work (load average "
        f"{written['load']:.1f} at the start, {released['load']:.1f} at the end: every "
        "figure is noisy, the ratios are side by side). Capture: "
        "`sqlanon.capture_changes(source, key)`, three statement-level AFTER triggers "
        "(DELETE and UPDATE with transition tables, TRUNCATE); INSERT has none, so its "
        "ratio shows the noise.",
        "",
        f"**Writers**: two equal tables (id bigint PRIMARY KEY + 4 columns, "
        f"{args.background:,} rows each), capture on one; each statement in autocommit, "
        f"medians of {args.runs} alternated runs and the median of the per-run ratios. "
        f"Single-row statements: {args.single:,} in a loop, inside one `DO` block (no "
        "client round trip hides the triggers) and from the client (autocommit: a round "
        "trip and a commit each, what an application sees; the server is local).",
        "",
        "| statement | rows | without capture s | with capture s | with / without |",
        "|---|---|---|---|---|",
    ]
    for row in written["rows"]:
        lines.append(
            f"| {row['statement']} | {row['size']} | {row['off']:.3f} | {row['on']:.3f} "
            f"| **{row['ratio']:.2f}x** |"
        )
    rel = released
    on, off = statistics.median(rel["later"]["on"]), statistics.median(rel["later"]["off"])
    lines += [
        "",
        f"**A later release** (`sqlanon.release_ke` run by the server's PL/Python, k = 5, "
        f"e = 10, quasi age, zip, sex) of {args.rows:,} rows (10^6 did not fit in a few "
        "minutes here: a later release of 10^6 rows takes about a minute, `pg-incremental`), "
        "two copies in their own "
        f"domains, capture on one since before its version 1; {args.weeks} weekly changes "
        "(+1% inserted, 0.2% deleted, 0.2% with age + 1), both copies released after each, "
        "the order alternating. Version 1: "
        f"{rel['firsts']['off']:.1f} s without capture, {rel['firsts']['on']:.1f} s with.",
        "",
        "| | without capture | with capture | with / without |",
        "|---|---|---|---|",
        f"| later release, median s | {off:.2f} | {on:.2f} | **{on / off:.2f}x** |",
    ]
    for w, found in enumerate(rel["lookups"], start=1):
        lines.append(
            f"| week {w}: finding the {found['gone']:,} deleted records, median ms "
            f"({args.runs} alternated runs) | {found['full'] * 1000:.1f} "
            f"| {found['captured'] * 1000:.1f} | **{found['ratio']:.3f}x** |"
        )
    lines += [
        "",
        f"Captured entries left after the last release: {rel['left']} (each release deletes "
        "what every domain of the source has read past). Finding the deleted records from "
        "the captured keys still scans the family's member spans once (they have no index "
        "by key); it no longer hashes the whole source.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--weeks", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--single", type=int, default=1_000)
    parser.add_argument("--background", type=int, default=100_000)
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args()
    db = Database(1000)
    try:
        with psycopg.connect(db.url, autocommit=True) as conn:
            server = conn.execute("SHOW server_version").fetchone()[0]
            load = os.getloadavg()[0]
            written = writers(conn, args.sizes, args.single, args.runs, args.background)
            written["server"] = server
            written["load"] = load
            print(written)
            released = releases(conn, args.rows, args.weeks, args.runs)
            released["load"] = os.getloadavg()[0]
            print(released)
    finally:
        db.drop()
    markdown = section(args, written, released)
    print(markdown)
    if not args.no_report:
        print("wrote", replace_section("pg_capture", markdown))


if __name__ == "__main__":
    main()
