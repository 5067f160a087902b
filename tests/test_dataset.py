"""A release's ``dataset`` (issue 28): the owner names once what a source is a copy,
view or dbt model of. Its lHD hierarchies are looked up under that name (not the
source table's), a new domain is named ``schema.dataset``, and the rewriter (on the
owner's database, on an export, and PostgreSQL's ``sqlanon.release_hierarchies()``)
finds the same hierarchies. Real DuckDB files and the real PostgreSQL test server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest

import sqlanon
from sqlanon.demo import load_adult
from sqlanon.errors import ConfigError
from sqlanon.postgres.install import install_postgres

HIERARCHIES = Path(sqlanon.__file__).parent / "data" / "hierarchies"
LHD = {"key": "id", "quasi": ["age", "sex"], "sensitive": ["capital_loss"], "l": 2}
QUERY = "SELECT sex, COUNT(*) AS n FROM visits_l GROUP BY sex ORDER BY sex"


def truth(con: Any) -> dict[str, int]:
    rows = con.execute("SELECT sex, count(*) FROM visits GROUP BY sex").fetchall()
    return {str(sex): int(n) for sex, n in rows}


def contains_truth(rows: list[dict[str, Any]], true: dict[str, int]) -> None:
    assert rows, "no answer"
    for row in rows:
        if row["sex"] in true:
            assert row["n_low"] <= true[row["sex"]] <= row["n_high"], row


def test_a_view_releases_with_the_hierarchies_of_its_dataset_on_duckdb(tmp_path: Path) -> None:
    path = tmp_path / "clinic.duckdb"
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    load_adult(con, "adult")
    sqlanon.load_hierarchies(con, "adult", str(HIERARCHIES))
    con.execute("CREATE VIEW visits AS SELECT * FROM adult WHERE id % 3 <> 0")

    with pytest.raises(ConfigError, match=r"dataset 'visits'.*dataset := '<name>'"):
        sqlanon.release_lhd(con, "visits", "visits_l", **LHD)
    with pytest.raises(ConfigError, match="dataset must be a plain name"):
        sqlanon.release_lhd(con, "visits", "visits_l", **LHD, dataset="../adult")

    summary = sqlanon.release_lhd(con, "visits", "visits_l", **LHD, dataset="adult")
    assert summary["version"] == 1 and summary["domain"] == "main.adult"
    (parameters,) = con.execute(
        "SELECT parameters FROM sqlanon.releases WHERE family = 'visits_l'"
    ).fetchone()
    assert json.loads(parameters)["dataset"] == "adult"
    # the ARX labels of sex are published, and the rewriter reads them from 'adult'
    labels = {r[0] for r in con.execute("SELECT DISTINCT sex FROM visits_l").fetchall()}
    assert labels <= {"Male", "Female", "*"}
    contains_truth(sqlanon.interval(con, QUERY), truth(con))

    # the SQL macro takes it too: a second family of the same view, same domain
    (text,) = con.execute(
        "SELECT sqlanon_release_lhd('visits', 'visits_l2', key := 'id', quasi := ['age'], "
        "sensitive := ['capital_loss'], l := 2, dataset := 'adult')"
    ).fetchone()
    assert json.loads(text)["domain"] == "main.adult"

    # an analyst's export answers alike: the export keeps the dataset and its hierarchies
    sqlanon.export(con, "visits_l", tmp_path / "visits.duckdb")
    true = truth(con)
    con.close()
    analyst = duckdb.connect(str(tmp_path / "visits.duckdb"), read_only=True)
    try:
        sqlanon.install(analyst)
        contains_truth(sqlanon.interval(analyst, QUERY), true)
    finally:
        analyst.close()


def test_the_cli_takes_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sqlanon.cli import main

    path = tmp_path / "clinic.duckdb"
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    load_adult(con, "adult")
    con.execute("CREATE TABLE visits AS SELECT * FROM adult")
    con.close()
    assert main(["load-hierarchies", "--db", str(path), "adult"]) == 0
    capsys.readouterr()
    args = ["release-lhd", "--db", str(path), "visits", "visits_l", "--key", "id"]
    args += ["--quasi", "age", "sex", "--sensitive", "capital_loss", "--l", "2"]
    assert main([*args, "--dataset", "adult"]) == 0
    assert json.loads(capsys.readouterr().out)["domain"] == "main.adult"


@pytest.mark.postgres
def test_a_view_releases_with_the_hierarchies_of_its_dataset_on_postgres(
    pg_db: str, pg_python_root: Path
) -> None:
    install_postgres(pg_db, python_root=pg_python_root)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE adult (id integer, age integer, sex text, capital_loss integer)")
        conn.execute(
            "INSERT INTO adult SELECT i, 20 + mod(i * 7, 50), CASE mod(i, 3) WHEN 0 THEN "
            "'Female' ELSE 'Male' END, mod(i * 37, 60) * 10 FROM generate_series(1, 300) i"
        )
        conn.execute("CREATE VIEW visits AS SELECT * FROM adult WHERE mod(id, 4) <> 0")
        conn.execute("SELECT sqlanon.load_hierarchies('adult')")  # the bundled ones
        with pytest.raises(psycopg.Error, match="dataset 'visits'"):
            conn.execute(
                "SELECT sqlanon.release_lhd('visits', 'visits_l', key => 'id', "
                "quasi => ARRAY['age', 'sex'], sensitive => ARRAY['capital_loss'], l => 2)"
            )
        (summary,) = conn.execute(
            "SELECT sqlanon.release_lhd('visits', 'visits_l', key => 'id', "
            "quasi => ARRAY['age', 'sex'], sensitive => ARRAY['capital_loss'], l => 2, "
            "dataset => 'adult')"
        ).fetchone()
        assert summary["domain"] == "public.adult"
        (count,) = conn.execute(
            "SELECT count(*) FROM sqlanon.release_hierarchies() WHERE quasi = 'sex'"
        ).fetchone()
        assert count > 0  # the rewriter's public metadata finds them under 'adult'
        true = dict(conn.execute("SELECT sex, count(*) FROM visits GROUP BY sex").fetchall())
        rows = sqlanon.interval(conn, QUERY)
    contains_truth(rows, {str(k): int(v) for k, v in true.items()})
