"""The seeds' (k,e) experiment on a live table: deletes and corrections between versions.

The bundled Adult subset (1,427 records with capital-loss > 0, ``sqlanon.demo``): half
published first, then ten appends, a release after each, through the real DuckDB
pipeline (``sqlanon.release_ke``, policy ``auto``). In the **live** run, before every
release after the first, 2% of the rows the previous version published are deleted and
2% get a new capital-loss (another value of the data, different from theirs); the
**append-only** run gets the same appends and nothing else. Per version: rows published,
ghosts (deleted records and old incarnations, still in their groups), rows held back
(and how many of them by the chain rule), the sum of errors over the static optimum of
the live table (``sqlanon.models.ke_static.optimal_partition`` of the source as it is then,
itself unsafe to publish after earlier versions), and the records exposed over every
version so far by ``bench/attacker.py`` (cell check and multiset subtraction, ghosts as
members of their groups; it does not know the chains, the exact attacker of
``tests/test_live_duckdb.py`` does). Interval width: ``SUM(capital_loss) GROUP BY sex``
on the last version, (high - low) / true, live vs append-only.

    .venv/bin/python bench/live_tables.py [--seeds 3] [--no-report]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

import sqlanon
from sqlanon import demo
from sqlanon.models import ke_static

sys.path.insert(0, str(Path(__file__).resolve().parent))
import attacker  # noqa: E402
import report  # noqa: E402

SETTINGS = [(3, 20.0), (5, 100.0)]
SHARE = 0.02


def run(k: int, e: float, live: bool, seed: int, path: Path) -> dict[str, Any]:
    """One 11-version run; per-version rows and the final interval widths."""
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    n = demo.load_adult(con)
    con.execute("CREATE TABLE src AS SELECT * FROM adult_all LIMIT 0")
    rng = np.random.default_rng(seed)
    domain_values = np.array(
        [r[0] for r in con.execute("SELECT capital_loss FROM adult_all").fetchall()]
    )
    loaded, rows = 0, []
    for version, count in enumerate(demo.append_schedule(n), start=1):
        if live and version > 1:
            published = [
                r[0]
                for r in con.execute(
                    "SELECT record_key FROM sqlanon.members WHERE family = 'fam' "
                    "AND version = $1 AND status = 'published' AND NOT ghost ORDER BY 1",
                    [version - 1],
                ).fetchall()
            ]
            take = max(1, round(SHARE * len(published)))
            chosen = rng.choice(len(published), size=2 * take, replace=False)
            deleted = [int(published[i]) for i in chosen[:take]]
            changed = [int(published[i]) for i in chosen[take:]]
            con.execute("DELETE FROM src WHERE id IN (SELECT unnest($1))", [deleted])
            for key in changed:
                now = con.execute("SELECT capital_loss FROM src WHERE id = $1", [key]).fetchone()[0]
                other = domain_values[domain_values != now]
                con.execute(
                    "UPDATE src SET capital_loss = $1 WHERE id = $2",
                    [int(rng.choice(other)), key],
                )
        con.execute(
            "INSERT INTO src SELECT * FROM adult_all ORDER BY id LIMIT $1 OFFSET $2",
            [count - loaded, loaded],
        )
        loaded = count
        summary = sqlanon.release_ke(
            con, "src", "fam", key="id", sensitive="capital_loss", quasi=demo.QUASI, k=k, e=e,
            )  # fmt: skip
        current = np.array([r[0] for r in con.execute("SELECT capital_loss FROM src").fetchall()])
        group = ke_static.optimal_partition(current.astype(np.float64), k, e)
        static = float(sum(np.ptp(current[group == g]) for g in np.unique(group)))
        rows.append(
            {
                "version": version,
                "published": summary["rows_published"],
                "ghosts": summary.get("ghosts", 0),
                "held_back": summary["held_back"],
                "chain_held": summary.get("chain_held", summary.get("chain_held_back", 0)),
                "ratio": summary["sum_of_errors"] / static if static else float("nan"),
                "exposed": exposed(con, k, e),
            }
        )
    truth = dict(
        con.execute(
            "SELECT sex, sum(capital_loss) FROM src WHERE id IN (SELECT CAST(record_key AS "
            "INTEGER) FROM sqlanon.members WHERE family = 'fam' AND version = 11 "
            "AND status = 'published' AND NOT ghost) GROUP BY sex"
        ).fetchall()
    )
    widths = {}
    for r in sqlanon.interval(con, "SELECT sex, SUM(capital_loss) AS s FROM fam GROUP BY sex"):
        widths[r["sex"]] = (r["s_high"] - r["s_low"]) / truth[r["sex"]]
    con.close()
    return {"rows": rows, "widths": widths}


def exposed(con: duckdb.DuckDBPyConnection, k: int, e: float) -> tuple[int, int]:
    """Records exposed over every version so far (cell check, subtraction), with each
    record's true value: the source's for live records, the kept one for ghosts."""
    members = con.execute(
        "SELECT record_key, version, coalesce(group_id, -1) FROM sqlanon.members "
        "WHERE family = 'fam' ORDER BY version"
    ).fetchall()
    keys = sorted({m[0] for m in members})
    index = {key: i for i, key in enumerate(keys)}
    value = dict(con.execute("SELECT CAST(id AS VARCHAR), capital_loss FROM src").fetchall())
    value.update(
        (r, float(v))
        for r, v in con.execute(
            "SELECT record_key, value FROM sqlanon.kept_values WHERE record_key LIKE 'ghost:%'"
        ).fetchall()
    )
    versions = sorted({m[1] for m in members})
    releases = []
    for v in versions:
        group = np.full(len(keys), -1, dtype=np.int64)
        for key, version, g in members:
            if version == v:
                group[index[key]] = g
        releases.append(attacker.Release.ke(group, "s", k, e))
    values = {"s": np.array([float(value[key]) for key in keys])}
    cell, subtraction, _ = attacker.attack(values, releases).counts()
    return cell, subtraction


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args(argv)
    lines = [
        "The seeds' (k,e) experiment (Adult capital-loss, 1,427 records: half, then ten "
        "appends) on a live table: before every release after the first, 2% of the rows "
        "the previous version published are deleted and 2% get another capital-loss. "
        "`bench/live_tables.py`; per version, medians over "
        f"{args.seeds} seeds (which rows are deleted and changed, and to what). Sum of "
        "errors is over the static optimum of the live table at that version. Exposed: "
        "`bench/attacker.py` (worst-case cell check / multiset subtraction, ghosts as "
        "members of their groups) over every version so far.",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for k, e in SETTINGS:
            runs = {
                live: [
                    run(k, e, live, seed, Path(tmp) / f"r_{k}_{e:g}_{live}_{seed}.duckdb")
                    for seed in range(1, args.seeds + 1)
                ]
                for live in (True, False)
            }
            lines += [
                f"### k = {k}, e = {e:g}",
                "",
                "| version | published | ghosts | held back (chain rule) | error / static optimum"
                " | exposed (cell / subtraction) | append-only: error / static optimum |",
                "|---|---|---|---|---|---|---|",
            ]
            for i in range(11):
                at = [r["rows"][i] for r in runs[True]]
                base = [r["rows"][i] for r in runs[False]]

                def med(rows: list[dict[str, Any]], name: str) -> float:
                    return statistics.median(float(r[name]) for r in rows)

                cells = max(r["exposed"][0] for r in at)
                sub = max(r["exposed"][1] for r in at)
                lines.append(
                    f"| {i + 1} | {med(at, 'published'):.0f} | {med(at, 'ghosts'):.0f} | "
                    f"{med(at, 'held_back'):.0f} ({med(at, 'chain_held'):.0f}) | "
                    f"{med(at, 'ratio'):.3f} | {cells} / {sub} (max) | {med(base, 'ratio'):.3f} |"
                )
            width = {
                live: {
                    sex: statistics.median(r["widths"][sex] for r in runs[live])
                    for sex in runs[live][0]["widths"]
                }
                for live in (True, False)
            }
            lines += [
                "",
                "Interval width of `SUM(capital_loss) GROUP BY sex` on version 11, "
                "(high - low) / true, median: "
                + ", ".join(
                    f"{sex} {width[True][sex]:.4f} live vs {width[False][sex]:.4f} append-only"
                    for sex in sorted(width[True])
                )
                + ".",
                "",
            ]
    markdown = "\n".join(lines)
    print(markdown)
    if not args.no_report:
        print("wrote", report.replace_section("live_tables", markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
