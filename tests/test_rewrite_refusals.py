"""What the rewriter refuses, what it may read, the catalog, and other dialects."""

from __future__ import annotations

import json
from typing import Any

import duckdb
import pytest
import sqlglot
from sqlglot import exp

from sqlanon.errors import ConfigError, UnsupportedQueryError
from sqlanon.rewriter import ReleaseInfo, catalog_from_rows, rewrite
from sqlanon.rewriter.analyze import AggregateItem, analyze
from tests.test_rewrite_ke import check_sound
from tests.test_rewrite_support import answer, catalog_of, fetch, make_release, on_source

INFO = ReleaseInfo(
    family="adult_ke",
    version=2,
    table="adult_ke_v2",
    model="ke",
    quasi=("age", "sex", "education"),
    sensitive=("capital_loss",),
    bounds_table="adult_ke_v2_bounds",
)
CATALOG = catalog_of(INFO)


@pytest.mark.parametrize(
    ("sql", "part"),
    [
        ("SELECT COUNT(*) FROM adult_ke a JOIN adult_ke b ON a.age = b.age", "join"),
        ("SELECT COUNT(*) FROM adult_ke, adult_ke_v2", "join"),
        (
            "SELECT COUNT(*) FROM adult_ke WHERE age IN (SELECT age FROM adult_ke)",
            "subquery",
        ),
        ("SELECT SUM(capital_loss) OVER () FROM adult_ke", "window function"),
        ("DELETE FROM adult_ke", "DELETE"),
        ("INSERT INTO adult_ke VALUES (1)", "INSERT"),
        ("UPDATE adult_ke SET age = 1", "UPDATE"),
        ("DROP TABLE adult_ke", "DROP"),
        ("SELECT COUNT(*) FROM adult_ke; SELECT COUNT(*) FROM adult_ke", "2"),
        ("SELECT COUNT(*) FROM adult", "'adult' is not a release"),
        ("SELECT COUNT(*) FROM adult_source", "'adult_source' is not a release"),
        ("SELECT * FROM sqlanon.members", "sqlanon.members is not a release"),
        ("SELECT COUNT(*) FROM sqlanon.members", "sqlanon.members is not a release"),
        ("SELECT COUNT(*) FROM sqlanon.adult_ke_v2_bounds", "not a release"),
        ("SELECT COUNT(*) FROM adult_ke_v2_bounds", "not a release"),
        ("SELECT COUNT(*) FROM main.adult_ke", "main.adult_ke is not a release"),
        ("SELECT COUNT(*) FROM read_csv('adult.csv')", "READ_CSV"),
        ("SELECT capital_loss FROM adult_ke", "neither aggregated nor in GROUP BY"),
        ("SELECT * FROM adult_ke", "SELECT *"),
        (
            "SELECT capital_loss, COUNT(*) FROM adult_ke GROUP BY capital_loss",
            "reads the permuted column 'capital_loss'",
        ),
        ("SELECT COUNT(*) FROM adult_ke WHERE salary > 3", "'salary' is not published"),
        ("SELECT COUNT(*) FROM adult_ke AS a WHERE b.age > 3", "b.age does not belong"),
        ("SELECT COUNT(*) FROM adult_ke UNION SELECT COUNT(*) FROM adult_ke", "UNION"),
        ("SELECT COUNT(*), COUNT(*) FROM adult_ke", "'count_star' would appear twice"),
        (  # both counts exact: n_high's bare column is n's high end
            "SELECT COUNT(*) AS n, COUNT(*) AS n_high FROM (SELECT age FROM adult_ke) AS t",
            "'n_high' would appear twice",
        ),
        ("SELECT COUNT(*) FROM adult_ke QUALIFY 1 = 1", "QUALIFY"),
        ("SELECT COUNT(*) FROM adult_ke WHERE", "cannot parse"),
        ("SELECT 1", "no FROM"),
    ],
)
def test_refused_with_the_offending_part(sql: str, part: str) -> None:
    with pytest.raises(UnsupportedQueryError) as err:
        rewrite(sql, CATALOG)
    assert part.lower() in str(err.value).lower(), str(err.value)


#: Refused by the narrow dialect, answered since issue 25 (tests/test_rewrite_normalize.py,
#: the general builders' property tests, the fixtures and the corpus check the answers).
NOW_ANSWERED = [
    # n_high is no exact count, so it has no bare column to collide with n's high end
    "SELECT SUM(capital_loss) AS n_high, COUNT(*) AS n FROM (SELECT capital_loss FROM adult_ke) t",
    "SELECT COUNT(*) FROM (SELECT * FROM adult_ke) AS x",
    "WITH x AS (SELECT * FROM adult_ke) SELECT COUNT(*) FROM x",
    "SELECT sex, COUNT(*) FROM adult_ke GROUP BY sex HAVING COUNT(*) > 3",
    "SELECT SUM(capital_loss) / COUNT(*) FROM adult_ke",
    "SELECT age FROM adult_ke GROUP BY age",
    "SELECT COUNT(*) FROM adult_ke GROUP BY ROLLUP (age)",
    "SELECT DISTINCT sex, COUNT(*) FROM adult_ke GROUP BY sex",
    "SELECT sex, COUNT(*) AS n FROM adult_ke GROUP BY sex ORDER BY n",
    "SELECT COUNT(*) FROM adult_ke LIMIT 1 OFFSET 2",
    "SELECT COUNT(1) FROM adult_ke",
    "SELECT SUM(age) FROM adult_ke",
    "SELECT AVG(age) FROM adult_ke",
    "SELECT MAX(sex) FROM adult_ke",
    "SELECT COUNT(DISTINCT capital_loss) FROM adult_ke",
    "SELECT SUM(capital_loss * 2) FROM adult_ke",
    "SELECT COUNT(*) FROM adult_ke GROUP BY age + 1",
    "SELECT COUNT(*) FROM adult_ke WHERE age > 30 OR capital_loss > 2000",
    "SELECT COUNT(*) FROM adult_ke WHERE NOT (age > 30 AND capital_loss > 2000)",
    "SELECT COUNT(*) FROM adult_ke WHERE capital_loss > age",
    "SELECT COUNT(*) FROM adult_ke WHERE length(sex) = 4",
    "SELECT COUNT(*) FROM adult_ke WHERE age + 1 > 30",
]


@pytest.mark.parametrize("sql", NOW_ANSWERED)
def test_formerly_refused_queries_are_answered(sql: str) -> None:
    assert "adult_ke_v2" in rewrite(sql, CATALOG)


def test_lhd_release_is_refused_until_supported() -> None:
    lhd = ReleaseInfo("p_lhd", 1, "p_lhd_v1", "lhd", ("age",), ("salary",))
    with pytest.raises(UnsupportedQueryError, match="lHD"):
        rewrite("SELECT COUNT(*) FROM p_lhd", {"p_lhd": lhd})


def _tables(sql: str, dialect: str) -> set[tuple[str, str]]:
    tree = sqlglot.parse_one(sql, read=dialect)
    ctes = {c.alias for c in tree.find_all(exp.CTE)}
    return {(t.db, t.name) for t in tree.find_all(exp.Table) if t.name not in ctes}


QUERIES = [
    "SELECT COUNT(*) FROM adult_ke WHERE age > 30",
    "SELECT sex, SUM(capital_loss) AS loss, AVG(capital_loss), MIN(capital_loss), "
    "MAX(capital_loss) FROM adult_ke WHERE age BETWEEN 30 AND 50 GROUP BY sex ORDER BY sex",
    "SELECT education, COUNT(*), COUNT(education), SUM(capital_loss), AVG(capital_loss), "
    "MIN(capital_loss), MAX(capital_loss) FROM adult_ke "
    "WHERE capital_loss > 2000 AND (sex = 'Male' OR education LIKE 'B%') GROUP BY education",
    "SELECT AVG(capital_loss) FROM adult_ke WHERE NOT (capital_loss IN (1, 2)) AND age IS NULL",
]


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "spark", "trino", "bigquery"])
@pytest.mark.parametrize("sql", QUERIES)
def test_output_parses_in_dialect_and_reads_only_the_release(sql: str, dialect: str) -> None:
    out = rewrite(sql, CATALOG, dialect)
    assert _tables(out, dialect) <= {("", "adult_ke_v2"), ("sqlanon", "adult_ke_v2_bounds")}
    assert ("", "adult_ke_v2") in _tables(out, dialect)


def test_input_is_read_in_the_given_dialect() -> None:
    out = rewrite(
        "SELECT `sex`, COUNT(*) FROM adult_ke WHERE `age` > 3 GROUP BY `sex`", CATALOG, "bigquery"
    )
    assert "`adult_ke_v2`" in out


def test_catalog_from_rows() -> None:
    rows = [
        ("adult_ke", 1, "adult_ke_v1", "ke", json.dumps({"quasi": ["age"], "sensitive": "loss"})),
        ("adult_ke", 2, "adult_ke_v2", "ke", {"quasi": ["age"], "sensitive": ["loss"], "k": 3}),
        ("p_lhd", 1, "p_lhd_v1", "lhd", json.dumps({"quasi": ["age"], "sensitive": ["a", "b"]})),
    ]
    catalog = catalog_from_rows(rows)
    assert set(catalog) == {"adult_ke", "adult_ke_v1", "adult_ke_v2", "p_lhd", "p_lhd_v1"}
    assert catalog["adult_ke"] is catalog["adult_ke_v2"]
    assert catalog["adult_ke_v1"].bounds_table == "adult_ke_v1_bounds"
    assert catalog["adult_ke_v1"].sensitive == ("loss",)
    assert catalog["p_lhd"].bounds_table is None
    assert catalog["p_lhd"].key_column == "class_id"
    assert "adult_ke_v1" in rewrite("SELECT SUM(loss) FROM adult_ke_v1", catalog)
    assert "adult_ke_v2" in rewrite("SELECT SUM(loss) FROM ADULT_KE", catalog)


@pytest.mark.parametrize(
    "parameters",
    [
        '{"quasi": ["age"]}',
        '{"quasi": [], "sensitive": "x"}',
        "[1]",
        '{"quasi": 3, "sensitive": "x"}',
    ],
)
def test_catalog_from_rows_rejects_bad_parameters(parameters: str) -> None:
    with pytest.raises(ConfigError):
        catalog_from_rows([("f", 1, "f_v1", "ke", parameters)])


def test_ke_release_needs_one_sensitive_column_and_bounds() -> None:
    with pytest.raises(ConfigError, match="exactly one sensitive"):
        ReleaseInfo("f", 1, "f_v1", "ke", ("a",), ("s", "t"), "f_v1_bounds")
    with pytest.raises(ConfigError, match="bounds"):
        ReleaseInfo("f", 1, "f_v1", "ke", ("a",), ("s",))


def test_quoted_release_names_stay_identifiers() -> None:
    """A hostile family name cannot inject SQL: names are emitted as quoted identifiers."""
    evil = ReleaseInfo(
        'x"; DROP TABLE t; --', 1, 'x"; DROP TABLE t; --_v1', "ke", ("a",), ("s",), "b"
    )
    out = rewrite('SELECT COUNT(*) FROM "x""; DROP TABLE t; --_v1"', {evil.table: evil})
    assert _tables(out, "duckdb") <= {("", evil.table), ("sqlanon", "b")}
    assert len(sqlglot.parse(out, read="duckdb")) == 1


def test_runs_on_duckdb_against_a_release_written_by_the_helpers() -> None:
    con = duckdb.connect()
    info = make_release(
        con,
        "adult_ke",
        {"age": "INTEGER", "sex": "VARCHAR", "education": "VARCHAR"},
        ("capital_loss", "INTEGER"),
        [
            {"age": 20 + i, "sex": "MF"[i % 2], "education": "B", "capital_loss": 300 * i}
            for i in range(12)
        ],
        [i // 4 for i in range(12)],
    )
    catalog = catalog_of(info)
    for sql in QUERIES:
        sql = sql.replace("adult_ke", info.family)
        aggs = {
            item.name: item.func
            for item in analyze(sql, catalog).items
            if isinstance(item, AggregateItem)
        }
        out = answer(con, sql, catalog)
        assert out, sql
        check_sound(out, fetch(con, on_source(sql, info)), sql, aggs)


@pytest.mark.parametrize(
    "bad",
    [
        "SELECT * FROM sqlanon.members",
        "SELECT * FROM adult_ke_v2 JOIN adult_source USING (age)",
        "WITH x AS (SELECT 1) SELECT * FROM x, adult_ke",
        "SELECT * FROM other.adult_ke_v2",
        "SELECT * FROM adult_ke_v2 WHERE age = MY_UDF(1)",
    ],
)
def test_output_guard_rejects_trees_reading_anything_else(bad: str) -> None:
    """The last check before SQL leaves the rewriter: only the release and its bounds."""
    from sqlanon.rewriter import _check_reads

    with pytest.raises(UnsupportedQueryError, match="a bug in sqlanon's rewriter"):
        _check_reads(sqlglot.parse_one(bad), INFO)
    _check_reads(
        sqlglot.parse_one(
            "WITH x AS (SELECT 1) SELECT * FROM x, adult_ke_v2, sqlanon.adult_ke_v2_bounds"
        ),
        INFO,
    )


def test_catalog_rows_carry_ghosts_in_metrics() -> None:
    params = {"quasi": ["age"], "sensitive": ["loss"]}
    rows = [
        ("a", 1, "a_v1", "ke", json.dumps(params)),  # 5-tuples still work
        ("a", 2, "a_v2", "ke", json.dumps(params), None),
        ("a", 3, "a_v3", "ke", json.dumps(params), json.dumps({"static_optimum": 3})),
        ("a", 4, "a_v4", "ke", json.dumps(params), json.dumps({"ghosts": 2})),
        ("p", 1, "p_v1", "lhd", params, {"ghosts": 5, "dm": 10}),
    ]
    catalog = catalog_from_rows(rows)
    assert [catalog[f"a_v{v}"].ghosts for v in (1, 2, 3, 4)] == [0, 0, 0, 2]
    assert catalog["a"].ghosts == 2 and catalog["a"].ghost_column == "ghost"
    assert catalog["p"].ghosts == 5 and catalog["p"].ghost_column == "class_ghosts"


@pytest.mark.parametrize(
    "row",
    [
        ("f", 1, "f_v1", "ke", '{"quasi": ["a"], "sensitive": "s"}', '{"ghosts": -1}'),
        ("f", 1, "f_v1", "ke", '{"quasi": ["a"], "sensitive": "s"}', '{"ghosts": "2"}'),
        ("f", 1, "f_v1", "ke", '{"quasi": ["a"], "sensitive": "s"}', "[2]"),
        ("f", 1, "f_v1", "ke", '{"quasi": ["ghost"], "sensitive": "s"}', '{"ghosts": 1}'),
        ("f", 1, "f_v1", "ke", '{"quasi": ["a"], "sensitive": "s"}', None, "extra"),
    ],
)
def test_catalog_from_rows_rejects_bad_ghosts(row: tuple[Any, ...]) -> None:
    with pytest.raises(ConfigError):
        catalog_from_rows([row])
