"""The analyst hand-off file (issue 25): ``sqlanon.export`` writes a family's or a
domain's releases with nothing private, and the export answers as the owner's database.

The source makes private values recognizable: keys are ``key-<md5>`` strings, the
sensitive column ``loss`` is Adult's capital loss times 1000 plus a record's own offset,
so a value held back or suppressed is (almost always) unlike any published one."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

import sqlanon
from sqlanon import cli
from sqlanon.demo import load_adult
from sqlanon.state import exports

KE = dict(key="pid", sensitive="loss", quasi=["age", "sex", "education"], k=5, e=20_000)
# After the changes, the chain rule leaves out whole (k,e) cells holding a changed record
# (about 22% here): these tests are about the export, so the release allows it.
LHD = dict(
    key="pid", quasi=["marital_status", "race"], sensitive=["loss", "occupation"], l=3,
    max_suppression=0.4,
)  # fmt: skip
QUERIES = [
    "SELECT sex, COUNT(*), SUM(loss) AS s, AVG(loss) FROM people_ke WHERE age BETWEEN 30 AND 50"
    " GROUP BY sex",
    "SELECT COUNT(*), SUM(loss), MIN(loss), MAX(loss) FROM people_ke_v1 WHERE education IN"
    " ('Masters', 'Bachelors')",
    "SELECT race, COUNT(*), SUM(loss) FROM people_lhd WHERE marital_status = 'Never-married'"
    " GROUP BY race",
    "SELECT COUNT(*), MAX(loss) FROM people_lhd_v1 WHERE race <> 'White'",
]
# Columns of sums (bounds tables): a sum of published values may equal a private value.
SUMS = {"prior_sum", "total"}


def owner_db(path: Path) -> duckdb.DuckDBPyConnection:
    """Two versions of each model over one source, with inserts, deletes and changed
    values between them (ghosts), and hierarchies for the lHD columns."""
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    load_adult(con, "everyone")
    con.execute(
        "CREATE TABLE everyone_private AS SELECT 'key-' || md5(CAST(id AS VARCHAR)) AS pid, id,"
        " age, sex, education, marital_status, race, occupation,"
        " capital_loss * 1000 + id % 991 AS loss FROM everyone"
    )
    con.execute(
        "CREATE TABLE people AS SELECT * EXCLUDE (id) FROM everyone_private WHERE id % 2 = 0"
    )
    hierarchies = path.parent / "hierarchies"  # the dataset is the source's name: people
    hierarchies.mkdir()
    for file in (Path(sqlanon.__file__).parent / "data" / "hierarchies").glob("adult_*.csv"):
        shutil.copy(file, hierarchies / file.name.replace("adult_", "people_", 1))
    sqlanon.load_hierarchies(con, "people", str(hierarchies))
    release_both(con)
    con.execute("INSERT INTO people SELECT * EXCLUDE (id) FROM everyone_private WHERE id % 2 = 1")
    con.execute(
        "DELETE FROM people WHERE pid IN (SELECT pid FROM everyone_private WHERE id % 13 = 0)"
    )
    con.execute("UPDATE people SET loss = loss + 1 WHERE pid IN "
                "(SELECT pid FROM everyone_private WHERE id % 29 = 0)")  # fmt: skip
    release_both(con)
    return con


def release_both(con: duckdb.DuckDBPyConnection) -> None:
    sqlanon.release_ke(con, "people", "people_ke", **KE)  # type: ignore[arg-type]
    sqlanon.release_lhd(con, "people", "people_lhd", **LHD)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def owner(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    folder = tmp_path_factory.mktemp("owner")
    con = owner_db(folder / "clinic.duckdb")
    yield con
    con.close()


def sorted_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        rows, key=lambda r: repr(sorted((k, v) for k, v in r.items() if not k.endswith("_est")))
    )


def assert_same_answers(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    """Bounds equal exactly; estimates up to the order DuckDB sums floats in."""
    assert len(a) == len(b)
    for x, y in zip(sorted_rows(a), sorted_rows(b), strict=True):
        assert x.keys() == y.keys()
        for k in x:
            if k.endswith("_est") and isinstance(x[k], float):
                assert math.isclose(x[k], y[k], rel_tol=1e-9), k
            else:
                assert x[k] == y[k], k


def relations(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str]]:
    rows = con.execute("SELECT table_schema, table_name FROM information_schema.tables").fetchall()
    return {(str(s), str(t)) for s, t in rows}


def cells(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str, str]]:
    """``(schema, table, column, value as text)`` of every cell of every table and view."""
    found = []
    for schema, table in sorted(relations(con)):
        columns = [r[0] for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = $1"
            " AND table_name = $2", [schema, table]).fetchall()]  # fmt: skip
        for column in columns:
            sql = f'SELECT DISTINCT CAST("{column}" AS VARCHAR) FROM "{schema}"."{table}"'  # noqa: S608
            for (value,) in con.execute(sql).fetchall():
                if value is not None:
                    found.append((schema, table, column, str(value)))
    return found


def private_values(owner: duckdb.DuckDBPyConnection) -> tuple[set[str], set[str], set[str]]:
    """Strings no cell may contain (keys, ghost ids), numbers no cell may be (values no
    release published, fingerprints), raw lHD quasi values no release published (which
    only the public hierarchies may show)."""
    q = owner.execute
    strings = {r[0] for r in q("SELECT pid FROM everyone_private").fetchall()}
    strings |= {r[0] for r in q("SELECT record_key FROM sqlanon.members").fetchall()}
    strings |= {
        r[0]
        for r in q(
            "SELECT earlier FROM sqlanon.links UNION SELECT later FROM sqlanon.links"
        ).fetchall()
    }
    published: set[str] = set()
    tables = [r[0] for r in q("SELECT table_name FROM sqlanon.releases").fetchall()]
    for table in tables:
        published |= {str(r[0]) for r in q(f'SELECT DISTINCT loss FROM "{table}"').fetchall()}  # noqa: S608
    every = {
        str(r[0])
        for r in q("SELECT loss FROM everyone_private UNION SELECT loss FROM people").fetchall()
    }
    numbers = every - published
    numbers |= {
        str(r[0])
        for r in q(
            "SELECT row_hash FROM sqlanon.members UNION SELECT value_hash FROM sqlanon.members"
        ).fetchall()
        if r[0] is not None and r[0] > 10**6
    }
    raw: set[str] = set()
    for column in LHD["quasi"]:
        labels = set()
        for table in tables:
            if table.startswith("people_lhd"):
                labels |= {
                    str(r[0]) for r in q(f'SELECT DISTINCT "{column}" FROM "{table}"').fetchall()
                }  # noqa: S608
        raw |= {
            str(r[0]) for r in q(f'SELECT DISTINCT "{column}" FROM everyone_private').fetchall()
        } - labels  # noqa: S608
    assert strings and numbers and raw  # the scenario has each kind of private value
    return strings, numbers, raw


def test_the_export_holds_nothing_private(owner: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    path = tmp_path / "people.duckdb"
    sqlanon.export(owner, "main.people", path)  # the domain: both families
    strings, numbers, raw = private_values(owner)
    with duckdb.connect(str(path), read_only=True) as con:
        found = cells(con)
    assert found
    for schema, table, column, value in found:
        assert not any(s in value for s in strings), (schema, table, column, value)
        if column not in SUMS:
            assert value not in numbers, (schema, table, column, value)
        if (schema, table) != ("sqlanon", "hierarchies"):  # public: README "Hierarchies"
            assert value not in raw, (schema, table, column, value)
    params = " ".join(v for s, t, c, v in found if (t, c) == ("releases", "parameters"))
    assert '"pid"' not in params and "domain_attributes" not in params


def test_every_table_is_allow_listed(owner: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    path = tmp_path / "people.duckdb"
    sqlanon.export(owner, "main.people", path)
    tables = [f"people_{m}_v{v}" for m in ("ke", "lhd") for v in (1, 2)]
    expected = exports.allowed_relations(
        tables, [t for t in tables if "_ke_" in t], ["people_ke", "people_lhd"]
    )
    with duckdb.connect(str(path), read_only=True) as con:
        assert relations(con) == expected
        catalog = con.execute("SELECT * FROM sqlanon.releases").fetchall()
        columns = [d[0] for d in con.execute("SELECT * FROM sqlanon.releases").description]
    assert tuple(columns) == exports.RELEASE_COLUMNS
    assert len(catalog) == 4


@pytest.mark.parametrize("fmt", ["duckdb", "parquet"])
def test_the_export_answers_as_the_owner(
    owner: duckdb.DuckDBPyConnection, tmp_path: Path, fmt: str
) -> None:
    path = tmp_path / f"people.{fmt}"
    sqlanon.export(owner, "main.people", path, format=fmt)
    if fmt == "duckdb":
        con = duckdb.connect(str(path), read_only=True)  # what the analyst opens
        assert sqlanon.install(con) == []  # no migration: nothing written
    else:
        con = duckdb.connect()
        assert sqlanon.attach_export(con, path) == ["people_ke", "people_lhd"]
    with con:
        for sql in QUERIES:
            assert_same_answers(sqlanon.interval(con, sql), sqlanon.interval(owner, sql))
        (text,) = con.execute("SELECT sqlanon_interval($1)", [QUERIES[0]]).fetchone()
        assert_same_answers(
            con.execute(text).fetchall() and sqlanon.interval(con, QUERIES[0]),
            sqlanon.interval(owner, QUERIES[0]),
        )
        with pytest.raises(sqlanon.UnsupportedQueryError):
            sqlanon.interval(con, "SELECT COUNT(*) FROM people")  # no source here anyway


@pytest.mark.parametrize("fmt", ["duckdb", "parquet"])
def test_exporting_again_adds_versions(tmp_path: Path, fmt: str) -> None:
    con = duckdb.connect(str(tmp_path / "owner.duckdb"))
    sqlanon.install(con)
    load_adult(con, "people")
    con.execute("DELETE FROM people WHERE id % 3 = 0")
    sqlanon.release_ke(
        con, "people", "fam", key="id", sensitive="capital_loss", quasi=["age"], k=4, e=50
    )
    path = tmp_path / "fam.export"
    assert sqlanon.export(con, "fam", path, format=fmt)["added"] == ["fam_v1", "fam_v1_bounds"]
    con.execute("INSERT INTO people SELECT * FROM read_csv($1, header = true) WHERE id % 3 = 0",
                [str(Path(sqlanon.__file__).parent / "data" / "adult_capital_loss.csv")])  # fmt: skip
    sqlanon.release_ke(
        con, "people", "fam", key="id", sensitive="capital_loss", quasi=["age"], k=4, e=50
    )
    con.execute("DROP VIEW fam_v1")  # the owner stops serving v1: the export keeps it
    summary = sqlanon.export(con, "fam", path, format=fmt)
    assert summary["added"] == ["fam_v2", "fam_v2_bounds"]
    if fmt == "duckdb":
        analyst = duckdb.connect(str(path), read_only=True)
        sqlanon.install(analyst)
    else:
        analyst = duckdb.connect()
        sqlanon.attach_export(analyst, path)
    versions = analyst.execute("SELECT version FROM sqlanon.releases ORDER BY version").fetchall()
    assert versions == [(1,), (2,)]
    sql = "SELECT COUNT(*), SUM(capital_loss) FROM fam"
    assert_same_answers(sqlanon.interval(analyst, sql), sqlanon.interval(con, sql))
    assert sqlanon.interval(analyst, "SELECT COUNT(*) FROM fam_v1")[0]["count_star"] > 0


def test_bad_input_writes_nothing(owner: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    path = tmp_path / "out.duckdb"
    for name in ["nope", "people_ke'; DROP TABLE people; --", '"people_ke"', ""]:
        with pytest.raises(sqlanon.ConfigError, match="no release family or domain|export takes"):
            sqlanon.export(owner, name, path)
    assert owner.execute("SELECT count(*) FROM people").fetchone()[0] > 0
    with pytest.raises(sqlanon.ConfigError, match="format"):
        sqlanon.export(owner, "people_ke", path, format="csv")
    assert list(tmp_path.iterdir()) == []
    other = tmp_path / "notes.txt"
    other.write_text("mine")
    with pytest.raises(sqlanon.ExportError, match="exists and is not a sqlanon duckdb export"):
        sqlanon.export(owner, "people_ke", other)
    assert other.read_text() == "mine"
    a_db = tmp_path / "other.duckdb"
    duckdb.connect(str(a_db)).close()
    with pytest.raises(sqlanon.ExportError, match="is not a sqlanon"):
        sqlanon.export(owner, "people_ke", a_db)
    (tmp_path / "folder").mkdir()
    with pytest.raises(sqlanon.ExportError, match="is not a sqlanon parquet export"):
        sqlanon.export(owner, "people_ke", tmp_path / "folder", format="parquet")
    with pytest.raises(sqlanon.ExportError, match="does not exist"):
        sqlanon.export(owner, "people_ke", tmp_path / "missing" / "x.duckdb")
    with pytest.raises(sqlanon.ExportError, match="not a sqlanon Parquet export"):
        sqlanon.attach_export(duckdb.connect(), tmp_path / "folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "notes.txt", "other.duckdb"]


@pytest.mark.parametrize("fmt", ["duckdb", "parquet"])
def test_an_error_midway_leaves_the_export_as_it_was(
    owner: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    path = tmp_path / "out"
    sqlanon.export(owner, "people_ke", path, format=fmt)
    before = sorted(p.name for p in tmp_path.rglob("*"))

    def broken(*_args: Any) -> Any:
        raise RuntimeError("disk full")

    monkeypatch.setattr(exports, "hierarchy_rows", broken)
    with pytest.raises(sqlanon.InternalError):
        sqlanon.export(owner, "main.people", path, format=fmt)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    monkeypatch.undo()
    if fmt == "parquet":
        con = duckdb.connect()
        sqlanon.attach_export(con, path)
    else:
        con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT DISTINCT family FROM sqlanon.releases").fetchall() == [
        ("people_ke",)
    ]


def test_sql_function_and_cli(
    owner: duckdb.DuckDBPyConnection, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ke.duckdb"
    (summary,) = owner.execute("SELECT sqlanon_export('people_ke', $1)", [str(path)]).fetchone()
    assert '"added": ["people_ke_v1"' in summary
    assert cli.main(["export", "--db", str(path), "people_ke", str(tmp_path / "x")]) == 2
    assert "is an analyst export" in capsys.readouterr().err
    assert cli.main(["export", "--db", str(path), "nope", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()
