"""Two (k,e) and two lHD families on one live source: what each version leaves out.

The bundled Adult subset (1,427 records, ``sqlanon.demo``): 60% loaded first, then
rounds of changes, each followed by a release of every family in turn (**K1** (k,e)
k=5, e=20 of capital-loss; **L1** lHD l=3, QI age, sex, education, SA capital-loss;
**K2** (k,e) k=3, e=10 of hours-per-week; **L2** lHD l=3, QI marital-status, race,
sex, SA capital-loss and hours-per-week). A round: 2% of the live records deleted, 2%
get another capital-loss, 1% a new age, then 5% of the records inserted. Per version:
records, left out (held back + suppressed; of them by the chain rule), groups or
classes, and the records exposed over every release of the source so far by
``bench/attacker.py`` (cell check / multiset subtraction; each incarnation a record).
Releases run at ``max_suppression`` 1.0, so that what the rule forces shows instead
of a refusal; the default 0.05 is the contract the table is read against.

    .venv/bin/python bench/live_mixed.py [--seeds 3] [--rounds 4] [--no-report]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

import sqlanon
from sqlanon import demo

sys.path.insert(0, str(Path(__file__).resolve().parent))
import attacker  # noqa: E402
import report  # noqa: E402

FAMILIES: list[tuple[str, str, dict[str, Any]]] = [
    ("K1", "ke", {"sensitive": "capital_loss", "quasi": demo.QUASI, "k": 5, "e": 20}),
    (
        "L1",
        "lhd",
        {"quasi": ["age", "sex", "education"], "sensitive": ["capital_loss"], "l": 3},
    ),
    ("K2", "ke", {"sensitive": "hours_per_week", "quasi": demo.QUASI, "k": 3, "e": 10}),
    (
        "L2",
        "lhd",
        {
            "quasi": ["marital_status", "race", "sex"],
            "sensitive": ["capital_loss", "hours_per_week"],
            "l": 3,
        },
    ),
]
SHARES = {"delete": 0.02, "value": 0.02, "quasi": 0.01, "insert": 0.05}


def change(con: duckdb.DuckDBPyConnection, rng: np.random.Generator, losses: np.ndarray) -> None:
    """One round of changes of the source ``adult``."""
    live = [r[0] for r in con.execute("SELECT id FROM adult ORDER BY id").fetchall()]
    n = len(live)
    counts = [max(1, round(SHARES[kind] * n)) for kind in ("delete", "value", "quasi")]
    picked = rng.choice(n, size=sum(counts), replace=False)
    deleted = [live[i] for i in picked[: counts[0]]]
    valued = [live[i] for i in picked[counts[0] : counts[0] + counts[1]]]
    aged = [live[i] for i in picked[counts[0] + counts[1] :]]
    con.execute("DELETE FROM adult WHERE id IN (SELECT unnest($1))", [deleted])
    for key in valued:
        now = con.execute("SELECT capital_loss FROM adult WHERE id = $1", [key]).fetchone()[0]
        con.execute(
            "UPDATE adult SET capital_loss = $1 WHERE id = $2",
            [int(rng.choice(losses[losses != now])), key],
        )
    con.execute("UPDATE adult SET age = age + 1 WHERE id IN (SELECT unnest($1))", [aged])
    con.execute(
        "INSERT INTO adult SELECT * FROM adult_all WHERE id NOT IN (SELECT id FROM loaded) "
        "ORDER BY id LIMIT $1",
        [max(1, round(SHARES["insert"] * n))],
    )
    con.execute("INSERT INTO loaded SELECT id FROM adult WHERE id NOT IN (SELECT id FROM loaded)")


def release(con: duckdb.DuckDBPyConnection, name: str, model: str, params: dict) -> dict:
    family = name.lower()
    if model == "ke":
        return sqlanon.release_ke(con, "adult", family, key="id", **params)
    return sqlanon.release_lhd(con, "adult", family, key="id", max_suppression=1.0, **params)


def exposed(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """Records exposed over every release of the source so far (cell check,
    subtraction): each record with its true values, the kept ones for ghosts."""
    releases = con.execute(
        "SELECT family, version, model, CAST(parameters AS VARCHAR) FROM sqlanon.releases "
        "ORDER BY seq"
    ).fetchall()
    members = con.execute(
        "SELECT family, version, record_key, coalesce(group_id, -1) FROM sqlanon.members "
        "WHERE status = 'published'"
    ).fetchall()
    keys = sorted({m[2] for m in members})
    index = {key: i for i, key in enumerate(keys)}
    values = {}
    for a in ("capital_loss", "hours_per_week"):
        value = dict(
            con.execute(f"SELECT CAST(id AS VARCHAR), {a} FROM adult").fetchall()  # noqa: S608
        )
        value.update(
            (r, float(v))
            for r, v in con.execute(
                "SELECT record_key, value FROM sqlanon.kept_values WHERE attribute = $1",
                [a],
            ).fetchall()
        )
        values[a] = np.array([float(value.get(key, np.nan)) for key in keys])
    found = []
    for family, version, model, parameters in releases:
        p = json.loads(parameters)
        group = np.full(len(keys), -1, dtype=np.int64)
        for f, v, key, g in members:
            if f == family and v == version:
                group[index[key]] = g
        if model == "ke":
            found.append(attacker.Release.ke(group, p["sensitive"], p["k"], p["e"]))
        else:
            found.append(attacker.Release.lhd(group, p["sensitive"], p["l"]))
    cell, subtraction, _ = attacker.attack(values, found).counts()
    return cell, subtraction


def run(seed: int, rounds: int, path: Path) -> list[dict[str, Any]]:
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    n = demo.load_adult(con)
    sqlanon.load_hierarchies(con, "adult")
    rng = np.random.default_rng(seed)
    losses = np.array([r[0] for r in con.execute("SELECT capital_loss FROM adult_all").fetchall()])
    first = round(0.6 * n)
    ids = [r[0] for r in con.execute("SELECT id FROM adult_all ORDER BY id").fetchall()]
    chosen = [int(i) for i in rng.choice(ids, size=first, replace=False)]
    con.execute(
        "CREATE TABLE adult AS SELECT * FROM adult_all WHERE id IN (SELECT unnest($1))", [chosen]
    )
    con.execute("CREATE TABLE loaded AS SELECT id FROM adult")
    rows = []
    for r in range(rounds + 1):
        if r:
            change(con, rng, losses)
        for name, model, params in FAMILIES:
            s = release(con, name, model, params)
            records = s.get("records", s["rows_published"] + s["held_back"] + s["suppressed"])
            rows.append(
                {
                    "round": r,
                    "family": name,
                    "records": records,
                    "left_out": s["held_back"] + s["suppressed"],
                    "chain_held": s.get("chain_held", 0),
                    "groups": s["groups"],
                    "exposed": exposed(con),
                }
            )
    con.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        runs = [
            run(seed, args.rounds, Path(tmp) / f"mixed_{seed}.duckdb")
            for seed in range(1, args.seeds + 1)
        ]
    lines = [
        __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        f"Medians over {args.seeds} seeds (which rows change, and how); exposed: the most "
        "over the seeds.",
        "",
        "| round | family | records | left out | of which chain rule | share left out "
        "| groups / classes | exposed (cell / subtraction) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, row in enumerate(runs[0]):
        at = [r[i] for r in runs]

        def med(name: str, at: list[dict[str, Any]] = at) -> float:
            return statistics.median(float(r[name]) for r in at)

        share = statistics.median(r["left_out"] / r["records"] for r in at)
        cells = max(r["exposed"][0] for r in at)
        sub = max(r["exposed"][1] for r in at)
        lines.append(
            f"| {row['round']} | {row['family']} | {med('records'):,.0f} | "
            f"{med('left_out'):,.0f} | {med('chain_held'):,.0f} | {share:.1%} | "
            f"{med('groups'):,.0f} | {cells} / {sub} |"
        )
    body = "\n".join(lines)
    print(body)
    if not args.no_report:
        report.replace_section(
            "live_mixed", "### Two (k,e) and two lHD families on a live source\n\n" + body
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
