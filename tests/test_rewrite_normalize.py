"""The general rewriter's front end alone: analyst SQL -> the Shapes and post items."""

from __future__ import annotations

import pytest
from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter import ReleaseInfo, catalog_from_rows
from sqlanon.rewriter.normalize import Plan, normalize
from sqlanon.rewriter.shape import Atom

PARAMS = {
    "quasi": ["age", "sex", "education"],
    "sensitive": ["capital_loss"],
    "source": "main.adult",
}
CATALOG = catalog_from_rows(
    [
        ("adult_ke", 1, "adult_ke_v1", "ke", PARAMS),
        ("adult_ke", 2, "adult_ke_v2", "ke", PARAMS),
    ]
)


def r(name: str) -> exp.Column:
    return exp.column(name, table="r", quoted=True)


def plan(sql: str, dialect: str = "duckdb") -> Plan:
    return normalize(sql, CATALOG, dialect)


def shown(tree: exp.Expr | None) -> str | None:
    return None if tree is None else tree.sql()


def items(p: Plan, branch: int = 0) -> list[tuple[str, str]]:
    return [(i.name, i.expr.sql()) for i in p.branches[branch].items]


def test_group_by_position_alias_expression_and_all() -> None:
    for sql in (
        "SELECT sex, COUNT(*) FROM adult_ke GROUP BY 1",
        "SELECT sex AS s, COUNT(*) FROM adult_ke GROUP BY s",
        "SELECT sex, COUNT(*) FROM adult_ke GROUP BY ALL",
    ):
        p = plan(sql)
        assert p.branches[0].shape.keys == (r("sex"),), sql
        assert p.branches[0].shape.atoms == (Atom("count"),)
    p = plan("SELECT floor(age / 10) * 10 AS decade, COUNT(*) FROM adult_ke GROUP BY decade")
    assert shown(p.branches[0].shape.keys[0]) == 'FLOOR("r"."age" / 10) * 10'
    p = plan(
        "SELECT CASE WHEN age < 30 THEN 'young' ELSE 'old' END AS band, COUNT(*) n "
        "FROM adult_ke GROUP BY 1"
    )
    assert "CASE WHEN" in str(shown(p.branches[0].shape.keys[0]))
    assert items(p) == [("band", "sqlanon_key.k0"), ("n", "sqlanon_atom.a0")]


def test_distinct_is_group_by_with_keys_only() -> None:
    p = plan("SELECT DISTINCT sex, education FROM adult_ke")
    branch = p.branches[0]
    assert branch.shape.keys == (r("sex"), r("education"))
    assert branch.keys_only and branch.shape.atoms == (Atom("count"),)
    assert [i.name for i in branch.items] == ["sex", "education"]
    assert plan("SELECT age FROM adult_ke GROUP BY age").branches[0].keys_only


def test_where_with_functions_is_passed_as_a_tree() -> None:
    p = plan(
        "SELECT COUNT(*) FROM adult_ke WHERE lower(sex) = 'female' AND age + 5 > 50 "
        "AND (coalesce(education, 'x') = 'x' OR capital_loss > 2000)"
    )
    where = shown(p.branches[0].shape.where)
    assert where is not None
    assert 'LOWER("r"."sex")' in where and '"r"."age" + 5 > 50' in where
    assert 'COALESCE("r"."education"' in where and '"r"."capital_loss" > 2000' in where


@pytest.mark.parametrize(
    ("aggregate", "atom"),
    [
        ("COUNT(*)", Atom("count")),
        ("COUNT(1)", Atom("count")),
        ("COUNT(education)", Atom("count", r("education"))),
        ("COUNT(DISTINCT education)", Atom("count_distinct", r("education"))),
        ("AVG(capital_loss * 1.1)", Atom("avg", exp.column("capital_loss") * 1.1)),
        ("AVG(ln(capital_loss))", Atom("avg", exp.Ln(this=r("capital_loss")))),
        ("MEDIAN(capital_loss)", Atom("quantile_cont", r("capital_loss"), None, 0.5)),
        ("quantile_cont(capital_loss, 0.9)", Atom("quantile_cont", r("capital_loss"), None, 0.9)),
        (
            "percentile_cont(0.25) WITHIN GROUP (ORDER BY capital_loss)",
            Atom("quantile_cont", r("capital_loss"), None, 0.25),
        ),
        (
            "percentile_disc(0.25) WITHIN GROUP (ORDER BY capital_loss DESC)",
            Atom("quantile_disc", r("capital_loss"), None, 0.75),
        ),
        ("STDDEV(capital_loss)", Atom("stddev_samp", r("capital_loss"))),
        ("STDDEV_SAMP(capital_loss)", Atom("stddev_samp", r("capital_loss"))),
        ("STDDEV_POP(capital_loss)", Atom("stddev_pop", r("capital_loss"))),
        ("VARIANCE(capital_loss)", Atom("var_samp", r("capital_loss"))),
        ("VAR_SAMP(capital_loss)", Atom("var_samp", r("capital_loss"))),
        ("VAR_POP(capital_loss)", Atom("var_pop", r("capital_loss"))),
        (
            "SUM(CASE WHEN capital_loss > 2000 THEN 1 ELSE 0 END)",
            Atom(
                "sum",
                exp.Case(
                    ifs=[exp.If(this=r("capital_loss") > 2000, true=exp.Literal.number(1))],
                    default=exp.Literal.number(0),
                ),
            ),
        ),
        (
            "COUNT(*) FILTER (WHERE capital_loss > 2000)",
            Atom("count", None, r("capital_loss") > 2000),
        ),
    ],
)
def test_aggregates_become_atoms(aggregate: str, atom: Atom) -> None:
    (found,) = plan(f"SELECT {aggregate} AS x FROM adult_ke").branches[0].shape.atoms
    if atom.arg is not None and not isinstance(atom.arg, exp.Column | exp.Case):
        atom = Atom(atom.func, found.arg, atom.where, atom.fraction)  # checked by text below
        assert found.arg is not None and "capital_loss" in found.arg.sql()
    assert shown(found.arg) == shown(atom.arg)
    assert (found.func, shown(found.where), found.fraction) == (
        atom.func,
        shown(atom.where),
        atom.fraction,
    )


def test_arithmetic_of_aggregates_shares_atoms() -> None:
    p = plan(
        "SELECT sex, SUM(capital_loss) / COUNT(*) AS mean, ROUND(AVG(capital_loss), 1), "
        "MAX(capital_loss) - MIN(capital_loss) AS spread, "
        "SUM(capital_loss) FILTER (WHERE age > 40) * 100.0 / SUM(capital_loss) AS share, "
        "COALESCE(SUM(capital_loss), 0) AS total FROM adult_ke GROUP BY sex"
    )
    assert [a.func for a in p.branches[0].shape.atoms] == [
        "sum",
        "count",
        "avg",
        "max",
        "min",
        "sum",
    ]
    assert items(p) == [
        ("sex", "sqlanon_key.k0"),
        ("mean", "sqlanon_atom.a0 / sqlanon_atom.a1"),
        ("col3", "ROUND(sqlanon_atom.a2, 1)"),
        ("spread", "sqlanon_atom.a3 - sqlanon_atom.a4"),
        ("share", "sqlanon_atom.a5 * 100.0 / sqlanon_atom.a0"),
        ("total", "COALESCE(sqlanon_atom.a0, 0)"),
    ]


def test_having_order_by_limit_offset() -> None:
    p = plan(
        "SELECT sex, COUNT(*) AS n FROM adult_ke GROUP BY sex "
        "HAVING COUNT(*) > 10 AND AVG(capital_loss) < 2000 ORDER BY n DESC, 1 LIMIT 3 OFFSET 1"
    )
    assert shown(p.branches[0].having) == "sqlanon_atom.a0 > 10 AND sqlanon_atom.a1 < 2000"
    assert [(o.name, o.desc) for o in p.order] == [("n", True), ("sex", False)]
    assert (p.limit, p.offset) == (3, 1)
    p = plan("SELECT sex FROM adult_ke GROUP BY sex ORDER BY SUM(capital_loss) / COUNT(*)")
    (hidden,) = p.branches[0].hidden
    assert p.order[0].name == hidden.name and hidden.is_value


def test_ctes_and_derived_tables_are_inlined() -> None:
    p = plan(
        "WITH t AS (SELECT *, age / 10 AS decade FROM adult_ke WHERE sex = 'Male'), "
        "u AS (SELECT decade, capital_loss AS loss FROM t WHERE decade > 2) "
        "SELECT decade, COUNT(*), SUM(loss) FROM (SELECT * FROM u) AS x GROUP BY 1"
    )
    shape = p.branches[0].shape
    assert shown(shape.keys[0]) == '"r"."age" / 10'
    assert shown(shape.where) == '"r"."sex" = \'Male\' AND "r"."age" / 10 > 2'
    assert shape.atoms[1] == Atom("sum", r("capital_loss"))


def test_a_cte_twice_in_a_union_all_and_versions() -> None:
    p = plan(
        "WITH m AS (SELECT * FROM adult_ke WHERE sex = 'Male') "
        "SELECT COUNT(*) AS n FROM m WHERE age < 30 UNION ALL SELECT COUNT(*) FROM m "
        "WHERE age >= 30"
    )
    assert len(p.branches) == 2
    assert [i.name for b in p.branches for i in b.items] == ["n", "count_star"]
    p = plan("SELECT COUNT(*) FROM adult_ke_v1 UNION ALL SELECT COUNT(*) FROM adult_ke_v2")
    assert [b.shape.release.table for b in p.branches] == ["adult_ke_v1", "adult_ke_v2"]


def test_rollup_cube_grouping_sets_are_branches() -> None:
    p = plan("SELECT sex, education, COUNT(*) FROM adult_ke GROUP BY ROLLUP (sex, education)")
    assert [len(b.shape.keys) for b in p.branches] == [2, 1, 0]
    assert items(p, 2)[:2] == [("sex", "NULL"), ("education", "NULL")]
    assert (
        len(plan("SELECT sex, age, COUNT(*) FROM adult_ke GROUP BY CUBE (sex, age)").branches) == 4
    )
    p = plan(
        "SELECT sex, age, COUNT(*) FROM adult_ke GROUP BY GROUPING SETS ((sex), (sex, age), ())"
    )
    assert [len(b.shape.keys) for b in p.branches] == [1, 2, 0]


def test_values_join_and_semi_joins() -> None:
    p = plan(
        "SELECT v.grp, COUNT(*) FROM adult_ke AS a JOIN (VALUES ('Male', 'm'), "
        "('Female', 'f')) AS v(sex, grp) ON v.sex = a.sex GROUP BY v.grp"
    )
    (join,) = p.branches[0].shape.joins
    assert join.alias == "v" and join.kind == "INNER" and isinstance(join.relation, exp.Values)
    assert shown(join.on) == '"v"."sex" = "r"."sex"'
    assert shown(p.branches[0].shape.keys[0]) == '"v"."grp"'
    p = plan(
        "SELECT COUNT(*) FROM adult_ke WHERE education IN (SELECT e FROM public.edu "
        "UNION SELECT 'Masters') AND sex IN (VALUES ('Male'))"
    )
    assert p.public == frozenset({("public", "edu")})
    assert "edu.e" in str(shown(p.branches[0].shape.where))  # qualified: cannot correlate


@pytest.mark.parametrize(
    ("sql", "part"),
    [
        ("SELECT SUM(capital_loss) OVER () FROM adult_ke", "window function"),
        ("SELECT COUNT(*) FROM adult_ke a JOIN adult_ke b ON a.age = b.age", "join"),
        ("SELECT COUNT(*) FROM adult_ke JOIN public.t ON t.a > adult_ke.age", "conjunction"),
        ("SELECT COUNT(*) FROM adult_ke a JOIN sqlanon.t ON t.a = a.age", "private"),
        ("SELECT COUNT(*) FROM adult_ke a JOIN adult ON adult.a = a.age", "private"),
        ("SELECT COUNT(*) FROM adult_ke a, t WHERE t.a = a.age", "without ON"),
        ("SELECT COUNT(*) FROM adult_ke a JOIN t USING (age)", "without ON"),
        ("SELECT GROUPING(age), COUNT(*) FROM adult_ke GROUP BY ROLLUP (sex)", "not a GROUP BY"),
        ("SELECT COUNT(*) FROM adult_ke WHERE age IN (SELECT age FROM adult_ke)", "subquery"),
        ("SELECT COUNT(*) FROM adult_ke WHERE age IN (SELECT a FROM main.adult)", "private"),
        ("SELECT COUNT(*) FROM adult_ke WHERE age IN (SELECT a FROM sqlanon.members)", "private"),
        (
            "SELECT COUNT(*) FROM adult_ke AS x WHERE EXISTS "
            "(SELECT 1 FROM public.t WHERE t.a = x.age)",
            "correlated subquery",
        ),
        (
            "SELECT COUNT(*) FROM adult_ke JOIN (VALUES (1, 'a'), (1, 'b')) AS v(a, b) "
            "ON v.a = adult_ke.age",
            "repeat the key",
        ),
        (
            "SELECT COUNT(*) FROM adult_ke JOIN (VALUES (1), (2)) AS v(a) ON v.a > adult_ke.age",
            "does not equate",
        ),
        ("SELECT COUNT(*) FROM adult_ke UNION SELECT COUNT(*) FROM adult_ke", "UNION"),
        (
            "WITH t AS (SELECT sex, COUNT(*) AS n FROM adult_ke GROUP BY sex) SELECT SUM(n) FROM t",
            "GROUP",
        ),
        ("SELECT COUNT(*) FROM adult_ke WHERE my_udf(age) = 1", "Anonymous"),
        ("SELECT SUM(DISTINCT capital_loss) FROM adult_ke", "SUM(DISTINCT"),
        ("SELECT capital_loss FROM adult_ke", "neither aggregated nor in GROUP BY"),
        ("SELECT COUNT(*), COUNT(*) FROM adult_ke", "'count_star' would appear twice"),
        ("SELECT COUNT(*) FROM adult_ke QUALIFY 1 = 1", "QUALIFY"),
    ],
)
def test_refused_with_the_offending_part(sql: str, part: str) -> None:
    with pytest.raises(UnsupportedQueryError) as err:
        plan(sql)
    assert part.lower() in str(err.value).lower(), str(err.value)


def test_catalog_carries_the_private_source() -> None:
    assert CATALOG["adult_ke"].source == "main.adult"
    info = ReleaseInfo("f", 1, "f_v1", "ke", ("a",), ("s",), "f_v1_bounds")
    assert info.source is None


def test_join_of_a_named_table_carries_the_guard() -> None:
    p = plan(
        "SELECT l.level, COUNT(*) FROM adult_ke AS a LEFT JOIN public.edu_level AS l "
        "ON l.education = a.education AND l.sex = lower(a.sex) GROUP BY l.level"
    )
    (join,) = p.branches[0].shape.joins
    assert join.alias == "l" and join.kind == "LEFT" and isinstance(join.relation, exp.Subquery)
    assert p.public == frozenset({("public", "edu_level")})
    assert "PARTITION BY l.education, l.sex) AS sqlanon_copies" in str(shown(join.relation))
    on = str(shown(join.on))
    assert on.startswith('(l.education = "r"."education" AND l.sex = LOWER("r"."sex")) AND ')
    assert "lookup table edu_level repeats the join key (education, sex)" in on
    assert shown(p.branches[0].shape.keys[0]) == "l.level"
    assert "RAISE_ERROR('sqlanon: lookup" in normalize_on("spark")
    with pytest.raises(UnsupportedQueryError, match="dialect 'mysql'"):
        normalize_on("mysql")


def normalize_on(dialect: str) -> str:
    p = plan("SELECT COUNT(*) FROM adult_ke AS a JOIN t ON t.k = a.age", dialect)
    return p.branches[0].shape.joins[0].on.sql(dialect)


def test_grouping_is_a_constant_per_grouping_set() -> None:
    p = plan(
        "SELECT sex, age, GROUPING(sex, age) AS g, COUNT(*) FROM adult_ke "
        "GROUP BY CUBE (sex, age) HAVING GROUPING(age) = 0"
    )
    assert [items(p, b)[2] for b in range(4)] == [("g", str(g)) for g in (0, 1, 2, 3)]
    assert [shown(b.having) for b in p.branches] == ["0 = 0", "1 = 0", "0 = 0", "1 = 0"]
    assert items(plan("SELECT sex, GROUPING(sex) AS g, COUNT(*) FROM adult_ke GROUP BY sex"))[
        1
    ] == (
        "g",
        "0",
    )


def test_string_functions_are_per_row() -> None:
    p = plan(
        "SELECT COUNT(*) FROM adult_ke WHERE substr(education, 1, 4) = 'Some' AND "
        "left(sex, 1) || right(sex, 1) = 'Me' AND trim(sex) <> '' AND replace(sex, 'a', 'b') <> ''"
    )
    assert 'SUBSTRING("r"."education", 1, 4)' in str(shown(p.branches[0].shape.where))
