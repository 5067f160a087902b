"""Names as SQL writes them, on DuckDB and in the pure parts: quoted parts match exactly,
unquoted ones ignoring case, and an unquoted name matching several is refused."""

from __future__ import annotations

import json

import duckdb
import pytest

import sqlanon
from sqlanon import sqltext
from sqlanon.errors import AmbiguousNameError, ConfigError, UndefinedColumnError
from sqlanon.state.source import Source


@pytest.fixture
def clinic() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    sqlanon.install(con)
    con.execute('CREATE SCHEMA "Clinic"')
    con.execute(
        'CREATE TABLE "Clinic"."MixedCase" AS SELECT g AS "Id", 20 + g % 40 AS "Age",'
        ' (g * 7919) % 500 AS "Loss" FROM range(1, 201) AS t(g)'
    )
    return con


def release(con: duckdb.DuckDBPyConnection, source: str, family: str, quasi: str) -> dict:
    return sqlanon.release_ke(
        con, source, family, key='"Id"', sensitive="Loss", quasi=[quasi], k=3, e=5
    )


def test_quoted_source_family_and_columns_on_duckdb(clinic: duckdb.DuckDBPyConnection) -> None:
    summary = release(clinic, '"Clinic"."MixedCase"', '"MixedFamily"', '"Age"')
    assert summary["table"] == "MixedFamily_v1" and summary["domain"] == "Clinic.MixedCase"
    assert clinic.execute('SELECT count(*) FROM "MixedFamily"').fetchone() == (200,)
    sql = (
        "SELECT sqlanon_release_ke('\"Clinic\".\"MixedCase\"', 'other', key := 'id',"
        " sensitive := '\"Loss\"', quasi := ['age'], k := 3, e := 5)"
    )
    assert json.loads(clinic.execute(sql).fetchone()[0])["table"] == "other_v1"
    # unquoted: one table and one column match ignoring case
    assert release(clinic, "clinic.mixedcase", "plain", "AGE")["table"] == "plain_v1"
    with pytest.raises(duckdb.Error, match="UndefinedTableError"):
        clinic.execute(sql.replace('"Clinic"', '"clinic"').replace("'other'", "'x'"))
    with pytest.raises(duckdb.Error, match="UndefinedColumnError"):
        clinic.execute(sql.replace("'id'", "'\"id\"'").replace("'other'", "'y'"))


def test_an_unquoted_column_matching_several_is_refused() -> None:
    source = Source("s", "t", {"Age": "INTEGER", "age": "INTEGER", "Id": "INTEGER"})
    with pytest.raises(AmbiguousNameError, match="quote the one you mean"):
        source.column("AGE", "quasi")
    assert source.column('"age"', "quasi") == "age" and source.column("id", "key") == "Id"
    with pytest.raises(UndefinedColumnError):
        source.column('"AGE"', "quasi")


def test_names_split_like_sql() -> None:
    assert sqltext.split_name('"Clinic"."My.Table"', "source") == [
        ("Clinic", True),
        ("My.Table", True),
    ]
    assert sqltext.split_name(" public . adult ", "source") == [
        ("public", False),
        ("adult", False),
    ]
    assert sqltext.split_name('"a""b"', "source") == [('a"b', True)]
    for bad in ('"open', 'a"b', "a..b", '"a"x', ""):
        with pytest.raises(ConfigError):
            sqltext.split_name(bad, "source")
    assert sqltext.check_family('"MixedCase"') == "MixedCase"
    with pytest.raises(ConfigError):
        sqltext.check_family('"bad name"')


@pytest.mark.parametrize("table", ["full", "my table", 'odd"name'])
def test_the_bundled_adult_loads_under_any_table_name(table: str) -> None:
    from sqlanon.demo import load_adult

    con = duckdb.connect()
    assert load_adult(con, table) == 1427
    quoted = '"' + table.replace('"', '""') + '"'
    assert con.execute(f"SELECT count(*) FROM {quoted}").fetchone() == (1427,)  # noqa: S608


def test_a_table_of_an_attached_database_is_not_the_source(
    clinic: duckdb.DuckDBPyConnection,
) -> None:
    """information_schema lists every attached database's relations: a table of the
    same schema and name elsewhere adds no column to the source, a table only elsewhere
    is not a source, and a family's name taken elsewhere is free here."""
    clinic.execute("ATTACH ':memory:' AS other")
    clinic.execute('CREATE SCHEMA other."Clinic"')
    clinic.execute(
        'CREATE TABLE other."Clinic"."MixedCase" ("Id" INTEGER, "Secret" VARCHAR, "Age" DOUBLE)'
    )
    clinic.execute('CREATE TABLE other."Clinic"."Elsewhere" AS SELECT 1 AS "Id"')
    clinic.execute("CREATE TABLE other.main.fam_v1 (x INTEGER)")
    with pytest.raises(UndefinedColumnError, match="Secret"):
        sqlanon.release_ke(
            clinic, '"Clinic"."MixedCase"', "f", key='"Id"', sensitive="Loss",
            quasi=['"Secret"'], k=3, e=5,
        )  # fmt: skip
    with pytest.raises(sqlanon.SqlanonError, match="does not exist"):
        release(clinic, '"Clinic"."Elsewhere"', "g", '"Age"')
    summary = release(clinic, '"Clinic"."MixedCase"', "fam", '"Age"')
    assert summary["table"] == "fam_v1"
    types = dict(
        clinic.execute("SELECT column_name, column_type FROM (DESCRIBE fam_v1)").fetchall()
    )
    assert types["Age"] == "BIGINT" and "Secret" not in types
    assert clinic.execute("SELECT count(*) FROM fam_v1").fetchone() == (200,)
