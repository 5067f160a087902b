"""The main job: replay the seeds' experiment on the bundled Adult subset.

Half of the 1,427 records (file order) are published first, the rest arrive in ten
parts, and a release follows each part. Three ways of publishing are compared on the
same DuckDB file: sqlanon's default policy, the seeds' published rule (``paper``),
and independent re-release of each version. The audit counts the records an
attacker holding every version can pin down.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from sqlanon.display import print_table
from sqlanon.duckdb.register import install
from sqlanon.duckdb.session import DuckDBSession
from sqlanon.metrics import error_ratio
from sqlanon.release.ke_release import release_ke
from sqlanon.state.audit_reads import audit_family, audit_versions

QUASI = ["age", "sex", "education", "marital_status", "race"]
PARTS = 10


def bundled_adult() -> Path:
    """The bundled CSV (see sqlanon/data/ATTRIBUTION.md)."""
    return Path(str(resources.files("sqlanon") / "data" / "adult_capital_loss.csv"))


def load_adult(con: duckdb.DuckDBPyConnection, table: str = "adult_all") -> int:
    """Load the bundled Adult data into the table ``table`` (one name, quoted: ``full``
    or ``my table`` work too); the number of rows."""
    name = '"' + table.replace('"', '""') + '"'
    con.execute(
        f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM read_csv($1, header = true)",  # noqa: S608
        [str(bundled_adult())],
    )
    row = con.execute(f"SELECT count(*) FROM {name}").fetchone()  # noqa: S608
    assert row is not None
    return int(row[0])


def append_schedule(n: int, parts: int = PARTS) -> list[int]:
    """Row counts after each version: half first, then ``parts`` equal-ish appends."""
    first = n // 2
    rest = n - first
    return [first] + [first + (rest * (i + 1)) // parts for i in range(parts)]


def run_experiment(
    con: duckdb.DuckDBPyConnection,
    k: int,
    e: float,
    strategies: tuple[str, ...],
    counts: list[int] | None = None,
    audit: bool = True,
) -> dict[str, list[dict[str, Any]]]:
    """Release after every append for each strategy; rows per version with the audit.
    ``counts``: the table's rows at each version (default :func:`append_schedule`);
    ``audit`` False leaves the audit out (``exposed`` is then absent).

    Releases of one source compose (they share a domain), so each strategy releases its
    own copy of the table under a domain of its own (``domain :=``, the explicit way to
    say "other people"), and independent re-release gives every version its own copy
    and domain: nothing constrains one strategy by another. The audit then links them
    by key as an attacker holding them all would.
    """
    n = load_adult(con)
    counts = counts or append_schedule(n)
    results: dict[str, list[dict[str, Any]]] = {s: [] for s in strategies}
    independent: list[tuple[str, int]] = []
    session = DuckDBSession(con)
    try:
        for strategy in strategies:
            if strategy != "independent":
                con.execute(
                    f"CREATE OR REPLACE TABLE source_{strategy} AS "  # noqa: S608
                    "SELECT * FROM adult_all LIMIT 0"
                )
        loaded = 0
        for version, count in enumerate(counts, start=1):
            for strategy in strategies:
                if strategy == "independent":
                    source, family = f"source_indep_{version}", f"adult_indep_{version}"
                    con.execute(
                        f"CREATE OR REPLACE TABLE {source} AS "  # noqa: S608
                        "SELECT * FROM adult_all ORDER BY id LIMIT $1",
                        [count],
                    )
                    independent.append((family, 1))
                    policy = "auto"
                else:
                    source, family, policy = f"source_{strategy}", f"adult_{strategy}", strategy
                    con.execute(
                        f"INSERT INTO {source} SELECT * FROM adult_all "  # noqa: S608
                        "ORDER BY id LIMIT $1 OFFSET $2",
                        [count - loaded, loaded],
                    )
                summary = release_ke(
                    session,
                    source,
                    family,
                    key="id",
                    sensitive="capital_loss",
                    quasi=QUASI,
                    k=k,
                    e=e,
                    policy=policy,
                    domain_name=family,
                )
                summary["version"] = version
                results[strategy].append(summary)
            loaded = count
        for strategy in strategies if audit else ():
            if strategy == "independent":
                audits = audit_versions(session, independent)
            else:
                audits = audit_family(session, f"adult_{strategy}")
            for row, audited in zip(results[strategy], audits, strict=True):
                row["exposed"] = audited["exposed"]
    finally:
        session.close()
    return results


def run_demo(db: str, k: int = 5, e: float = 20) -> dict[str, list[dict[str, Any]]]:
    path = Path(db)
    for stale in (path, Path(f"{db}.wal")):
        stale.unlink(missing_ok=True)
    con = duckdb.connect(db)
    try:
        install(con)
        strategies = ("auto", "paper", "independent")
        results = run_experiment(con, k, e, strategies)
    finally:
        con.close()
    print(f"Adult, capital-loss, k={k}, e={e}: half published first, then {PARTS} appends")
    print(f"DuckDB file: {db}\n")
    titles = {
        "auto": "sqlanon default policy (auto, cell rule)",
        "paper": "the seeds' published rule (policy paper)",
        "independent": "independent re-release of every version",
    }
    for strategy, rows in results.items():
        print(titles[strategy])
        print_table(
            [
                {
                    "version": r["version"],
                    "rows": r["source_rows"],
                    "published": r["rows_published"],
                    "groups": r["groups"],
                    "held back": r["held_back"],
                    "sum of errors": r["sum_of_errors"],
                    "x optimum of published": error_ratio(
                        r["sum_of_errors"], r.get("published_optimum")
                    ),
                    "exposed": r["exposed"],
                }
                for r in rows
            ]
        )
        print()
    return results
