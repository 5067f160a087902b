"""lHD releases end to end on real DuckDB files: hierarchies in the catalog, the SQL
functions, the comparison constraint across families and versions, audit, errors."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pytest

import sqlanon
from sqlanon.cli import main
from sqlanon.demo import load_adult
from sqlanon.duckdb.session import DuckDBSession
from sqlanon.errors import ConfigError, InfeasibleError
from sqlanon.models.lhd_comparison import comparison_attack, comparison_violations
from sqlanon.release.lhd_release import earlier_release
from sqlanon.state.audit_reads import audit_versions
from sqlanon.state.catalog import releases

HIERARCHIES = Path(sqlanon.__file__).parent / "data" / "hierarchies"

# Seed 002, Table 4 (as in tests/test_lhd_model.py).
EMPLOYEES = [
    (1, "Accounting", "Male", "60636", 10000),  # John
    (2, "Accounting", "Female", "60632", 13000),
    (3, "Programmer", "Male", "60635", 14000),
    (4, "Programmer", "Male", "60639", 15000),
    (5, "Lecturer", "Female", "60632", 16000),
    (6, "Lecturer", "Female", "60632", 17000),
    (7, "Lecturer", "Female", "60632", 18000),
]
EMPLOYEE_HIERARCHIES = {
    "position": "Accounting;*\nProgrammer;*\nLecturer;*\n",
    "gender": "Male;*\nFemale;*\n",
    "zip": "".join(f"{z};6063*;*\n" for z in ["60632", "60635", "60636", "60639"]),
}


def result(con: duckdb.DuckDBPyConnection, sql: str) -> dict | list:
    return json.loads(con.execute(sql).fetchone()[0])


def snapshot(con: duckdb.DuckDBPyConnection) -> tuple:
    tables = con.execute(
        "SELECT table_schema, table_name FROM information_schema.tables ORDER BY ALL"
    ).fetchall()
    counts = [
        con.execute(f"SELECT count(*) FROM sqlanon.{t}").fetchone()  # noqa: S608
        for t in ("releases", "members", "hierarchies", "hierarchy_widths")
    ]
    return tables, counts


def make_employees(con: duckdb.DuckDBPyConnection, folder: Path, table: str = "emp") -> None:
    con.execute(
        f"CREATE TABLE {table} (id INTEGER, position VARCHAR, gender VARCHAR, zip VARCHAR, "
        "salary INTEGER)"
    )
    con.executemany(f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?)", EMPLOYEES)  # noqa: S608
    folder.mkdir(exist_ok=True)
    for attribute, text in EMPLOYEE_HIERARCHIES.items():
        (folder / f"{table}_hierarchy_{attribute}.csv").write_text(text)
    result(con, f"SELECT sqlanon_load_hierarchies('{table}', '{folder}')")


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    db = duckdb.connect(str(tmp_path / "lhd.duckdb"))
    sqlanon.install(db)
    yield db
    db.close()


@pytest.fixture
def emp(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> duckdb.DuckDBPyConnection:
    make_employees(con, tmp_path / "hier")
    return con


def history(con: duckdb.DuckDBPyConnection, refs: list[tuple[str, int]], keys: list[str]) -> list:
    session = DuckDBSession(con)
    try:
        found = {(r.family, r.version): r for r in releases(session)}
        out = []
        for ref in refs:
            r = found[ref]
            shared = r.parameters["sensitive"]
            shared = [shared] if isinstance(shared, str) else shared  # (k,e): one column
            out.append(earlier_release(session, r, shared, np.array(keys, dtype=object)))
        return out
    finally:
        session.close()


def check_l_diverse(con: duckdb.DuckDBPyConnection, table: str, sensitive: str, l: int) -> None:  # noqa: E741
    worst = con.execute(
        f"SELECT min(n) FROM (SELECT count(DISTINCT {sensitive}) AS n FROM {table} "  # noqa: S608
        "GROUP BY class_id)"
    ).fetchone()[0]
    assert worst >= l


def test_adult_two_sub_data_versions(con: duckdb.DuckDBPyConnection) -> None:
    load_adult(con, "adult")
    loaded = result(con, f"SELECT sqlanon_load_hierarchies('adult', '{HIERARCHIES}')")
    assert "marital-status" in loaded["attributes"] and loaded["rows"] > 0
    again = result(con, f"SELECT sqlanon_load_hierarchies('adult', '{HIERARCHIES}')")
    assert again == loaded  # replaces the dataset's rows
    stored = con.execute("SELECT count(*) FROM sqlanon.hierarchies WHERE dataset = 'adult'")
    assert stored.fetchone()[0] == loaded["rows"]
    first = result(
        con,
        "SELECT sqlanon_release_lhd('adult', 'adult_ams', key := 'id', "
        "quasi := ['age', 'marital_status', 'sex'], sensitive := ['capital_loss'], l := 3)",
    )
    assert first["version"] == 1 and first["model"] == "lhd"
    assert first["rows_published"] + first["suppressed"] == 1427
    assert 0 <= first["precision_loss"] <= 1 and first["dm"] > 0
    second = result(
        con,
        "SELECT sqlanon_release_lhd('adult', 'adult_er', key := 'id', "
        "quasi := ['education', 'race', 'sex'], sensitive := ['capital_loss'], l := 3)",
    )
    for table in ("adult_ams_v1", "adult_er_v1"):
        check_l_diverse(con, table, "capital_loss", 3)
    columns = con.execute("DESCRIBE adult_ams").fetchall()
    assert [(c[0], c[1]) for c in columns] == [
        ("age", "VARCHAR"),
        ("marital_status", "VARCHAR"),
        ("sex", "VARCHAR"),
        ("capital_loss", "BIGINT"),
        ("class_id", "INTEGER"),
    ]
    assert con.execute("SELECT count(*) FROM adult_er").fetchone()[0] == second["rows_published"]
    keys = [str(k) for (k,) in con.execute("SELECT id FROM adult ORDER BY id").fetchall()]
    old, new = history(con, [("adult_ams", 1), ("adult_er", 1)], keys)
    assert comparison_violations(new, [old], 3) == []
    assert comparison_attack([old, new], 3).exposed_records.size == 0
    row = con.execute(
        "SELECT CAST(parameters AS VARCHAR), groups, CAST(metrics AS VARCHAR) "
        "FROM sqlanon.releases WHERE family = 'adult_er'"
    ).fetchone()
    parameters = json.loads(row[0])
    assert parameters["source"].endswith(".adult") and parameters["l"] == 3
    assert parameters["quasi"] == ["education", "race", "sex"]
    assert row[1] == second["groups"] and "precision_loss" in json.loads(row[2])
    for family in ("adult_ams", "adult_er"):
        # Either family's audit is its domain's: both releases, in order.
        audit = result(con, f"SELECT sqlanon_audit('{family}')")
        assert [(a["family"], a["version"], a["seq"]) for a in audit] == [
            ("adult_ams", 1, 1),
            ("adult_er", 1, 2),
        ]
        for a in audit:
            assert a["model"] == "lhd" and a["domain"] == parameters["source"]
            assert a["subtraction_complete"]
            for count in ("exposed", "newly_exposed", "by_cell", "by_subtraction"):
                assert a[count] == 0
            assert a["by_comparison"] == 0


def test_john_is_safe_with_sqlanon(emp: duckdb.DuckDBPyConnection) -> None:
    sqlanon.release_lhd(
        emp, "emp", "emp_pg", key="id", quasi=["position", "gender"], sensitive=["salary"],
        l=2, algorithm="greedy", max_suppression=0.0, )  # fmt: skip
    john = emp.execute("SELECT position, gender FROM emp_pg WHERE salary = 10000").fetchone()
    assert john == ("Accounting", "*")
    sqlanon.release_lhd(
        emp, "emp", "emp_gz", key="id", quasi=["gender", "zip"], sensitive=["salary"],
        l=2, algorithm="greedy", max_suppression=0.0, )  # fmt: skip
    assert sqlanon.audit(emp, "emp_gz")[0]["exposed"] == 0
    keys = [str(r[0]) for r in EMPLOYEES]
    attack = comparison_attack(history(emp, [("emp_pg", 1), ("emp_gz", 1)], keys), 2)
    assert attack.exposed_records.size == 0
    assert len(attack.candidates(0, "salary")) >= 2


def test_john_is_exposed_by_independent_releases(
    emp: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    make_employees(emp, tmp_path / "hier2", table="emp_copy")
    common = {"key": "id", "sensitive": ["salary"], "l": 2, "max_suppression": 0.0}
    sqlanon.release_lhd(emp, "emp", "emp_pg", quasi=["position", "gender"], **common)
    # Declared other people (domain := 'copy'): no constraint between the two releases.
    sqlanon.release_lhd(
        emp, "emp_copy", "copy_gz", quasi=["gender", "zip"], domain="copy", **common
    )
    assert sqlanon.audit(emp, "copy_gz")[0]["exposed"] == 0  # alone, it looks safe
    session = DuckDBSession(emp)
    try:
        rows = audit_versions(session, [("emp_pg", 1), ("copy_gz", 1)], records=True)
    finally:
        session.close()
    assert rows[0]["exposed"] == 0 and rows[1]["exposed"] >= 1
    assert "1" in rows[1]["records"]["by_comparison"]  # John (key 1): {10000}
    keys = [str(r[0]) for r in EMPLOYEES]
    attack = comparison_attack(history(emp, [("emp_pg", 1), ("copy_gz", 1)], keys), 2)
    assert attack.candidates(0, "salary") == frozenset({10000})


def test_a_copy_of_the_source_joins_its_domain(
    emp: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """Releasing a copy (same keys, same sensitive column) does not dodge the rule: it
    inherits the domain of the table it copies, and the two releases compose."""
    make_employees(emp, tmp_path / "hier2", table="emp_copy")
    common = {"key": "id", "sensitive": ["salary"], "l": 2, "max_suppression": 0.5}
    sqlanon.release_lhd(emp, "emp", "emp_pg", quasi=["position", "gender"], **common)
    sqlanon.release_lhd(emp, "emp_copy", "copy_gz", quasi=["gender", "zip"], **common)
    domains = emp.execute(
        "SELECT family, domain, seq FROM sqlanon.releases ORDER BY seq"
    ).fetchall()
    assert domains == [("emp_pg", "main.emp", 1), ("copy_gz", "main.emp", 2)]
    keys = [str(r[0]) for r in EMPLOYEES]
    attack = comparison_attack(history(emp, [("emp_pg", 1), ("copy_gz", 1)], keys), 2)
    assert attack.exposed_records.size == 0
    audit = sqlanon.audit(emp, "emp_pg")  # the domain's: both releases
    assert [(a["family"], a["exposed"]) for a in audit] == [("emp_pg", 0), ("copy_gz", 0)]
    with pytest.raises(ConfigError, match="a source belongs to one domain"):
        sqlanon.release_lhd(emp, "emp", "other", quasi=["zip"], domain="elsewhere", **common)


def test_appends_make_version_2_under_the_constraint(emp: duckdb.DuckDBPyConnection) -> None:
    release = (
        "SELECT sqlanon_release_lhd('emp', 'emp_pg', key := 'id', quasi := ['position', "
        "'gender'], sensitive := ['salary'], l := 2, max_suppression := 0.5)"
    )
    result(emp, release)
    emp.executemany(
        "INSERT INTO emp VALUES (?, ?, ?, ?, ?)",
        [(8, "Programmer", "Female", "60635", 19000), (9, "Accounting", "Male", "60639", 20000)],
    )
    second = result(emp, release)
    assert second["version"] == 2 and second["table"] == "emp_pg_v2"
    assert second["rows_published"] + second["suppressed"] == 9
    assert emp.execute("SELECT count(*) FROM emp_pg").fetchone()[0] == second["rows_published"]
    keys = [str(i) for i in range(1, 10)]
    v1, v2 = history(emp, [("emp_pg", 1), ("emp_pg", 2)], keys)
    assert comparison_violations(v2, [v1], 2) == []
    assert [r["exposed"] for r in sqlanon.audit(emp, "emp_pg")] == [0, 0]
    states = emp.execute(
        "SELECT version, status, count(*) FROM sqlanon.members GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert sum(n for v, _, n in states if v == 2) == 9


def test_deleted_or_changed_published_rows_are_released_live(
    emp: duckdb.DuckDBPyConnection,
) -> None:
    args = {"key": "id", "quasi": ["position", "gender"], "sensitive": ["salary"], "l": 2,
            "max_suppression": 0.5}  # fmt: skip
    first = sqlanon.release_lhd(emp, "emp", "emp_pg", **args)
    assert sqlanon.release_lhd(emp, "emp", "emp_pg", **args)["unchanged"] is True
    emp.execute("UPDATE emp SET salary = 11000 WHERE id = 1")
    emp.execute("DELETE FROM emp WHERE id = 2")
    second = sqlanon.release_lhd(emp, "emp", "emp_pg", **args)
    assert (second["version"], second["deleted"], second["value_changed"]) == (2, 1, 1)
    published = emp.execute("SELECT count(*), sum(class_ghosts) FROM emp_pg_v2").fetchone()
    # two ghosts (the deleted record and the old incarnation) when their cells are
    # published, each class telling only its number of ghosts
    ghosts = emp.execute(
        "SELECT sum(g) FROM (SELECT DISTINCT class_id, class_ghosts AS g FROM emp_pg_v2)"
    ).fetchone()[0]
    assert ghosts == second["ghosts"] and published[0] == second["rows_published"] + ghosts
    assert first["rows_published"] >= second["rows_published"]
    assert emp.execute(
        "SELECT count(*) FROM sqlanon.members WHERE record_key = '2'"
    ).fetchone() == (0,)


def test_widths_hierarchy_for_a_numeric_column(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE p AS SELECT i AS id, 20 + i % 40 AS age, i % 7 AS s FROM range(200) t(i)"
    )
    with pytest.raises(ConfigError, match="sqlanon_hierarchy_widths"):
        sqlanon.release_lhd(con, "p", "p_l", key="id", quasi=["age"], sensitive=["s"], l=3)
    stored = result(con, "SELECT sqlanon_hierarchy_widths('p', 'age', [5, 10, 20])")
    assert stored["widths"] == [5.0, 10.0, 20.0]
    summary = sqlanon.release_lhd(con, "p", "p_l", key="id", quasi=["age"], sensitive=["s"], l=3)
    assert summary["rows_published"] + summary["suppressed"] == 200
    check_l_diverse(con, "p_l", "s", 3)
    labels = {r[0] for r in con.execute("SELECT DISTINCT age FROM p_l").fetchall()}
    assert all(a.isdigit() or a.startswith("[") or a == "*" for a in labels)


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"quasi": ["position", "nope"]}, ConfigError, "nope"),
        ({"sensitive": ["nope"]}, ConfigError, "nope"),
        ({"l": 1}, ConfigError, "l must be"),
        ({"sensitive": ["zip"], "l": 5}, InfeasibleError, 'needs 5 distinct values of "zip"'),
        ({"quasi": ["position", "salary"]}, ConfigError, "more than one role"),
        ({"quasi": ["position", "salary"], "sensitive": ["zip"]}, ConfigError, "widths"),
        ({"quasi": ["position", "id"]}, ConfigError, "more than one role"),
        ({"algorithm": "best"}, ConfigError, "algorithm"),
        ({"max_suppression": 2.0}, ConfigError, "max_suppression"),
        ({"sensitive": []}, ConfigError, "sensitive"),
        ({"source": "missing"}, ConfigError, "does not exist"),
        ({"source": "empty"}, InfeasibleError, "empty"),
        ({"source": "uncovered"}, ConfigError, "does not cover"),
        ({"source": "plain"}, ConfigError, "sqlanon_load_hierarchies"),
    ],
)
def test_bad_input_leaves_the_database_unchanged(
    emp: duckdb.DuckDBPyConnection, tmp_path: Path, changes: dict, error: type, message: str
) -> None:
    emp.execute("CREATE TABLE empty AS SELECT * FROM emp LIMIT 0")
    emp.execute("CREATE TABLE plain AS SELECT * FROM emp")
    emp.execute("CREATE TABLE uncovered AS SELECT * FROM emp")
    emp.execute("UPDATE uncovered SET position = 'Dean' WHERE id = 7")
    for table in ("empty", "uncovered"):
        for attribute, text in EMPLOYEE_HIERARCHIES.items():
            (tmp_path / f"{table}_hierarchy_{attribute}.csv").write_text(text)
        sqlanon.load_hierarchies(emp, table, str(tmp_path))
    args = {
        "source": "emp",
        "key": "id",
        "quasi": ["position", "gender"],
        "sensitive": ["salary"],
        "l": 2,
        **changes,
    }
    source = args.pop("source")
    before = snapshot(emp)
    with pytest.raises(error, match=message):
        sqlanon.release_lhd(emp, source, "fam", **args)
    assert snapshot(emp) == before


def test_inconsistent_hierarchy_is_refused(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    (tmp_path / "t_hierarchy_city.csv").write_text(
        "Paris;France;*\nLyon;Spain;*\nNice;France;Europe\n"
    )
    before = snapshot(con)
    with pytest.raises(duckdb.Error, match="must be"):
        con.execute(f"SELECT sqlanon_load_hierarchies('t', '{tmp_path}')")
    with pytest.raises(ConfigError, match="does not exist, cannot be read"):
        sqlanon.load_hierarchies(con, "t", str(tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match="no u_hierarchy_"):
        sqlanon.load_hierarchies(con, "u", str(tmp_path))
    assert snapshot(con) == before


@pytest.mark.parametrize("dataset", ["*", "**/tenantB", "tenant?", "../shared/tenantB"])
def test_load_hierarchies_reads_no_other_tenants_files(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, dataset: str
) -> None:
    """Issue 23, item 4: the dataset once was a glob pattern over the folder."""
    shared = tmp_path / "shared"
    (shared / "nested").mkdir(parents=True)
    (shared / "tenantA_hierarchy_sex.csv").write_text("F;*\nM;*\n")
    (shared / "tenantB_hierarchy_sex.csv").write_text("f;*\nm;*\n")
    (shared / "nested" / "tenantB_hierarchy_age.csv").write_text("1;*\n")
    before = snapshot(con)
    with pytest.raises(ConfigError, match="letters, digits, _ and -"):
        sqlanon.load_hierarchies(con, dataset, str(shared))
    with pytest.raises(duckdb.Error, match="letters, digits, _ and -"):
        con.execute("SELECT sqlanon_load_hierarchies(?, ?)", [dataset, str(shared)])
    assert snapshot(con) == before
    assert sqlanon.load_hierarchies(con, "tenantA", str(shared))["attributes"] == ["sex"]


def test_cli_load_hierarchies_and_release_lhd(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    db = str(tmp_path / "cli.duckdb")
    con = duckdb.connect(db)
    sqlanon.install(con)
    con.execute(
        "CREATE TABLE emp (id INTEGER, position VARCHAR, gender VARCHAR, zip VARCHAR, "
        "salary INTEGER)"
    )
    con.executemany("INSERT INTO emp VALUES (?, ?, ?, ?, ?)", EMPLOYEES)
    con.close()
    for attribute, text in EMPLOYEE_HIERARCHIES.items():
        (tmp_path / f"emp_hierarchy_{attribute}.csv").write_text(text)
    assert main(["load-hierarchies", "--db", db, "emp", str(tmp_path)]) == 0
    assert main(["release-lhd", "--db", db, "emp", "emp_pg", "--key", "id", "--quasi",
                 "position", "gender", "--sensitive", "salary", "--l", "2"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert '"attributes"' in out and '"model": "lhd"' in out and '"version": 1' in out
    assert main(["release-lhd", "--db", db, "emp", "bad", "--key", "id", "--quasi", "zip",
                 "--sensitive", "salary", "--l", "1"]) == 2  # fmt: skip
    assert "l must be" in capsys.readouterr().err


def test_ke_release_of_the_source_constrains_lhd(emp: duckdb.DuckDBPyConnection) -> None:
    sqlanon.release_ke(emp, "emp", "emp_ke", key="id", sensitive="salary", quasi=["zip"], k=2, e=0)
    sqlanon.release_lhd(
        emp, "emp", "emp_lhd", key="id", quasi=["position", "gender"],
        sensitive=["salary", "zip"], l=2, max_suppression=0.5, )  # fmt: skip
    check_l_diverse(emp, "emp_lhd", "salary", 2)
    check_l_diverse(emp, "emp_lhd", "zip", 2)
    keys = [str(r[0]) for r in EMPLOYEES]
    ke_release, lhd_release = history(emp, [("emp_ke", 1), ("emp_lhd", 1)], keys)
    assert set(ke_release.class_values) == {"salary"}
    assert comparison_violations(lhd_release, [ke_release], 2) == []
    for family in ("emp_ke", "emp_lhd"):  # one domain: either audit holds both
        audit = sqlanon.audit(emp, family)
        assert [(r["family"], r["exposed"]) for r in audit] == [("emp_ke", 0), ("emp_lhd", 0)]


def test_sql_errors_name_the_problem(emp: duckdb.DuckDBPyConnection) -> None:
    before = snapshot(emp)
    with pytest.raises(duckdb.Error, match="sensitive must be a non-empty list"):
        emp.execute("SELECT sqlanon_release_lhd('emp', 'f', key := 'id', quasi := ['zip'])")
    with pytest.raises(duckdb.Error, match="l must be"):
        emp.execute(
            "SELECT sqlanon_release_lhd('emp', 'f', key := 'id', quasi := ['zip'], "
            "sensitive := ['salary'], l := 1)"
        )
    assert snapshot(emp) == before
