"""Release sequences through real DuckDB files, checked by ``tests/attacker.py``.

The attacker reads what was published (the release tables: each group's or class's
multiset of sensitive rows), uses ``sqlanon.members`` only as the membership oracle
(the worst case: it knows who is in which group) and the source table for the true
values. After every release of a domain, whatever its family or model, no record may
be below the requirement of the releases that published it.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings

import sqlanon
from sqlanon.demo import bundled_adult
from sqlanon.errors import InfeasibleError
from tests.attacker import Observation, Release, cell_check, exact_attack, subtraction_attack
from tests.test_composition_properties import (
    EDUCATION,
    EITHER,
    KeFamily,
    Scenario,
    ke_families,
    lhd_families,
    scenarios,
)

HIERARCHIES = Path(sqlanon.__file__).parent / "data" / "hierarchies"


class Published:
    """Every release of one domain as the attacker sees it, in the domain's order."""

    def __init__(self, con: duckdb.DuckDBPyConnection, source: str, key: str, domain: str):
        rows = con.execute(
            "SELECT family, version, table_name, model, CAST(parameters AS VARCHAR) "
            "FROM sqlanon.releases WHERE domain = ? ORDER BY seq",
            [domain],
        ).fetchall()
        params = [json.loads(p) for *_, p in rows]
        names = sorted(
            {
                a
                for p in params
                for a in ([p["sensitive"]] if isinstance(p["sensitive"], str) else p["sensitive"])
            }
        )
        columns = ", ".join(f'"{a}"' for a in names)
        truth = con.execute(f'SELECT CAST("{key}" AS VARCHAR), {columns} FROM {source}').fetchall()
        self.keys = [row[0] for row in truth]
        index = {k: i for i, k in enumerate(self.keys)}
        self.values: dict[str, list[Any]] = {
            a: [row[1 + j] for row in truth] for j, a in enumerate(names)
        }
        self.releases: list[Release] = []
        self.observed: list[Observation] = []
        for i, ((family, version, table, model, _), p) in enumerate(zip(rows, params, strict=True)):
            members = con.execute(
                "SELECT record_key, group_id FROM sqlanon.members "
                "WHERE family = ? AND version = ? AND status = 'published'",
                [family, version],
            ).fetchall()
            group = [-1] * len(self.keys)
            records: dict[int, set[int]] = {}
            for record_key, g in members:
                group[index[record_key]] = g
                records.setdefault(g, set()).add(index[record_key])
            if model == "ke":
                s = p["sensitive"]
                release = Release.ke(group, s, p["k"], p["e"], label=f"{family} v{version}")
                group_column = "group_id"
            else:
                release = Release.lhd(group, p["sensitive"], p["l"], label=f"{family} v{version}")
                group_column = "class_id"
            self.releases.append(release)
            shown = ", ".join(f'"{a}"' for a in release.attributes)
            rows_by_group: dict[int, Counter[tuple[Any, ...]]] = {}
            for g, *row in con.execute(
                f'SELECT "{group_column}", {shown} FROM "{table}"'
            ).fetchall():
                rows_by_group.setdefault(g, Counter())[tuple(row)] += 1
            assert set(rows_by_group) == set(records), f"{table}: groups differ from members"
            for g, multiset in rows_by_group.items():
                self.observed.append(
                    Observation(i, frozenset(records[g]), release.attributes, multiset)
                )

    def assert_safe(self, exact: bool = False) -> None:
        where = f"after {self.releases[-1].label}"
        by_cell = cell_check(self.values, self.releases)
        assert not by_cell.flagged, f"cell check {where}: {by_cell.describe()}"
        attack = subtraction_attack(self.values, self.releases, self.observed)
        assert not attack.flagged, f"subtraction {where}: {attack.describe()}"
        if exact:
            by_exact = exact_attack(self.values, self.releases, self.observed)
            assert not by_exact.flagged, f"exact {where}: {by_exact.describe()}"


@pytest.fixture
def con(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    db = duckdb.connect(str(tmp_path / "composition.duckdb"))
    sqlanon.install(db)
    yield db
    db.close()


def test_issue_10_lhd_after_appends_on_adult(con: duckdb.DuckDBPyConnection) -> None:
    """Issue 10, case 1: 700 Adult rows released with l = 3, 150 appended, released again
    with the same call. Used to publish {1887, 1887, 1740, 1485, 1977} then the same five
    people plus one appended person (1902)."""
    con.execute(
        "CREATE TABLE adult_all AS SELECT * FROM read_csv(?, header = true)",
        [str(bundled_adult())],
    )
    con.execute("CREATE TABLE adult AS SELECT * FROM adult_all WHERE rowid < 700")
    sqlanon.load_hierarchies(con, "adult", str(HIERARCHIES))
    call = {
        "key": "id",
        "quasi": ["age", "sex", "education"],
        "sensitive": ["capital_loss"],
        "l": 3,
    }
    sqlanon.release_lhd(con, "adult", "a", **call)  # type: ignore[arg-type]
    Published(con, "adult", "id", "main.adult").assert_safe()
    con.execute("INSERT INTO adult SELECT * FROM adult_all WHERE rowid >= 700 AND rowid < 850")
    summary = sqlanon.release_lhd(con, "adult", "a", **call)  # type: ignore[arg-type]
    assert summary["version"] == 2
    published = Published(con, "adult", "id", "main.adult")
    published.assert_safe()
    assert sum(g >= 0 for g in published.releases[-1].group) == summary["rows_published"]


def test_issue_10_lhd_then_ke_on_four_rows(con: duckdb.DuckDBPyConnection) -> None:
    """Issue 10, case 2: the age-30 class {100, 900}, then a (k,e) release (k=2, e=5)
    that used to put the (30, M) row in the group {100, 110}."""
    con.execute("CREATE TABLE src (id INTEGER, age INTEGER, sex VARCHAR, v INTEGER)")
    con.execute(
        "INSERT INTO src VALUES (1, 30, 'M', 100), (2, 30, 'F', 900), (3, 50, 'M', 110), "
        "(4, 50, 'F', 910)"
    )
    sqlanon.hierarchy_widths(con, "src", "age", [10, 20])
    sqlanon.release_lhd(con, "src", "a", key="id", quasi=["age"], sensitive=["v"], l=2)
    Published(con, "src", "id", "main.src").assert_safe(exact=True)
    sqlanon.release_ke(con, "src", "b", key="id", quasi=["age", "sex"], sensitive="v", k=2, e=5)
    published = Published(con, "src", "id", "main.src")
    assert len(published.releases) == 2
    published.assert_safe(exact=True)


def test_families_of_both_models_and_appends(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """Four families on one source (two (k,e) with different k/e, two lHD with other QI
    and SA subsets), interleaved with appends by INSERT."""
    con.execute(
        "CREATE TABLE people (id INTEGER, age INTEGER, sex VARCHAR, zone INTEGER, "
        "pay INTEGER, loss INTEGER, job VARCHAR)"
    )

    def insert(start: int, stop: int) -> None:
        con.execute(
            "INSERT INTO people SELECT i, 20 + (i * 7) % 40, CASE WHEN i % 3 = 0 THEN 'F' "
            "ELSE 'M' END, i % 5, (i * 37) % 101, (i * 13) % 17, "
            "chr(CAST(97 + (i * 5) % 7 AS INTEGER)) FROM range(?, ?) AS t(i)",
            [start, stop],
        )

    insert(0, 60)
    sqlanon.hierarchy_widths(con, "people", "age", [5, 10, 20])
    sqlanon.hierarchy_widths(con, "people", "zone", [2, 4])
    (tmp_path / "people_hierarchy_sex.csv").write_text("M;*\nF;*\n")
    sqlanon.load_hierarchies(con, "people", str(tmp_path))

    def pay_ke() -> None:
        sqlanon.release_ke(
            con, "people", "pay_ke", key="id", quasi=["age", "sex"], sensitive="pay", k=3, e=10
        )

    def loss_ke() -> None:
        sqlanon.release_ke(
            con, "people", "loss_ke", key="id", quasi=["zone"], sensitive="loss", k=2, e=3,
            policy="defer",
        )  # fmt: skip

    def both_lhd() -> None:
        sqlanon.release_lhd(
            con, "people", "both", key="id", quasi=["age", "sex"], sensitive=["pay", "job"], l=3
        )

    def loss_lhd() -> None:
        sqlanon.release_lhd(
            con, "people", "loss", key="id", quasi=["zone", "sex"], sensitive=["loss"], l=2,
            algorithm="greedy", max_suppression=0.2,
        )  # fmt: skip

    plan: list[Callable[[], None] | tuple[int, int]]
    plan = [pay_ke, both_lhd, loss_ke, (60, 75), both_lhd, pay_ke, loss_lhd, (75, 77)]
    plan += [loss_ke, pay_ke, both_lhd, (77, 100), loss_lhd, both_lhd, loss_ke, pay_ke]
    released = 0
    for step in plan:
        if isinstance(step, tuple):
            insert(*step)
            continue
        try:
            step()
        except InfeasibleError:
            continue
        released += 1
        Published(con, "people", "id", "main.people").assert_safe()
    assert released >= 10


# ------------------------------------------------- generated sequences through DuckDB


def _drive(con: duckdb.DuckDBPyConnection, folder: Path, scenario: Scenario) -> int:
    """Replay a generated scenario through the public API; returns releases published."""
    con.execute(
        "CREATE TABLE src (id INTEGER, s0 INTEGER, s1 INTEGER, s2 VARCHAR, age INTEGER, "
        "edu VARCHAR, sex VARCHAR)"
    )
    folder.mkdir(exist_ok=True)
    (folder / "src_hierarchy_edu.csv").write_text(
        "".join(f"{raw};{group};*\n" for raw, group in EDUCATION.items())
    )
    (folder / "src_hierarchy_sex.csv").write_text("M;*\nF;*\n")
    sqlanon.load_hierarchies(con, "src", str(folder))
    sqlanon.hierarchy_widths(con, "src", "age", [5, 10, 20])
    v = scenario.values
    rows = list(zip(v["s0"], v["s1"], v["s2"], v["age"], v["edu"], v["sex"], strict=True))
    arrived, released = 0, 0
    for arrive, f in scenario.steps:
        if arrive:
            con.executemany(
                "INSERT INTO src VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(i, *rows[i]) for i in range(arrived, arrived + arrive)],
            )
            arrived += arrive
        if not arrived:
            continue
        family = scenario.families[f]
        try:
            if isinstance(family, KeFamily):
                sqlanon.release_ke(
                    con, "src", f"f{f}", key="id", quasi=["age", "sex"],
                    sensitive=family.attribute, k=family.k, e=family.e, policy=family.policy,
                )  # fmt: skip
            else:
                sqlanon.release_lhd(
                    con, "src", f"f{f}", key="id", quasi=list(family.quasi),
                    sensitive=list(family.sensitive), l=family.l, algorithm=family.algorithm,
                    max_suppression=family.max_suppression,
                )  # fmt: skip
        except InfeasibleError:
            continue
        released += 1
        Published(con, "src", "id", "main.src").assert_safe(exact=scenario.n <= 7)
    return released


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    scenarios(
        EITHER,
        records=(5, 25),
        releases=(2, 5),
        n_families=(0, 2),
        required=(ke_families, lhd_families),
    )
)
def test_generated_sequences_through_duckdb(scenario: Scenario) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        con = duckdb.connect(str(Path(tmp) / "gen.duckdb"))
        try:
            sqlanon.install(con)
            _drive(con, Path(tmp) / "hier", scenario)
        finally:
            con.close()
