"""``recoding => 'global'`` on PostgreSQL: the server's function (PL/Python) and the
client (psycopg) publish what DuckDB publishes from the same 1,000 Adult records; a bad
recoding is refused with nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest

import sqlanon
from sqlanon.demo import load_adult
from sqlanon.postgres.install import PostgresInstall
from tests.test_postgres_functions import adult, adult_rows, installed, one, relations

pytestmark = pytest.mark.postgres
__all__ = ["adult", "installed"]  # fixtures used here

QUASI = ["age", "marital_status", "sex", "education"]
CALL = (
    "SELECT sqlanon.release_lhd('adult', %s, key => 'id', "
    "quasi => ARRAY['age', 'marital_status', 'sex', 'education'], "
    "sensitive => ARRAY['capital_loss'], l => 3, recoding => %s)"
)
FAMILIES = ("adult_server", "adult_client")
#: What differs between two engines' summaries of the same release.
ENGINE_FIELDS = ("family", "table", "domain", "seq")


def rows(fetch: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(str(v) for v in r) for r in fetch)


def duckdb_releases() -> dict[str, tuple[dict[str, Any], list[tuple[Any, ...]]]]:
    """Per family, DuckDB's summary and rows of the two global releases, in order."""
    con = duckdb.connect()
    sqlanon.install(con)
    load_adult(con, "adult")
    keep = [r[0] for r in adult_rows()[1][:1000]]
    con.execute("DELETE FROM adult WHERE NOT list_contains($1, id)", [keep])
    sqlanon.load_hierarchies(con, "adult")
    out = {}
    for family in FAMILIES:
        summary = sqlanon.release_lhd(
            con, "adult", family, key="id", quasi=QUASI, sensitive=["capital_loss"], l=3,
            recoding="global",
        )  # fmt: skip
        published = con.execute(f"SELECT {', '.join(QUASI)}, capital_loss FROM {family}")  # noqa: S608
        out[family] = (summary, rows(published.fetchall()))
    con.close()
    return out


def test_global_releases_on_postgres_equal_duckdb(adult: Any, installed: PostgresInstall) -> None:
    """The server's release, then the client's in the same domain (its cells are the
    server's classes), as DuckDB publishes the same two."""
    folder = installed.python_dir / "sqlanon" / "data" / "hierarchies"
    one(adult, "SELECT sqlanon.load_hierarchies('adult', %s)", [str(folder)])
    on_duckdb = duckdb_releases()
    by_server = one(adult, CALL, [FAMILIES[0], "global"])
    by_client = sqlanon.release_lhd(
        adult, "adult", FAMILIES[1], key="id", quasi=QUASI, sensitive=["capital_loss"],
        l=3, recoding="global",
    )  # fmt: skip
    assert by_server["algorithm_used"] == "global"

    def same(summary: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in summary.items() if k not in ENGINE_FIELDS}

    select = f"SELECT {', '.join(QUASI)}, capital_loss FROM {{}}"
    for family, summary in zip(FAMILIES, (by_server, by_client), strict=True):
        assert same(summary) == same(on_duckdb[family][0])
        published = adult.execute(
            psycopg.sql.SQL(select).format(psycopg.sql.Identifier(family))
        ).fetchall()
        assert rows(published) == on_duckdb[family][1]
    parameters = adult.execute("SELECT parameters FROM sqlanon.releases ORDER BY seq").fetchall()
    assert [p["recoding"] for (p,) in parameters] == ["global", "global"]
    assert [a["exposed"] for a in one(adult, "SELECT sqlanon.audit('adult_server')")] == [0, 0]


def test_a_bad_recoding_is_refused_on_postgres_with_nothing_written(
    adult: Any, installed: PostgresInstall
) -> None:
    folder = installed.python_dir / "sqlanon" / "data" / "hierarchies"
    one(adult, "SELECT sqlanon.load_hierarchies('adult', %s)", [str(folder)])
    before = relations(adult)
    for bad in ("Global", None):
        with pytest.raises(psycopg.Error, match="recoding must be 'local'.*or 'global'"):
            one(adult, CALL, ["adult_bad", bad])
    assert relations(adult) == before
    assert one(adult, "SELECT count(*) FROM sqlanon.releases") == 0


def test_the_old_call_without_recoding_is_local(adult: Any, installed: PostgresInstall) -> None:
    folder = Path(installed.python_dir) / "sqlanon" / "data" / "hierarchies"
    one(adult, "SELECT sqlanon.load_hierarchies('adult', %s)", [str(folder)])
    summary = one(
        adult,
        "SELECT sqlanon.release_lhd('adult', 'adult_l', 'id', ARRAY['age', 'sex'], "
        "ARRAY['capital_loss'], 2, 'auto', 0.05, NULL, false)",
    )
    assert summary["algorithm_used"] != "global" and "levels" not in summary
    (parameters,) = adult.execute("SELECT parameters FROM sqlanon.releases").fetchone()
    assert parameters["recoding"] == "local"
