"""The general lHD atom builder (``lhd_general.atoms_query``) against a brute force.

Tiny releases: quasi columns ``a`` (ARX, numeric leaves 1..4), ``c`` (ARX, text leaves
r, g, b) and ``b`` (widths intervals), sensitive ``s``, classes, sometimes ghosts.
Random Shapes from a small grammar (keys over labels and a CASE over s; WHERE and
FILTERs of AND / OR / NOT over comparisons of quasi columns, of s, and functions of a
quasi column; atoms of f(s) for four f and of quasi columns). The brute force here
enumerates every world: which rows of each class are the ghosts, and a raw value under
every label (every leaf; for an interval its ends and a few points inside), and runs
each atom in Python. Every truth must lie in [low, high] and every estimate too; the
closed forms (COUNT, SUM, MIN, MAX, AVG, QUANTILE_DISC, COUNT DISTINCT of exact values,
without ghosts; COUNT with them) must reach both ends when each quasi column is read by
one comparison at most (the condition is then exact per row).
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import duckdb
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter import LabelDomain, ReleaseInfo
from sqlanon.rewriter.lhd_general import atoms_query
from sqlanon.rewriter.shape import Atom, PublicJoin, Shape, atom_column, key_name

A_LEAVES = {
    **{str(i): {str(i)} for i in range(1, 5)},
    "1-2": {"1", "2"},
    "3-4": {"3", "4"},
    "*": {"1", "2", "3", "4"},
}
C_LEAVES = {"r": {"r"}, "g": {"g"}, "rg": {"r", "g"}, "*": {"r", "g", "b"}}
B_INTERVALS = {
    "[0, 10)": (0.0, 10.0),
    "[10, 20)": (10.0, 20.0),
    "5": (5.0, 5.0),
    "[0, 20)": (0.0, 20.0),
}
# Raw values tried under each interval label: its ends (just below a half-open one) and
# the literals the grammar compares with.
B_VALUES = {
    "[0, 10)": [0.0, 5.0, 9.99],
    "[10, 20)": [10.0, 15.0, 19.99],
    "5": [5.0],
    "[0, 20)": [0.0, 5.0, 9.99, 10.0, 15.0, 19.99],
}
DOMAINS = {
    "a": LabelDomain(leaves={k: frozenset(v) for k, v in A_LEAVES.items()}),
    "c": LabelDomain(leaves={k: frozenset(v) for k, v in C_LEAVES.items()}),
    "b": LabelDomain(intervals=B_INTERVALS),
}
EPS = 1e-6


@dataclass(frozen=True)
class Cond:
    """A condition in SQL (over ``r.``) with its Python twin over (a, b, c, s); ``reads``:
    the quasi columns of each comparison, ``exact``: judged exactly per label."""

    sql: str
    py: Any
    reads: tuple[str, ...]
    exact: bool = True


OPS = {"=": "==", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _cmp(column: str, op: str, lit: Any) -> Cond:
    text = repr(lit) if isinstance(lit, str) else str(lit)
    py = eval(f"lambda a, b, c, s: {column} {OPS[op]} {lit!r}")  # noqa: S307 - test grammar
    return Cond(f"r.{column} {op} {text}", py, (column,) if column != "s" else ())


@st.composite
def comparisons(draw: Any) -> Cond:
    kind = draw(st.integers(0, 8))
    op = draw(st.sampled_from(sorted(OPS)))
    if kind == 0:
        return _cmp("a", op, draw(st.integers(1, 4)))
    if kind == 1:
        return _cmp("b", op, draw(st.sampled_from([0, 5, 10, 15])))
    if kind == 2:
        return _cmp("c", draw(st.sampled_from(["=", "<>"])), draw(st.sampled_from("rgb")))
    if kind in (3, 4):
        return _cmp("s", op, draw(st.sampled_from([0, 3, 40, 41])))
    if kind == 5:
        return Cond("r.a IN (1, 4)", lambda a, b, c, s: a in (1, 4), ("a",))
    if kind == 6:  # functions of one quasi column: judged on every leaf by the database
        return draw(
            st.sampled_from(
                [
                    Cond("abs(r.a - 3) <= 1", lambda a, b, c, s: abs(a - 3) <= 1, ("a",)),
                    Cond("upper(r.c) = 'R'", lambda a, b, c, s: c.upper() == "R", ("c",)),
                    Cond("r.a * 2 >= 5", lambda a, b, c, s: a * 2 >= 5, ("a",)),
                ]
            )
        )
    if kind == 7:  # on an interval: possible unless the label is one number
        return Cond("r.b + 5 > 12", lambda a, b, c, s: b + 5 > 12, ("b",), exact=False)
    return Cond("r.s BETWEEN 0 AND 41", lambda a, b, c, s: 0 <= s <= 41, ())


@st.composite
def conditions(draw: Any, depth: int = 2) -> Cond:
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(comparisons())
    kind = draw(st.sampled_from(["AND", "OR", "NOT"]))
    left = draw(conditions(depth - 1))
    if kind == "NOT":
        return Cond(f"NOT ({left.sql})", lambda *v: not left.py(*v), left.reads, left.exact)
    right = draw(conditions(depth - 1))
    py = (
        (lambda *v: left.py(*v) and right.py(*v))
        if kind == "AND"
        else (lambda *v: left.py(*v) or right.py(*v))
    )
    return Cond(
        f"({left.sql}) {kind} ({right.sql})", py, left.reads + right.reads,
        left.exact and right.exact,
    )  # fmt: skip


ARGS = {  # f(s) with its Python twin; arguments reading a quasi column
    "r.s": lambda a, b, c, s: s,
    "r.s * 1.1": lambda a, b, c, s: s * 1.1,
    "abs(r.s - 40)": lambda a, b, c, s: abs(s - 40),
    "CASE WHEN r.s > 40 THEN 1 ELSE 0 END": lambda a, b, c, s: 1 if s > 40 else 0,
}
QUASI_ARGS = {"r.b": lambda a, b, c, s: b, "r.a * 2": lambda a, b, c, s: a * 2}
FUNCS = ["count", "sum", "avg", "min", "max", "quantile_cont", "quantile_disc", "var_pop",
         "var_samp", "stddev_pop", "count_distinct"]  # fmt: skip
KEYS = {
    "r.a": lambda row: row[0],
    "r.b": lambda row: row[1],
    "CASE WHEN r.s > 40 THEN 'hi' ELSE 'lo' END": lambda row: "hi" if row[3] > 40 else "lo",
    "r.class_id": lambda row: row[4],
}


@dataclass(frozen=True)
class AtomCase:
    func: str
    arg: str | None
    filter: Cond | None
    fraction: float | None = None


@st.composite
def atom_cases(draw: Any) -> AtomCase:
    func = draw(st.sampled_from(FUNCS))
    if func == "count" and draw(st.booleans()):
        arg = None
    elif func in ("sum", "avg", "min", "max", "quantile_disc") and draw(st.integers(0, 4)) == 0:
        arg = draw(st.sampled_from(sorted(QUASI_ARGS)))
    else:
        arg = draw(st.sampled_from(sorted(ARGS)))
    fraction = draw(st.sampled_from([0.5, 0.25, 0.3, 0.75, 1.0])) if "quantile" in func else None
    filt = draw(st.none() | conditions(1))
    return AtomCase(func, arg, filt, fraction)


Row = tuple[str, str, str, int, int, int]  # a, b, c labels, s, class_id, class_ghosts


@st.composite
def releases(draw: Any, ghosts: bool) -> list[Row]:
    rows: list[Row] = []
    for cid in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 2))
        g = draw(st.integers(0, size)) if ghosts else 0
        labels = (
            draw(st.sampled_from(sorted(A_LEAVES))),
            draw(st.sampled_from(sorted(B_INTERVALS))),
            draw(st.sampled_from(sorted(C_LEAVES))),
        )
        for _ in range(size):
            rows.append((*labels, draw(st.sampled_from([-5, 0, 3, 38, 41, 45, 70])), cid, g))
        if len(rows) >= 4:
            break
    return rows


# --- the brute force --------------------------------------------------------------------


def _quantile(values: list[float], p: float, disc: bool) -> float:
    xs = sorted(values)
    if disc:  # DuckDB: the rank ceil(p n) in exact decimal arithmetic, at least 1
        return xs[max(1, math.ceil(Decimal(repr(p)) * len(xs))) - 1]
    h = (len(xs) - 1) * p
    lo = math.floor(h)
    return xs[lo] + (h - lo) * (xs[min(lo + 1, len(xs) - 1)] - xs[lo])


def aggregate(func: str, values: list[float], p: float | None) -> float | None:
    if func == "count":
        return len(values)
    if func == "count_distinct":
        return len(set(values))
    if not values or (func in ("var_samp", "stddev_samp") and len(values) < 2):
        return None
    if func == "sum":
        return sum(values)
    if func == "avg":
        return sum(values) / len(values)
    if func in ("min", "max"):
        return min(values) if func == "min" else max(values)
    if func.startswith("quantile"):
        assert p is not None
        return _quantile(values, p, func == "quantile_disc")
    var = statistics.pvariance if func.endswith("pop") else statistics.variance
    found = var([float(v) for v in values])
    return math.sqrt(found) if func.startswith("stddev") else found


def _raw_choices(row: Row) -> list[tuple[float, float, str]]:
    a_label, b_label, c_label = row[:3]
    return [
        (float(a), b, c)
        for a in sorted(A_LEAVES[a_label])
        for b in B_VALUES[b_label]
        for c in sorted(C_LEAVES[c_label])
    ]


def worlds(rows: list[Row], where: Cond | None, atoms: list[AtomCase]) -> list[list[Any]]:
    """Per world, per row: None (a ghost) or (passes WHERE, per atom: its value or None)."""
    outcomes = []
    for row in rows:
        found = set()
        for a, b, c in _raw_choices(row):
            v = (a, b, c, row[3])
            ok = where is None or where.py(*v)
            per_atom = []
            for atom in atoms:
                if atom.filter is not None and not atom.filter.py(*v):
                    per_atom.append(None)
                    continue
                f = None if atom.arg is None else {**ARGS, **QUASI_ARGS}[atom.arg]
                per_atom.append(1 if f is None else f(*v))
            found.add((ok, tuple(per_atom)))
        outcomes.append(sorted(found, key=repr))
    classes: dict[int, list[int]] = {}
    for i, row in enumerate(rows):
        classes.setdefault(row[4], []).append(i)
    ghost_sets = [list(itertools.combinations(m, rows[m[0]][5])) for m in classes.values()]
    result = []
    for chosen in itertools.product(*ghost_sets):
        dead = {i for ghosts in chosen for i in ghosts}
        for world in itertools.product(*outcomes):
            result.append([None if i in dead else w for i, w in enumerate(world)])
    return result


def truths(
    rows: list[Row], keys: list[str], where: Cond | None, atoms: list[AtomCase]
) -> tuple[dict, int]:
    """Per output key, the list over worlds of per-atom answers (absent: group empty);
    and the number of worlds."""
    answers: dict[Any, list[list[Any]]] = {}
    every = worlds(rows, where, atoms)
    for world in every:
        groups: dict[Any, list[int]] = {}
        for i, outcome in enumerate(world):
            if outcome is not None and outcome[0]:
                groups.setdefault(tuple(KEYS[k](rows[i]) for k in keys), []).append(i)
        if not keys:
            groups.setdefault((), [])
        for key, members in groups.items():
            per_atom = []
            for j, atom in enumerate(atoms):
                values = [world[i][1][j] for i in members if world[i][1][j] is not None]
                per_atom.append(aggregate(atom.func, values, atom.fraction))
            answers.setdefault(key, []).append(per_atom)
    return answers, len(every)


# --- running a Shape --------------------------------------------------------------------


def info(rows: list[Row]) -> ReleaseInfo:
    ghosts = sum({r[4]: r[5] for r in rows}.values())
    return ReleaseInfo(
        "tiny", 1, "tiny_v1", "lhd", ("a", "b", "c"), ("s",), domains=DOMAINS, ghosts=ghosts
    )


def parse(text: str | None) -> Any:
    return None if text is None else sqlglot.parse_one(text, read="duckdb")


def shape_of(rows: list[Row], keys: list[str], where: Cond | None, atoms: list[AtomCase]) -> Shape:
    return Shape(
        release=info(rows),
        keys=tuple(parse(k) for k in keys),
        where=parse(where.sql) if where else None,
        atoms=tuple(
            Atom(a.func, parse(a.arg), parse(a.filter.sql) if a.filter else None, a.fraction)
            for a in atoms
        ),
    )


def load(con: Any, rows: list[Row]) -> None:
    con.execute("DROP TABLE IF EXISTS tiny_v1")
    con.execute(
        "CREATE TABLE tiny_v1 (a VARCHAR, b VARCHAR, c VARCHAR, s INTEGER, class_id INTEGER, "
        "class_ghosts INTEGER)"
    )
    if hasattr(con, "executemany"):
        con.executemany("INSERT INTO tiny_v1 VALUES (?, ?, ?, ?, ?, ?)", rows)
    else:  # psycopg
        with con.cursor() as cur:
            cur.executemany("INSERT INTO tiny_v1 VALUES (%s, %s, %s, %s, %s, %s)", rows)


def run(con: Any, shape: Shape, dialect: str) -> list[dict[str, Any]]:
    tree = atoms_query(shape)
    assert not list(tree.find_all(sqlglot.exp.Anonymous)), tree.sql()  # every function known
    cur = con.execute(tree.sql(dialect))
    names = [d[0] for d in cur.description]
    return [
        {k: float(v) if type(v).__name__ == "Decimal" else v for k, v in zip(names, r, strict=True)}
        for r in cur.fetchall()
    ]


TIGHT = ("count", "sum", "avg", "min", "max", "quantile_disc", "count_distinct")


def check(out: list[dict], rows: list[Row], keys: list[str], where: Cond | None,
          atoms: list[AtomCase]) -> None:  # fmt: skip
    answers, every = truths(rows, keys, where, atoms)
    by_key = {tuple(r[key_name(j)] for j in range(len(keys))): r for r in out}
    assert len(by_key) == len(out)
    assert set(answers) <= set(by_key), (answers.keys(), by_key.keys())
    conds = [where] + [a.filter for a in atoms]
    reads = [c for cond in conds if cond for c in cond.reads]
    read_once = len(reads) == len(set(reads)) and all(c.exact for c in conds if c)
    if read_once:
        assert set(answers) == set(by_key), (answers.keys(), by_key.keys())
    for key, row in by_key.items():
        always = len(answers.get(key, [])) == every  # the group exists in every world
        for j, atom in enumerate(atoms):
            values = [w[j] for w in answers.get(key, [])]
            low, high = row[atom_column(j, "low")], row[atom_column(j, "high")]
            est = row[atom_column(j, "est")]
            found = [v for v in values if v is not None]
            context = (key, j, atom, low, high, est, sorted(found))
            if any(v is None for v in values):
                assert row[atom_column(j, "may_null")], context
            ghosts = any(r[5] for r in rows)
            if not found:
                if values and read_once and not ghosts:  # NULL in every world, and exact
                    assert low is None and high is None, context
                continue
            assert low is not None and high is not None, context
            assert low - EPS <= min(found) and max(found) <= high + EPS, context
            assert est is not None and low - EPS <= est <= high + EPS, context
            exact = atom.arg is None or atom.arg in ARGS
            tight = read_once and always and exact and atom.func in TIGHT
            if tight and (not ghosts or atom.func == "count"):
                assert math.isclose(low, min(found), abs_tol=EPS), context
                assert math.isclose(high, max(found), abs_tol=EPS), context


@st.composite
def cases(draw: Any, ghosts: bool) -> tuple[list[Row], list[str], Cond | None, list[AtomCase]]:
    rows = draw(releases(ghosts))
    keys = draw(st.lists(st.sampled_from(sorted(KEYS)), max_size=2, unique=True))
    where = draw(st.none() | conditions())
    atoms = draw(st.lists(atom_cases(), min_size=1, max_size=3))
    return rows, keys, where, atoms


_DUCK: list[Any] = []


def duck() -> Any:
    if not _DUCK:
        _DUCK.append(duckdb.connect())
    return _DUCK[0]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(ghosts=False))
def test_intervals_hold_every_world(case: Any) -> None:
    rows, keys, where, atoms = case
    con = duck()
    load(con, rows)
    check(run(con, shape_of(rows, keys, where, atoms), "duckdb"), rows, keys, where, atoms)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(ghosts=True))
def test_intervals_hold_every_ghost_placement(case: Any) -> None:
    rows, keys, where, atoms = case
    con = duck()
    load(con, rows)
    check(run(con, shape_of(rows, keys, where, atoms), "duckdb"), rows, keys, where, atoms)


# --- public joins -----------------------------------------------------------------------

JOIN = PublicJoin(
    relation=sqlglot.parse_one("SELECT * FROM (VALUES (0, 'x'), (1, 'y')) AS p(cid, tag)").find(
        sqlglot.exp.Values
    ),
    alias="p",
    on=sqlglot.parse_one("p.cid = r.class_id"),
)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(ghosts=False), st.booleans())
def test_a_public_join_keys_and_filters_rows(case: Any, filtered: bool) -> None:
    """INNER JOIN of a VALUES list on the class: rows of class 2 drop out; the join's
    column is a key and (``filtered``) an exact condition."""
    rows, _, where, atoms = case
    kept = [r for r in rows if r[4] in (0, 1)]
    tag = {0: "x", 1: "y"}
    extra = Cond("p.tag = 'x'", lambda *v: True, ())
    shape = shape_of(rows, [], where, atoms)
    joined_where = shape.where
    if filtered:
        test = parse("p.tag = 'x'")
        joined_where = test if joined_where is None else sqlglot.exp.and_(joined_where, test)
        kept = [r for r in kept if tag[r[4]] == "x"]
    shape = Shape(shape.release, (parse("p.tag"),), shape.atoms, joined_where, (JOIN,))
    con = duck()
    load(con, rows)
    out = run(con, shape, "duckdb")
    KEYS["p.tag"] = lambda row: tag[row[4]]
    try:
        check(out, kept, ["p.tag"], where, atoms)
    finally:
        del KEYS["p.tag"]
    assert extra.sql  # the twin of the filter is the row list itself


# --- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "atom,match",
    [
        (Atom("var_pop", parse("r.b")), "VAR_POP"),
        (Atom("sum", parse("r.c")), "text"),
        (Atom("sum", parse("r.a * r.b")), "bounded by its label"),
        (Atom("sum", parse("abs(r.b)")), "bounded by its label"),
        (Atom("quantile_cont", parse("r.s"), fraction=1.5), "fraction"),
        (Atom("median", parse("r.s")), "MEDIAN"),
    ],
)
def test_refusals_name_the_part(atom: Atom, match: str) -> None:
    rows: list[Row] = [("1", "5", "r", 3, 0, 0)]
    with pytest.raises(UnsupportedQueryError, match=match):
        atoms_query(Shape(info(rows), atoms=(atom,)))


def test_a_quasi_argument_is_bounded_by_its_label() -> None:
    rows: list[Row] = [("1-2", "[0, 10)", "r", 3, 0, 0), ("3", "5", "g", 4, 1, 0)]
    con = duck()
    load(con, rows)
    shape = Shape(info(rows), atoms=(Atom("sum", parse("r.b")), Atom("max", parse("r.a * 2"))))
    out = run(con, shape, "duckdb")[0]
    assert (out["a0_low"], out["a0_high"]) == (5.0, 15.0)
    assert (out["a1_low"], out["a1_high"]) == (6.0, 6.0)


# --- PostgreSQL -------------------------------------------------------------------------


@pytest.mark.postgres
def test_postgres_holds_every_world(pg_conn: Any) -> None:
    """A sample of the property on PostgreSQL (quantiles at fractions where PostgreSQL's
    DOUBLE rank and DuckDB's decimal one agree on these sizes)."""

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(cases(ghosts=False) | cases(ghosts=True))
    def sample(case: Any) -> None:
        rows, keys, where, atoms = case
        load(pg_conn, rows)
        out = run(pg_conn, shape_of(rows, keys, where, atoms), "postgres")
        check(out, rows, keys, where, atoms)

    sample()
