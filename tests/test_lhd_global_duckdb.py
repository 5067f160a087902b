"""``recoding := 'global'`` on real DuckDB files (issue 26, "uniform labels on request").

- Adult with the bundled ARX hierarchies: every label of each QI column of a global
  release is a label of one level, the level the catalog records, and the labels are the
  published records' ancestors there (hierarchy files read here, not through sqlanon);
  every class l-diverse; the release's parameters record the recoding.
- A sequence on one source mixing local, global and (k,e) families with appends: the
  product's audit finds 0 exposed; generated live sequences (inserts, deletes,
  corrected values: the engine path and the row path) leave the exact attacker of
  ``tests/test_live_duckdb.py`` nobody exposed.
- Anything but 'local'/'global' is refused with a ConfigError, nothing written; the
  CLI's ``--recoding``; a dry run equals the release.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.cli import main
from sqlanon.demo import load_adult
from sqlanon.errors import ConfigError
from tests.test_live_duckdb import (
    PERSON,
    Step,
    Table,
    changes,
    release_in_turn,
    replay,
)
from tests.test_preview_duckdb import dry_then_real, snapshot
from tests.test_release_lhd_duckdb import HIERARCHIES, check_l_diverse, make_employees

ADULT = {
    "key": "id",
    "quasi": ["age", "marital_status", "sex", "education"],
    "sensitive": ["capital_loss"],
    "l": 3,
}


def arx_levels(column: str) -> dict[str, list[str]]:
    """The bundled ARX hierarchy of ``column``: raw value -> labels by level."""
    path = HIERARCHIES / f"adult_hierarchy_{column.replace('_', '-')}.csv"
    rows = [line.split(";") for line in path.read_text().splitlines() if line.strip()]
    return {row[0]: row for row in rows}


def levels_holding(table: dict[str, list[str]], labels: set[str]) -> list[int]:
    depth = len(next(iter(table.values())))
    return [lv for lv in range(depth) if labels <= {row[lv] for row in table.values()}]


@pytest.fixture
def adult(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(tmp_path / "adult.duckdb"))
    sqlanon.install(con)
    load_adult(con, "adult")
    sqlanon.load_hierarchies(con, "adult")
    yield con
    con.close()


def check_one_level_per_column(
    con: duckdb.DuckDBPyConnection, family: str, summary: dict[str, Any], where: str = ""
) -> None:
    """Every QI label of ``family``'s newest version is of the recorded level, and, as a
    multiset, the source's raw values' ancestors there when nothing was left out."""
    for column in ADULT["quasi"]:
        table = arx_levels(column)
        published = Counter(
            str(v)
            for (v,) in con.execute(f"SELECT {column} FROM {family}").fetchall()  # noqa: S608
        )
        level = summary["levels"][column]
        assert level in levels_holding(table, set(published)), (column, published)
        raw = con.execute(f"SELECT {column} FROM adult {where}").fetchall()  # noqa: S608
        if summary["held_back"] + summary["suppressed"] == 0:
            assert published == Counter(table[str(v)][level] for (v,) in raw)


def test_a_global_release_of_adult_labels_each_column_at_one_level(
    adult: duckdb.DuckDBPyConnection,
) -> None:
    summary = json.loads(
        adult.execute(
            "SELECT sqlanon_release_lhd('adult', 'adult_g', key := 'id', "
            "quasi := ['age', 'marital_status', 'sex', 'education'], "
            "sensitive := ['capital_loss'], l := 3, recoding := 'global')"
        ).fetchone()[0]
    )
    assert summary["algorithm_used"] == "global"
    assert summary["held_back"] + summary["suppressed"] <= 0.05 * summary["records"]
    check_one_level_per_column(adult, "adult_g", summary)
    check_l_diverse(adult, "adult_g_v1", "capital_loss", 3)
    (parameters,) = adult.execute("SELECT parameters FROM sqlanon.releases").fetchone()
    assert json.loads(parameters)["recoding"] == "global"
    assert [r["exposed"] for r in sqlanon.audit(adult, "adult_g")] == [0]


def test_local_global_and_ke_families_on_one_source_expose_nobody(
    adult: duckdb.DuckDBPyConnection,
) -> None:
    adult.execute("DELETE FROM adult WHERE id >= 8000")  # about 500 rows
    adult.execute("CREATE TABLE rest AS SELECT * FROM adult WHERE id % 4 = 0")
    adult.execute("DELETE FROM adult WHERE id % 4 = 0")
    (appended,) = adult.execute("SELECT count(*) FROM rest").fetchone()
    ke = {"key": "id", "sensitive": "capital_loss", "quasi": ["age"], "k": 3, "e": 100}
    local = {**ADULT, "algorithm": "scalable", "max_suppression": 0.5}
    g1 = sqlanon.release_lhd(adult, "adult", "g_fam", **ADULT, recoding="global")
    check_one_level_per_column(adult, "g_fam", g1)
    sqlanon.release_lhd(adult, "adult", "l_fam", **local)
    sqlanon.release_ke(adult, "adult", "k_fam", **ke)
    adult.execute("INSERT INTO adult SELECT * FROM rest")
    g2 = sqlanon.release_lhd(
        adult, "adult", "g_fam", **ADULT, recoding="global", max_suppression=0.5
    )
    assert g2["version"] == 2 and g2["inserted"] == appended
    check_one_level_per_column(adult, "g_fam", g2)
    sqlanon.release_lhd(adult, "adult", "l_fam", **local)
    sqlanon.release_ke(adult, "adult", "k_fam", **ke)
    for family in ("k_fam", "l_fam", "g_fam"):
        assert [r["exposed"] for r in sqlanon.audit(adult, family)] == [0] * 6
    for table in ("l_fam_v1", "l_fam_v2", "g_fam_v1", "g_fam_v2"):
        check_l_diverse(adult, table, "capital_loss", 3)


LIVE_LHD = {"key": "id", "quasi": ["age", "zone"], "sensitive": ["s", "c"], "l": 2}


def live_release(table: Table, family: str) -> dict[str, Any]:
    if family == "K":
        return sqlanon.release_ke(
            table.con, "src", "k_fam", key="id", sensitive="s", quasi=["age"], k=2, e=1
        )
    recoding = "global" if family == "G" else "local"
    return sqlanon.release_lhd(
        table.con, "src", f"{family.lower()}_fam", **LIVE_LHD, recoding=recoding,
        max_suppression=1.0,
    )  # fmt: skip


@st.composite
def live_sequences(draw: Any) -> tuple[list[Any], list[list[Step]], list[str]]:
    first = draw(st.lists(PERSON, min_size=4, max_size=7))
    change = changes(("insert", "delete", "value", "quasi"))
    batches = draw(st.lists(st.lists(change, min_size=1, max_size=3), min_size=1, max_size=2))
    order = draw(st.permutations(["K", "L", "G"]))
    return first, batches, list(order)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(live_sequences())
def test_live_sequences_with_a_global_family_leave_the_exact_attacker_nothing(
    scenario: Any,
) -> None:
    first, batches, order = scenario

    def step(table: Table, where: str) -> None:
        release_in_turn(table, [(f, lambda f=f: live_release(table, f)) for f in order], where)

    replay(first, batches, step, scenario)


def test_recoding_other_than_local_or_global_writes_nothing(
    adult: duckdb.DuckDBPyConnection,
) -> None:
    before = snapshot(adult)
    for bad in ("'Global'", "'full-domain'", "NULL"):
        with pytest.raises(duckdb.Error, match="recoding must be 'local'.*or 'global'"):
            adult.execute(
                "SELECT sqlanon_release_lhd('adult', 'adult_x', key := 'id', quasi := ['age'], "
                f"sensitive := ['capital_loss'], l := 2, recoding := {bad})"
            )
    with pytest.raises(ConfigError, match="recoding must be"):
        sqlanon.release_lhd(adult, "adult", "adult_x", **ADULT, recoding="full")
    with pytest.raises(ConfigError, match="leave algorithm 'auto'"):
        sqlanon.release_lhd(
            adult, "adult", "adult_x", **ADULT, recoding="global", algorithm="greedy"
        )
    assert snapshot(adult) == before


def test_a_global_dry_run_equals_the_release(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "lhd.duckdb"))
    sqlanon.install(con)
    make_employees(con, tmp_path / "hier")
    args = {"key": "id", "quasi": ["position", "gender", "zip"], "sensitive": ["salary"]}
    dry = dry_then_real(con, sqlanon.release_lhd, "emp_g", **args, l=2, recoding="global")
    assert dry["utility"]["recoding"] == "global"
    assert set(dry["utility"]["levels"]) == {"position", "gender", "zip"}
    rows = sqlanon.preview(
        con, "emp", "emp_p", "lhd", {"recoding": ["local", "global"]}, **args, l=2,
        max_suppression=0.5,
    )  # fmt: skip
    assert [r["recoding"] for r in rows] == ["local", "global"]
    assert all(r["refused"] is None for r in rows)
    con.close()


def test_cli_recoding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "cli.duckdb")
    con = duckdb.connect(db)
    sqlanon.install(con)
    load_adult(con, "adult")
    con.execute("DELETE FROM adult WHERE id >= 8000")
    sqlanon.load_hierarchies(con, "adult")
    con.close()
    common = ["--db", db, "adult", "adult_g", "--key", "id", "--quasi", "age", "sex",
              "--sensitive", "capital_loss", "--l", "2"]  # fmt: skip
    assert main(["release-lhd", *common, "--recoding", "global"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["algorithm_used"] == "global" and set(out["levels"]) == {"age", "sex"}
    with pytest.raises(SystemExit) as exit_code:
        main(["release-lhd", *common, "--recoding", "cell"])
    assert exit_code.value.code == 2
    assert "invalid choice: 'cell'" in capsys.readouterr().err
    assert main(["preview", "lhd", *common[:-2], "--sweep", "recoding=local,global",
                 "--l", "2"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "local" in out and "global" in out
