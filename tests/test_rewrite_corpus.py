"""The analyst-SQL corpus (tests/rewrite_fixtures/corpus_*.sql, issue 25) on real releases.

tests/corpus.py builds a (k,e) and an lHD release of 400 Adult records, twice with a live
change in between (version 2 has ghosts), on DuckDB and on PostgreSQL (there through
``sqlanon.interval_json`` as a login role of ``sqlanon_analyst``), and runs every case:
an answer must hold the truth in every interval (groups matched by key; with HAVING
every group that truly passes must appear; with LIMIT/OFFSET every row shown is
checked against the full truth), a case marked ``refuse`` must raise
UnsupportedQueryError.

Most everyday SQL is refused today while the rewriter grows. ``KNOWN_REFUSED`` is exactly
the set of ``expect: answer`` cases refused now: the test fails when one of them starts
being answered (shrink the list) and when any other is refused (a regression).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import corpus

ROWS, ADDED = 400, 60

#: ``expect: answer`` cases refused today, on both engines (the integrator shrinks it).
KNOWN_REFUSED = frozenset(
    {
        "lhd/count_distinct_quasi",
        "lhd/cte_band",
        "lhd/dashboard_bands",
        "lhd/group_by_case_band",
        "lhd/group_by_decade",
        "lhd/join_lookup",
        "lhd/join_values",
        "lhd/sum_case_quasi",
    }
)

CASES = corpus.all_cases()


def _outcomes(engine: corpus.Engine) -> dict[str, corpus.Outcome]:
    corpus.build(engine, ROWS, ADDED)
    return {o.case.id: o for o in corpus.run(engine, CASES)}


@pytest.fixture(scope="module")
def duckdb_outcomes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    engine = corpus.DuckDBEngine(str(tmp_path_factory.mktemp("corpus") / "adult.duckdb"))
    try:
        yield _outcomes(engine), engine
    finally:
        engine.close()


@pytest.fixture(scope="module")
def postgres_outcomes(pg_url: str, pg_python_root: Path) -> Iterator[Any]:
    """A database and an analyst login role of the module's own, dropped afterwards."""
    with corpus.postgres_engine(pg_url, pg_python_root) as engine:
        yield _outcomes(engine), engine


def _applies(case: corpus.Case, dialect: str) -> bool:
    return case.dialect in (None, dialect)


# --- the corpus itself ----------------------------------------------------------------


def test_corpus_is_large_and_well_formed() -> None:
    assert len({c.id for c in CASES}) == len(CASES), "case names repeat"
    answer = [c for c in CASES if c.expect == "answer"]
    assert len(answer) >= 130
    assert 10 <= len(CASES) - len(answer) <= 20
    for model in ("ke", "lhd"):
        constructs = Counter(c.construct for c in CASES if c.model == model)
        assert len(constructs) >= 25, (model, constructs)
    for case in answer:  # every output column is named as the rewriter names it
        corpus.output_names(corpus.sqlglot.parse_one(case.sql, read="duckdb"))
    assert all(c.id not in KNOWN_REFUSED or c.expect == "answer" for c in CASES)
    assert KNOWN_REFUSED <= {c.id for c in CASES}


def test_lhd_truth_groups_by_labels() -> None:
    (case,) = [c for c in CASES if c.id == "lhd/group_by_alias_renamed"]
    sql, names, limited = corpus.truth_sql(case, "postgres")
    assert "education_label AS edu" in sql and names == ["edu", "n"] and not limited
    (case,) = [c for c in CASES if c.id == "lhd/derived_filter"]
    sql, _, _ = corpus.truth_sql(case, "duckdb")
    assert "sex_label" in sql.split("FROM (")[1] and "GROUP BY sex_label" in sql


# --- the engines --------------------------------------------------------------------------


def _truth_runs(engine: corpus.Engine) -> None:
    """Every ``expect: answer`` case is valid SQL on the engine (its truth runs)."""
    failed = []
    for case in CASES:
        if case.expect == "answer" and _applies(case, engine.dialect):
            try:
                engine.truth(corpus.truth_sql(case, engine.dialect)[0])
            except Exception as exc:  # noqa: BLE001 - listed below
                failed.append(f"{case.id}: {type(exc).__name__}: {exc}")
    assert not failed, "\n".join(failed)


def _sound(outcomes: dict[str, corpus.Outcome]) -> None:
    bad = [
        f"{o.case.id}: {'; '.join(o.problems[:3])}\n    {o.case.sql}"
        for o in outcomes.values()
        if o.unsound
    ]
    errors = [f"{o.case.id}: {o.reason}" for o in outcomes.values() if o.status == "error"]
    assert not bad, "UNSOUND answers:\n" + "\n".join(bad)
    assert not errors, "neither answered nor refused:\n" + "\n".join(errors)


def _refusals(outcomes: dict[str, corpus.Outcome], dialect: str) -> None:
    must = [o for o in outcomes.values() if o.case.expect == "refuse"]
    assert must and all(o.status == "refused" for o in must), [
        (o.case.id, o.status) for o in must if o.status != "refused"
    ]
    refused = {
        i for i, o in outcomes.items() if o.case.expect == "answer" and o.status == "refused"
    }
    known = {c.id for c in CASES if c.id in KNOWN_REFUSED and _applies(c, dialect)}
    now_answered = sorted(known - refused)
    regressed = sorted(f"{i}: {outcomes[i].reason}" for i in refused - known)
    assert not now_answered, f"answered now, remove from KNOWN_REFUSED: {now_answered}"
    assert not regressed, "refused, not in KNOWN_REFUSED:\n" + "\n".join(regressed)


def test_duckdb_corpus_is_valid_sql(duckdb_outcomes: Any) -> None:
    _truth_runs(duckdb_outcomes[1])


def test_duckdb_answers_hold_the_truth(duckdb_outcomes: Any) -> None:
    _sound(duckdb_outcomes[0])


def test_duckdb_refusals_are_the_known_ones(duckdb_outcomes: Any) -> None:
    _refusals(duckdb_outcomes[0], "duckdb")


@pytest.mark.postgres
def test_postgres_corpus_is_valid_sql(postgres_outcomes: Any) -> None:
    _truth_runs(postgres_outcomes[1])


@pytest.mark.postgres
def test_postgres_answers_hold_the_truth(postgres_outcomes: Any) -> None:
    _sound(postgres_outcomes[0])


@pytest.mark.postgres
def test_postgres_refusals_are_the_known_ones(postgres_outcomes: Any) -> None:
    _refusals(postgres_outcomes[0], "postgres")


def test_the_check_flags_what_is_unsound() -> None:
    case = CASES[0]
    truth = [{"sex": "F", "n": 5}, {"sex": "M", "n": 7}]
    fine = [
        {"sex": "F", "n_low": 4, "n_high": 6, "n_est": 5.0, "n": None},
        {"sex": "M", "n_low": 7, "n_high": 7, "n_est": 7.0, "n": 7},
    ]
    for out, limited, problems in [
        (fine, False, 0),
        (fine[:1], False, 1),  # a group is missing
        (fine[:1], True, 0),  # ... which LIMIT allows
        ([{**fine[0], "n_high": 4.9}, fine[1]], False, 1),  # the interval misses 5
        ([fine[0], {**fine[1], "n": 6}], False, 1),  # an exact count that is wrong
    ]:
        outcome = corpus.Outcome(case, "answered")
        corpus.check(out, truth, ["sex", "n"], limited, outcome)
        assert len(outcome.problems) == problems, (out, outcome.problems)
