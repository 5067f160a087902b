"""No name sqlanon's SQL uses is ever looked up in the caller's search path on
PostgreSQL (CVE-2018-1058; issue 23, item 1).

An owner with CREATE on a schema of someone's path plants look-alikes of the functions
and operators the release SQL calls; a release run by a superuser (or another owner)
must call none of them. The lint half reads every SQL text sqlanon runs on PostgreSQL;
the attack half plants look-alikes on a real server, both the closer matches the outside
attacker used and exact twins ahead of pg_catalog in the path, and runs every owner
verb over them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

import sqlanon
from sqlanon import sqltext
from sqlanon.postgres.install import install_postgres

ROOT = Path(__file__).resolve().parent.parent


# --- The lint -----------------------------------------------------------------------


def postgres_texts() -> dict[str, str]:
    """Every SQL text sqlanon runs on PostgreSQL, as it runs: the PostgreSQL files and
    migrations as written, the common files as loaded for PostgreSQL, and the bodies of
    the SQL and PL/pgSQL functions."""
    texts = {}
    for folder in ("sqlanon/postgres/sql", "sqlanon/postgres/migrations"):
        for path in sorted((ROOT / folder).glob("*.sql")):
            texts[f"{folder}/{path.name}"] = path.read_text()
    for path in sorted((ROOT / "sqlanon/sql").glob("*.sql")):
        texts[f"sqlanon/sql/{path.name}"] = sqltext.load("postgres", path.stem)
    for name, text in list(texts.items()):
        for i, body in enumerate(sqltext.dollar_bodies(text)):
            texts[f"{name} body {i}"] = body
    return texts


def test_every_call_in_postgres_sql_names_its_schema() -> None:
    unqualified = {
        name: calls
        for name, text in postgres_texts().items()
        if (calls := sqltext.unqualified_calls(text))
    }
    assert unqualified == {}, (
        "write these calls pg_catalog.f(...) (or add the function to sqltext.PG_FUNCTIONS "
        f"if the file is common to every dialect): {unqualified}"
    )


def test_the_lint_sees_what_it_must() -> None:
    """The lint is not vacuous: bare calls are found, syntax and qualified calls are not,
    and nothing inside strings, quoted names, comments or Python bodies counts."""
    text = (
        "SELECT lower(x), pg_catalog.upper(y), coalesce(a, b), CAST(z AS text), 'f(1)', "
        '"g"(2) -- h(3)\nFROM t WHERE a IN (1) AND EXISTS (SELECT 1) AND convert_to(q, $1)'
    )
    assert sqltext.unqualified_calls(text) == ["convert_to", "lower"]
    assert sqltext.unqualified_calls(sqltext.pg_qualified(text)) == []
    body = "CREATE FUNCTION f() RETURNS int LANGUAGE plpython3u AS $py$\nreturn len(x)\n$py$;"
    assert sqltext.dollar_bodies(body) == []
    assert sqltext.unqualified_calls(body) == []
    plpgsql = (
        "CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $fn$ BEGIN RETURN abs(1); END $fn$;"
    )
    assert sqltext.unqualified_calls(sqltext.dollar_bodies(plpgsql)[0]) == ["abs"]


# --- The attack on a real server --------------------------------------------------------

pytestmark_pg = pytest.mark.postgres

SOURCE_COLUMNS = "id integer, age integer, zip text, sex text, cost bigint, job text"


def plant(conn: Any) -> int:
    """Plant in schema public a logging look-alike of every pg_catalog function sqlanon
    calls, in two kinds: exact twins (they win when public comes before pg_catalog in the
    path), and closer matches for literals (``integer`` where pg_catalog takes
    ``bigint``, ``text`` where it takes ``name``: they win even after pg_catalog, as the
    attacker's ``hashtextextended(text, integer)`` did), and of the operators and
    aggregates releases use. Returns how many were planted."""
    conn.execute("CREATE TABLE public.hijacked (what text)")
    conn.execute("GRANT INSERT ON public.hijacked TO PUBLIC")
    overloads = conn.execute(
        """
        SELECT p.proname, pg_catalog.oidvectortypes(p.proargtypes), p.proretset,
               pg_catalog.format_type(p.prorettype, NULL),
               ARRAY(SELECT pg_catalog.format_type(t, NULL)
                     FROM pg_catalog.unnest(p.proargtypes::pg_catalog.oid[]) AS t)
        FROM pg_catalog.pg_proc AS p
        WHERE p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace
          AND p.proname = ANY(%s) AND p.prokind = 'f' AND p.provariadic = 0
          AND p.prorettype <> 'pg_catalog.internal'::pg_catalog.regtype
          AND NOT EXISTS (SELECT FROM pg_catalog.unnest(p.proargtypes::pg_catalog.oid[]) AS t
                          JOIN pg_catalog.pg_type AS ty ON ty.oid = t
                          WHERE ty.typtype = 'p')
        """,
        [sorted(sqltext.PG_FUNCTIONS)],
    ).fetchall()
    planted = 0
    closer = {
        "bigint": "integer",
        "name": "text",
        "double precision": "integer",
        "numeric": "integer",
    }
    for name, _, returns_set, returns, args in overloads:
        variants = {tuple(args)}
        for i, a in enumerate(args):
            if a in closer:
                variants.add(tuple(args[:i]) + (closer[a],) + tuple(args[i + 1 :]))
        for variant in variants:
            params = ", ".join(f"{t}" for t in variant)
            call = ", ".join(f"${i}::{t}" for i, t in enumerate(args, start=1))
            ret = f"SETOF {returns}" if returns_set else returns
            if returns_set:
                body = f"RETURN QUERY SELECT * FROM pg_catalog.{name}({call})"
            elif returns == "void":
                body = f"PERFORM pg_catalog.{name}({call})"
            else:
                body = f"RETURN pg_catalog.{name}({call})"
            try:
                conn.execute(
                    sql.SQL(
                        "CREATE FUNCTION public.{}({}) RETURNS {} LANGUAGE plpgsql AS $f$ BEGIN "
                        "INSERT INTO public.hijacked VALUES ({}); {}; END $f$"
                    ).format(
                        sql.Identifier(name),
                        sql.SQL(params),
                        sql.SQL(ret),
                        sql.Literal(f"{name}({params})"),
                        sql.SQL(body),
                    )
                )
                planted += 1
            except psycopg.errors.DuplicateFunction:
                pass
    for op, types in {
        "=": ["text", "bigint", "integer", "double precision", "numeric", "boolean"],
        "<>": ["text", "bigint", "integer"],
        "<": ["bigint", "integer", "double precision", "text"],
        ">=": ["bigint", "integer", "double precision"],
        "||": ["text"],
    }.items():
        for t in types:
            fn = f"trap_op_{planted}"
            conn.execute(
                sql.SQL(
                    "CREATE FUNCTION public.{fn}(a {t}, b {t}) RETURNS {r} LANGUAGE plpgsql AS $f$ "
                    "BEGIN INSERT INTO public.hijacked VALUES ({what}); "
                    "RETURN a OPERATOR(pg_catalog.{op}) b; END $f$"
                ).format(
                    fn=sql.Identifier(fn),
                    t=sql.SQL(t),
                    r=sql.SQL("text" if op == "||" else "boolean"),
                    what=sql.Literal(f"operator {op} ({t})"),
                    op=sql.SQL(op),
                )
            )
            conn.execute(
                sql.SQL(
                    "CREATE OPERATOR public.{op} (LEFTARG = {t}, RIGHTARG = {t}, FUNCTION = public.{fn})"
                ).format(op=sql.SQL(op), t=sql.SQL(t), fn=sql.Identifier(fn))
            )
            planted += 1
    conn.execute(
        "CREATE FUNCTION public.trap_count(n bigint) RETURNS bigint LANGUAGE plpgsql AS $f$ "
        "BEGIN INSERT INTO public.hijacked VALUES ('count(*)'); RETURN n + 1; END $f$"
    )
    conn.execute(
        "CREATE AGGREGATE public.count(*) (SFUNC = public.trap_count, STYPE = bigint, INITCOND = 0)"
    )
    return planted + 1


def data(conn: Any, statement: str) -> None:
    """The test's own changes to the source, with pg_catalog first in the path (they use
    operators that the look-alikes would log); the path then goes back to the attacker's."""
    conn.execute("SET search_path = pg_catalog, public")
    conn.execute(statement)
    conn.execute("SET search_path = public, pg_catalog")


def releases(conn: Any) -> None:
    """Every owner verb, twice over a changing source, as the superuser, with the
    look-alikes' schema ahead of pg_catalog in the caller's path."""
    data(conn, f"CREATE TABLE public.people ({SOURCE_COLUMNS})")
    data(
        conn,
        "INSERT INTO public.people SELECT g, 20 + g % 40, '9' || (g % 7)::text, "
        "CASE WHEN g % 2 = 0 THEN 'f' ELSE 'm' END, (g * 37) % 1000, 'j' || (g % 5)::text "
        "FROM pg_catalog.generate_series(1, 400) AS g",
    )
    data(conn, "CREATE TABLE public.others AS SELECT * FROM public.people")
    ke = (
        "SELECT sqlanon.release_ke({source}, {family}, key => 'id', sensitive => 'cost', "
        "quasi => ARRAY['age', 'sex'], k => 4, e => 50{extra})"
    )
    paper = ke.format(
        source="'others'", family="'p_paper'", extra=", policy => 'paper', domain => 'paper'"
    )
    conn.execute(ke.format(source="'people'", family="'p_ke'", extra=""))
    conn.execute(paper)
    conn.execute(
        "SELECT sqlanon.hierarchy_widths('people', 'age', ARRAY[5, 10, 20]::double precision[])"
    )
    lhd = (
        "SELECT sqlanon.release_lhd('people', 'p_lhd', key => 'id', quasi => ARRAY['age'], "
        "sensitive => ARRAY['job'], l => 2, max_suppression => 0.5)"
    )
    conn.execute(lhd)
    conn.execute("SELECT sqlanon.audit('p_ke', true)")
    data(conn, "DELETE FROM public.people WHERE id % 50 = 0")
    data(conn, "UPDATE public.people SET cost = cost + 1 WHERE id % 45 = 0")
    data(
        conn,
        "INSERT INTO public.people SELECT g, 20 + g % 40, '9' || (g % 7)::text, 'f', g % 900, "
        "'j' || (g % 5)::text FROM pg_catalog.generate_series(401, 440) AS g",
    )
    conn.execute("SELECT sqlanon.erase('people')")
    conn.execute(ke.format(source="'people'", family="'p_ke'", extra=""))
    conn.execute(lhd)
    conn.execute("SELECT sqlanon.audit('p_lhd')")
    data(conn, "UPDATE public.others SET cost = cost + 1 WHERE id % 45 = 0")
    data(conn, "INSERT INTO public.others SELECT * FROM public.people WHERE id > 400")
    conn.execute(paper)


@pytest.mark.postgres
def test_planted_look_alikes_are_never_called(pg_db: str, pg_python_root: Path) -> None:
    install_postgres(pg_db, python_root=pg_python_root)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        planted = plant(conn)
        assert planted > 100
        # The trap works: a bare call through this path reaches a look-alike.
        conn.execute("SET search_path = public, pg_catalog")
        conn.execute("SELECT lower('A'), hashtextextended('x', 1), count(*) FROM (VALUES (1)) AS v")
        assert conn.execute("SELECT pg_catalog.count(*) FROM public.hijacked").fetchone()[0] >= 3
        conn.execute("TRUNCATE public.hijacked")
        releases(conn)
        calls = conn.execute(
            "SELECT what, pg_catalog.count(*) FROM public.hijacked GROUP BY what"
        ).fetchall()
        assert calls == [], f"release SQL called planted look-alikes: {calls}"
        # ... and the releases did their work.
        versions = conn.execute(
            "SELECT family, pg_catalog.max(version) FROM sqlanon.releases GROUP BY family ORDER BY 1"
        ).fetchall()
        assert versions == [("p_ke", 2), ("p_lhd", 2), ("p_paper", 2)]


@pytest.mark.postgres
def test_client_side_release_pins_the_path(pg_db: str, pg_python_root: Path) -> None:
    """The Python API over psycopg (PsycopgSession) runs the same SQL in the client's
    session: the look-alikes ahead of pg_catalog stay uncalled there too, and the
    caller's path is back afterwards."""
    install_postgres(pg_db, python_root=pg_python_root)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        plant(conn)
        data(conn, f"CREATE TABLE public.people ({SOURCE_COLUMNS})")
        data(
            conn,
            "INSERT INTO public.people SELECT g, 20 + g % 40, 'z', 'f', g % 300, 'j' "
            "FROM pg_catalog.generate_series(1, 200) AS g",
        )
        conn.execute("TRUNCATE public.hijacked")
        summary = sqlanon.release_ke(
            conn, "people", "c_ke", key="id", sensitive="cost", quasi=["age"], k=4, e=20
        )
        assert summary["version"] == 1
        sqlanon.audit(conn, "c_ke")
        calls = conn.execute("SELECT what FROM public.hijacked").fetchall()
        assert calls == []
        assert conn.execute("SHOW search_path").fetchone()[0] == "public, pg_catalog"
        assert conn.execute("SELECT pg_catalog.count(*) FROM public.c_ke").fetchone()[0] > 0
