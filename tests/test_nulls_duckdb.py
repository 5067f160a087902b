"""NULL quasi-identifiers, one rule in both models (issue 23, item 6c): a NULL is an
ordinary value. (k,e) publishes it as NULL; lHD gives it a branch of its own in every
hierarchy (NULL below the top, ``*`` at the top), so it is published as NULL or hidden in
a ``*``. Interval answers hold the truth over the published records either way, SQL's
three-valued logic included (a condition on NULL selects nothing, negated or not)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
import sqlanon.intervals
from sqlanon.demo import load_adult
from sqlanon.duckdb.session import DuckDBSession
from sqlanon.errors import ConfigError, UnsupportedQueryError
from sqlanon.rewriter import rewrite
from tests.test_rewrite_lhd import FUNCS, HIERARCHIES, check, query_pair
from tests.test_rewrite_support import fetch

QUASI = {"ams": ["age", "marital_status", "sex"], "wes": ["age", "education", "sex"]}

# NULL in a few records of each quasi column: too few to form l-diverse classes of
# their own in places (so some hide under '*'), many enough elsewhere for NULL labels.
NULLS = """
UPDATE {t} SET age = NULL WHERE id % 23 = 0 OR (age BETWEEN 40 AND 44 AND id % 3 = 0);
UPDATE {t} SET sex = NULL WHERE id % 41 = 0;
UPDATE {t} SET marital_status = NULL WHERE id % 37 = 0;
UPDATE {t} SET education = NULL WHERE id % 31 = 0 OR education = 'Masters';
"""


def _catalog(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    session = DuckDBSession(con)
    try:
        return sqlanon.intervals.release_catalog(session)
    finally:
        session.close()


@pytest.fixture(scope="module")
def nulls(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The Adult records with NULLs, released by lHD with the ARX age hierarchy (ams)
    and with age widths (wes); truth_<family>: the published records' raw values and
    their published labels."""
    folder = tmp_path_factory.mktemp("hierarchies")
    for f in HIERARCHIES.glob("adult_hierarchy_*.csv"):
        (folder / f.name.replace("adult_", "adult_w_", 1)).write_text(f.read_text())
    con = duckdb.connect()
    sqlanon.install(con)
    load_adult(con, "adult")
    for statement in NULLS.format(t="adult").strip().splitlines():
        con.execute(statement)
    con.execute("CREATE TABLE adult_w AS SELECT * FROM adult")
    sqlanon.load_hierarchies(con, "adult", str(HIERARCHIES))
    sqlanon.load_hierarchies(con, "adult_w", str(folder))
    sqlanon.hierarchy_widths(con, "adult_w", "age", [5, 10, 20])
    summaries = {}
    for family, source in (("ams", "adult"), ("wes", "adult_w")):
        summaries[family] = sqlanon.release_lhd(
            con, source, family, key="id", quasi=QUASI[family],
            sensitive=["capital_loss", "hours_per_week"], l=3,
        )  # fmt: skip
        labels = ", ".join(f"r.{c} AS {c}_label" for c in QUASI[family])
        con.execute(
            f"CREATE TABLE truth_{family} AS SELECT s.*, r.class_id, {labels} FROM {source} s "  # noqa: S608
            "JOIN sqlanon.members m ON m.record_key = CAST(s.id AS VARCHAR) "
            f"AND m.family = '{family}' AND m.version = 1 AND m.status = 'published' "
            f"JOIN (SELECT DISTINCT class_id, {', '.join(QUASI[family])} FROM {family}_v1) r "
            "ON r.class_id = m.group_id"
        )
    yield con, _catalog(con), summaries
    con.close()


def test_lhd_publishes_null_as_a_value_of_its_own(nulls: Any) -> None:
    con, catalog, summaries = nulls
    for family, quasi in QUASI.items():
        assert summaries[family]["null_quasi"] == quasi
        assert {a["exposed"] for a in sqlanon.audit(con, family)} == {0}  # one domain
        for column in quasi:
            # a NULL label stands for NULL only; NULLs otherwise only under '*'
            assert con.execute(
                f"SELECT count(*) FROM truth_{family} WHERE {column}_label IS NULL"  # noqa: S608
                f" AND {column} IS NOT NULL"
            ).fetchone() == (0,)
            assert con.execute(
                f"SELECT count(*) FROM truth_{family} WHERE {column} IS NULL"  # noqa: S608
                f" AND {column}_label IS NOT NULL AND {column}_label <> '*'"
            ).fetchone() == (0,)
            assert catalog[family].domains[column].nulls
    # Both cases occur: NULL labels, and NULLs hidden in '*'.
    shown, hidden = con.execute(
        "SELECT count(*) FILTER (WHERE age_label IS NULL),"
        " count(*) FILTER (WHERE age IS NULL AND age_label = '*') FROM truth_ams"
    ).fetchone()
    assert shown > 0 and hidden > 0


WHERES = [
    "age IS NULL",
    "age IS NOT NULL",
    "NOT (age > 40)",
    "age > 40 OR age IS NULL",
    "NOT (age BETWEEN 30 AND 44 AND sex = 'Male')",
    "sex IS NULL OR NOT sex = 'Female'",
    "age IN (25, 41, 90) OR NOT age IN (25, 41, 90)",
]


@pytest.mark.parametrize("group", [None, "sex", "age"])
@pytest.mark.parametrize("family", ["ams", "wes"])
@pytest.mark.parametrize("where", WHERES)
def test_lhd_intervals_hold_the_truth_with_nulls(
    nulls: Any, family: str, where: str, group: str | None
) -> None:
    con, catalog, _ = nulls
    sql, truth_sql = query_pair(family, where, group, list(FUNCS))
    check(
        fetch(con, rewrite(sql, catalog, "duckdb")), fetch(con, truth_sql), list(FUNCS), group, sql
    )


@st.composite
def atom(draw: Any, family: str) -> str:
    other = "marital_status" if family == "ams" else "education"
    column = draw(st.sampled_from(["age", "sex", other]))
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return f"{column} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if column == "age":
        op = draw(st.sampled_from(["=", "<>", "<", ">=", "IN"]))
        if op == "IN":
            return f"age IN ({', '.join(map(str, draw(st.lists(st.integers(17, 90), min_size=1, max_size=3))))})"
        return f"age {op} {draw(st.integers(15, 95))}"
    values = {
        "sex": ["Male", "Female"],
        "marital_status": ["Divorced", "Never-married", "Married-civ-spouse"],
        "education": ["Bachelors", "HS-grad", "Masters", "9th"],
    }[column]
    return f"{column} {draw(st.sampled_from(['=', '<>']))} '{draw(st.sampled_from(values))}'"


@st.composite
def predicate(draw: Any, family: str, depth: int = 2) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(atom(family))
    kind = draw(st.sampled_from(["AND", "OR", "NOT"]))
    if kind == "NOT":
        return f"NOT ({draw(predicate(family, depth - 1))})"
    left, right = draw(predicate(family, depth - 1)), draw(predicate(family, depth - 1))
    return f"({left}) {kind} ({right})"


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.sampled_from(["ams", "wes"]).flatmap(lambda f: st.tuples(st.just(f), predicate(f))))
def test_random_predicates_with_nulls_hold_the_truth(nulls: Any, q: tuple[str, str]) -> None:
    con, catalog, _ = nulls
    family, where = q
    for group in (None, "sex"):
        sql, truth_sql = query_pair(family, where, group, list(FUNCS))
        out = fetch(con, rewrite(sql, catalog, "duckdb"))
        check(out, fetch(con, truth_sql), list(FUNCS), group, sql)


def test_count_of_a_column_with_nulls_is_refused(nulls: Any) -> None:
    _, catalog, _ = nulls
    with pytest.raises(UnsupportedQueryError, match="IS NOT NULL"):
        rewrite("SELECT COUNT(age) FROM ams", catalog)
    rewrite("SELECT COUNT(capital_loss) FROM ams", catalog)  # sensitive: never NULL


def test_lhd_refuses_nan_but_takes_null(tmp_path: Path) -> None:
    con = duckdb.connect()
    sqlanon.install(con)
    con.execute(
        "CREATE TABLE t AS SELECT range AS id, CAST(range % 30 AS DOUBLE) AS q,"
        " range % 7 AS s FROM range(60)"
    )
    sqlanon.hierarchy_widths(con, "t", "q", [5, 10])
    con.execute("UPDATE t SET q = 'NaN'::DOUBLE WHERE id = 4")
    with pytest.raises(ConfigError, match="1 NaN values; set them to NULL"):
        sqlanon.release_lhd(con, "t", "f", key="id", quasi=["q"], sensitive=["s"], l=2)
    con.execute("UPDATE t SET q = NULL WHERE id = 4")
    summary = sqlanon.release_lhd(con, "t", "f", key="id", quasi=["q"], sensitive=["s"], l=2)
    assert summary["null_quasi"] == ["q"] and summary["rows_published"] == 60


# --- (k,e): NULL quasi values are published as they are ---------------------------------


def test_ke_publishes_null_quasi_values_and_answers_over_them() -> None:
    """(k,e) shows quasi-identifiers exactly, NULL too; interval answers count them as
    SQL does, apart from ghost rows (deleted records, whose quasi columns are NULL)."""
    con = duckdb.connect()
    sqlanon.install(con)
    load_adult(con, "adult")
    for statement in NULLS.format(t="adult").strip().splitlines()[:2]:
        con.execute(statement)
    args = {"key": "id", "sensitive": "capital_loss", "quasi": ["age", "sex"], "k": 5, "e": 20}
    summary = sqlanon.release_ke(con, "adult", "adult_ke", **args)
    assert "null_quasi" not in summary  # an lHD metric: (k,e) shows QI exactly
    for version in (1, 2):
        if version == 2:
            con.execute("DELETE FROM adult WHERE id % 29 = 0")
            assert sqlanon.release_ke(con, "adult", "adult_ke", **args)["ghosts"] > 0
        catalog = _catalog(con)
        truth = (
            "SELECT s.* FROM adult s JOIN sqlanon.members m"
            " ON m.record_key = CAST(s.id AS VARCHAR) AND m.family = 'adult_ke'"
            f" AND m.version = {version} AND m.status = 'published'"
        )
        counts = "count(*) FILTER (WHERE age IS NULL), count(*) FILTER (WHERE sex IS NULL)"
        shown = con.execute(
            f"SELECT {counts} FROM adult_ke_v{version} WHERE NOT coalesce(ghost, false)"  # noqa: S608
            if version == 2
            else f"SELECT {counts} FROM adult_ke_v1"  # noqa: S608
        ).fetchone()
        assert shown == con.execute(f"SELECT {counts} FROM ({truth})").fetchone()  # noqa: S608
        assert shown[0] > 0 and shown[1] > 0
        for where in ["age IS NULL", "NOT (age > 40)", "sex IS NULL OR age < 30"]:
            query = (
                "SELECT COUNT(*) AS n, COUNT(age) AS a, SUM(capital_loss) AS total"  # noqa: S608
                f" FROM adult_ke_v{version} WHERE {where}"
            )
            out = fetch(con, rewrite(query, catalog, "duckdb"))[0]
            n, a, total = con.execute(
                f"SELECT count(*), count(age), coalesce(sum(capital_loss), 0) FROM ({truth})"  # noqa: S608
                f" WHERE {where}"
            ).fetchone()
            assert out["n"] == n and out["a"] == a, (version, where, out)
            assert out["total_low"] <= total <= out["total_high"], (version, where, out)
