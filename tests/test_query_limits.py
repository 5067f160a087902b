"""Bounded analyst queries: pathological shapes are refused before parsing, in
milliseconds, with a one-line SqlanonError; the limits live in ``sqlanon.query_limits``
and the data owner may change them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
import sqlglot
import sqlglot.parser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.errors import ConfigError, QueryLimitError, SqlanonError, UnsupportedQueryError
from sqlanon.rewriter import rewrite
from tests.test_release_duckdb import make_people
from tests.test_rewrite_refusals import CATALOG

BASE = "SELECT SUM(salary) AS s FROM people_ke WHERE "
PATHOLOGICAL = {
    "20,000 ORs": BASE + " OR ".join(f"age = {i}" for i in range(20_000)),
    "IN list of 100,000": BASE + "age IN (" + ", ".join(map(str, range(100_000))) + ")",
    "3,000 parentheses": BASE + "(" * 3000 + "age > 3" + ")" * 3000,
    "5,000 NOTs": BASE + "NOT " * 5000 + "age > 3",
    "5,000 minus signs": BASE + "age > " + "- " * 5000 + "3",
    "3,000 CASEs": BASE + "CASE WHEN " * 3000 + "age > 3" + " THEN 1 END" * 3000 + " = 1",
    "30,000 tokens": BASE + "age IN (" + ",".join("1" for _ in range(15_000)) + ")",
}


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    path = Path(tmp_path_factory.mktemp("limits")) / "people.duckdb"
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    make_people(con, 60)
    sqlanon.release_ke(
        con, "people", "people_ke", key="id", sensitive="salary", quasi=["age", "sex"], k=3, e=10
    )
    yield con
    con.close()


def _one_clean_line(message: str) -> None:
    assert "\n" not in message and "\x1b" not in message, repr(message)


class ParserCalled(Exception):
    pass


@pytest.fixture
def no_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """sqlglot's parser fails if called: a refusal under it came before any parsing
    (the bound on the work, measured structurally rather than by a clock)."""

    def parse(*args: object, **kwargs: object) -> None:
        raise ParserCalled

    sqlglot.Dialect.get_or_raise("duckdb")  # loading a dialect module parses some SQL
    monkeypatch.setattr(sqlglot.parser.Parser, "parse", parse)


def test_the_parser_guard_bites(con: duckdb.DuckDBPyConnection, no_parser: None) -> None:
    with pytest.raises(UnsupportedQueryError, match="ParserCalled"):
        sqlanon.interval(con, BASE + "age > 3")


@pytest.mark.parametrize("shape", sorted(PATHOLOGICAL))
def test_pathological_queries_are_refused_before_parsing(
    con: duckdb.DuckDBPyConnection, shape: str, no_parser: None
) -> None:
    sql = PATHOLOGICAL[shape]
    with pytest.raises(QueryLimitError) as raised:
        sqlanon.interval(con, sql)
    assert "max_query_" in str(raised.value)
    _one_clean_line(str(raised.value))
    with pytest.raises(QueryLimitError):  # the catalog-free entry point has the defaults
        rewrite(sql.replace("people_ke", "adult_ke").replace("salary", "capital_loss"), CATALOG)


def test_the_sql_function_refuses_them_too(con: duckdb.DuckDBPyConnection, no_parser: None) -> None:
    with pytest.raises(duckdb.Error, match="nested more than 32 levels deep .max_query_depth"):
        con.execute("SELECT sqlanon_interval(?)", [PATHOLOGICAL["5,000 NOTs"]]).fetchall()


@pytest.mark.parametrize(
    ("sql", "error"),
    [
        (BASE + "sex = 'F", "cannot read the query"),  # sqlglot's TokenError
        (BASE + "(age > 3", "cannot parse the query"),  # ParseError, with ANSI underlining
        (BASE + "age >", "cannot"),
        ("SELECT SUM(salary) FROM people_ke LIMIT 'x' OFFSET", "cannot"),
    ],
)
def test_parser_failures_are_one_line_unsupported_query_errors(
    con: duckdb.DuckDBPyConnection, sql: str, error: str
) -> None:
    with pytest.raises(UnsupportedQueryError, match=error) as raised:
        sqlanon.interval(con, sql)
    _one_clean_line(str(raised.value))


def test_unknown_dialect_is_an_unsupported_query_error(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(UnsupportedQueryError, match="dialect"):
        sqlanon.rewrite(BASE + "age > 3", con, "no-such-sql")


def test_ordinary_queries_within_the_default_limits_are_answered(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """The defaults leave room: 30 levels of parentheses or NOT, an IN list of 2,000, a
    chain of 2,400 ANDs (it used to recurse past Python's stack, refused as too deep)."""
    truth = con.execute("SELECT sum(salary) FROM people WHERE age > 30").fetchone()[0]
    for sql in (
        BASE + "(" * 30 + "age > 30" + ")" * 30,
        BASE + "NOT NOT " * 15 + "age > 30",
        BASE + "age IN (" + ", ".join(map(str, range(31, 2031))) + ")",
        BASE + "age > 30 AND " + " AND ".join(f"age <> {i}" for i in range(1000, 3400)),
    ):
        (row,) = sqlanon.interval(con, sql)
        assert row["s_low"] <= truth <= row["s_high"]


def test_limits_are_read_from_the_catalog_and_set_by_the_owner(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    sql = BASE + "age IN (31, 32, 33, 34, 35, 36)"
    sqlanon.interval(con, sql)
    try:
        limits = sqlanon.set_limit(con, "max_query_tokens", 20)
        assert limits == {
            "max_query_chars": 50_000,
            "max_query_tokens": 20,
            "max_query_depth": 32,
        }
        assert con.execute("SELECT name, value FROM sqlanon.query_limits").fetchall() == [
            ("max_query_tokens", 20)
        ]
        with pytest.raises(QueryLimitError, match="limit of 20 "):
            sqlanon.interval(con, sql)
        # another connection reads the same catalog row
        other = con.cursor()
        with pytest.raises(QueryLimitError, match="max_query_tokens"):
            sqlanon.interval(other, sql)
        # SQL: NULL restores the default
        con.execute("SELECT sqlanon_set_limit('max_query_tokens', NULL)").fetchall()
        sqlanon.interval(con, sql)
        con.execute("SELECT sqlanon_set_limit('max_query_depth', 2)").fetchall()
        with pytest.raises(QueryLimitError, match="more than 2 levels"):
            sqlanon.interval(con, BASE + "(((age > 3)))")
    finally:
        sqlanon.set_limit(con, "max_query_tokens", None)
        sqlanon.set_limit(con, "max_query_depth", None)
    assert con.execute("SELECT count(*) FROM sqlanon.query_limits").fetchone() == (0,)
    with pytest.raises(ConfigError, match="unknown limit"):
        sqlanon.set_limit(con, "max_rows", 3)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ConfigError, match="positive integer"):
            sqlanon.set_limit(con, "max_query_chars", bad)  # type: ignore[arg-type]


VALID = [
    "SELECT sex, COUNT(*), SUM(capital_loss) AS s FROM adult_ke WHERE age BETWEEN 30 AND 50 "
    "AND education IN ('Masters', 'Doctorate') GROUP BY sex ORDER BY sex LIMIT 3",
    "SELECT AVG(capital_loss) FROM adult_ke WHERE NOT (age >= 60 OR sex LIKE 'F%') "
    "AND capital_loss > 200",
]
SQL_ALPHABET = st.sampled_from(list("()'\"`[]{};,.*+-/<>=!~%|&$#@?:\\ \n\t") + ["\x00", "é"])
GARBAGE = st.one_of(
    st.text(st.one_of(SQL_ALPHABET, st.characters()), max_size=80),
    st.lists(
        st.sampled_from(
            [
                "SELECT",
                "FROM",
                "WHERE",
                "NOT",
                "(",
                ")",
                "'",
                "adult_ke",
                "age",
                "CASE",
                "END",
                "IN",
                ",",
                "1",
                "OR",
                "SUM(capital_loss)",
                "--",
                "/*",
                "$$",
                "::",
                "E'",
            ]
        ),
        max_size=30,
    ).map(" ".join),
    st.tuples(st.sampled_from(VALID), st.integers(0, 300)).map(lambda v: v[0][: v[1]]),
    st.tuples(st.sampled_from(VALID), st.integers(0, 300), st.text(max_size=5)).map(
        lambda v: v[0][: v[1]] + v[2] + v[0][v[1] :]
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sql=GARBAGE, dialect=st.sampled_from(["duckdb", "postgres", "mysql", "tsql"]))
def test_garbage_only_ever_raises_sqlanon_errors(sql: str, dialect: str) -> None:
    try:
        rewrite(sql, CATALOG, dialect)
    except SqlanonError as exc:
        _one_clean_line(str(exc))
