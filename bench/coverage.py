"""Coverage of everyday analyst SQL: the corpus of issue 25 on DuckDB and PostgreSQL.

Runs every case of tests/rewrite_fixtures/corpus_ke.sql and corpus_lhd.sql (the runner is
tests/corpus.py, as tests/test_rewrite_corpus.py uses it) over releases of the bundled
Adult data: 1,200 records first, then a live change (deletions, changed ages and losses)
and the remaining 227 records, so version 2 has ghosts. DuckDB: a file in a temporary
directory, queries rewritten with ``sqlanon.rewrite``; PostgreSQL: a fresh database on
the test server (``scripts/pg start`` or ``SQLANON_TEST_PG_URL``), queries run through
``sqlanon.interval_json`` as a login role of ``sqlanon_analyst``. Each answer is checked
against the truth (the same query over the records each version published, with their
true values; lHD groups by published labels). Writes the section ``coverage`` of
BENCHMARKS.md: answered / refused / unsound per engine and model, the refused cases with
their reason, and the median interval width relative to the truth per construct.

    .venv/bin/python bench/coverage.py [--rows 1200] [--no-postgres] [--no-report]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
import report  # noqa: E402  (bench/ is not a package)

from tests import corpus  # noqa: E402

ENGINES = {"duckdb": "DuckDB", "postgres": "PostgreSQL"}
MODELS = {"ke": "(k,e)", "lhd": "lHD"}


def run_duckdb(rows: int, added: int) -> list[corpus.Outcome]:
    with tempfile.TemporaryDirectory(prefix="sqlanon_coverage_") as tmp:
        engine = corpus.DuckDBEngine(str(Path(tmp) / "adult.duckdb"))
        try:
            corpus.build(engine, rows, added)
            return corpus.run(engine, corpus.all_cases())
        finally:
            engine.close()


def run_postgres(rows: int, added: int) -> tuple[list[corpus.Outcome], str]:
    url_file = ROOT / ".pg" / "url"
    url = os.environ.get("SQLANON_TEST_PG_URL") or (
        url_file.read_text().strip() if url_file.is_file() else ""
    )
    if not url:
        raise SystemExit("no test server: run scripts/pg start (or pass --no-postgres)")
    python_root = Path(os.environ.get("SQLANON_TEST_PG_PYTHON_ROOT", ROOT / ".pg" / "python"))
    with corpus.postgres_engine(url, python_root) as engine:
        version = engine.con.execute("SHOW server_version").fetchone()[0]
        corpus.build(engine, rows, added)
        return corpus.run(engine, corpus.all_cases()), version


def _pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.2f}%"


def counts_table(results: dict[str, list[corpus.Outcome]]) -> list[str]:
    lines = [
        "| engine | model | cases to answer | **answered** | refused | **unsound** | neither "
        "| cases to refuse: refused |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for engine, outcomes in results.items():
        for model, label in MODELS.items():
            mine = [o for o in outcomes if o.case.model == model]
            c = corpus.summary([o for o in mine if o.case.expect == "answer"])
            must = [o for o in mine if o.case.expect == "refuse"]
            refused = sum(o.status == "refused" for o in must)
            lines.append(
                f"| {ENGINES[engine]} | {label} | {c['cases']} | **{c['answered']}** | "
                f"{c['refused']} | **{c['unsound']}** | {c['error']} | {refused} of {len(must)} |"
            )
    return lines


def construct_table(results: dict[str, list[corpus.Outcome]]) -> list[str]:
    """Per construct: answered of the cases per model and engine; the median relative
    width of the answers, per model (on DuckDB, the first engine)."""
    cells = [(m, e) for m in MODELS for e in results]
    head = " | ".join(f"{MODELS[m]}, {ENGINES[e]}" for m, e in cells)
    lines = [
        f"| construct | {head} | median width / truth, (k,e) | median width / truth, lHD |",
        "|---" * (3 + len(cells)) + "|",
    ]
    cases = [c for c in corpus.all_cases() if c.expect == "answer"]
    first = next(iter(results.values()))
    for construct in sorted({c.construct for c in cases}):
        row = []
        for model, engine in cells:
            mine = [
                o
                for o in results[engine]
                if o.case.model == model and o.case.construct == construct
            ]
            answered = sum(o.status == "answered" for o in mine)
            row.append(f"{answered} of {len(mine)}" if mine else "")
        widths = [_pct(_median_width(first, model, construct)) for model in MODELS]
        lines.append(f"| {construct} | {' | '.join(row)} | {' | '.join(widths)} |")
    return lines


def _median_width(outcomes: list[corpus.Outcome], model: str, construct: str) -> float | None:
    def pick(o: corpus.Outcome) -> bool:
        return o.status == "answered" and (o.case.model, o.case.construct) == (model, construct)

    return corpus.median_width(outcomes, pick)


def refused_list(results: dict[str, list[corpus.Outcome]]) -> list[str]:
    """Each refused ``expect: answer`` case once, with its reason (per engine if they differ)."""
    reasons: dict[str, dict[str, str]] = {}
    for engine, outcomes in results.items():
        for o in outcomes:
            if o.case.expect == "answer" and o.status != "answered":
                reasons.setdefault(o.case.id, {})[engine] = f"{o.status}: {o.reason}"
    lines = []
    for case_id in sorted(reasons):
        found = reasons[case_id]
        first = next(iter(found.values()))
        if all(w.startswith("refused: ") for w in found.values()):  # wording may differ
            shown = first.removeprefix("refused: ")
        else:
            shown = "; ".join(f"{ENGINES[e]}: {w}" for e, w in found.items())
        lines.append(f"- `{case_id}`: {shown.replace('|', '/')}")
    return lines


def unsound_list(results: dict[str, list[corpus.Outcome]]) -> list[str]:
    return [
        f"- **{ENGINES[e]} `{o.case.id}`**: {'; '.join(o.problems[:2])}"
        for e, outcomes in results.items()
        for o in outcomes
        if o.unsound
    ]


def section(results: dict[str, list[corpus.Outcome]], rows: int, added: int, pg: str) -> str:
    cases = corpus.all_cases()
    kinds = Counter(c.expect for c in cases)
    unsound = unsound_list(results)
    lines = [
        "### Coverage of everyday analyst SQL",
        "",
        f"`bench/coverage.py`, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores, DuckDB {duckdb.__version__}"
        + (f", PostgreSQL {pg}" if pg else "")
        + f", Python {platform.python_version()}. The corpus of issue 25 "
        f"(`tests/rewrite_fixtures/corpus_ke.sql`, `corpus_lhd.sql`: {len(cases)} cases, "
        f"{kinds['answer']} to answer and {kinds['refuse']} to refuse; DuckDB-only cases are "
        "skipped on PostgreSQL) over the bundled Adult data: (k,e) `adult_ke` (quasi age, sex, "
        "education; capital_loss; k=5, e=20) and lHD `adult_lhd` (age, education, sex by the "
        f"ARX hierarchies; capital_loss, hours_per_week; l=3), each released from {rows:,} "
        f"records, then again after deletions, changed ages and losses and {added:,} more "
        "records (ghosts in version 2). PostgreSQL answers through `sqlanon.interval_json` as "
        "an analyst role. *Unsound*: an answer whose interval misses the truth (or misses a "
        "group); *neither*: a failure that is not a refusal. The width is (high - low) / "
        "|truth| over every value of every answered case of the construct (exact answers "
        "count 0).",
        "",
        *counts_table(results),
        "",
        *(["**Unsound answers:**", "", *unsound, ""] if unsound else []),
        *construct_table(results),
        "",
        "Refused `expect: answer` cases and why:",
        "",
        *refused_list(results),
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1200, help="records in version 1")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-report", action="store_true", help="print, do not write")
    args = parser.parse_args(argv)
    added = len(corpus.adult_records()) - args.rows
    results = {"duckdb": run_duckdb(args.rows, added)}
    pg = ""
    if not args.no_postgres:
        results["postgres"], pg = run_postgres(args.rows, added)
    markdown = section(results, args.rows, added, pg)
    print(markdown)
    if not args.no_report:
        print("wrote", report.replace_section("coverage", markdown))


if __name__ == "__main__":
    main()
