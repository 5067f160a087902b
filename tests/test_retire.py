"""Retention (issue 27): ``sqlanon.retire(con, family, keep=N)`` on real DuckDB files.

Over random live sequences of a (k,e) and an lHD family (the generators of
tests/test_shared_rows.py), retiring with a random ``keep`` after a random release:

- every served version reads exactly (as a multiset) as before, the retired ones are
  gone (views and bounds views), the history and bounds tables hold no row that no
  served version needs (checked against the views' contents, not the planner's code);
- the private state (members, cells, kept values, catalog rows) is untouched;
- later releases publish what they publish without the retire (the same groups as
  content, the same records, the same figures) and the same group ids.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.errors import ConfigError, UnsupportedQueryError
from tests.test_shared_rows import KE, LHD, _bounds_agree, _change, _groups, _members, _source

PRIVATE = ("member_spans", "cell_spans", "state_versions", "kept_values", "links", "releases")


def _relations(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str]]:
    return {
        (str(s), str(t))
        for s, t in con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
        ).fetchall()
    }


_VERSION = re.compile(r"^([a-z]_fam)_v([0-9]+)(_bounds)?$")


def _served(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, int, str], Counter[Any]]:
    """Every version view and bounds view there is, by (family, version, name), as a
    multiset of rows."""
    found = {}
    for schema, name in _relations(con):
        matched = _VERSION.match(name)
        if matched:
            rows = con.execute(f'SELECT * FROM "{schema}"."{name}"').fetchall()
            found[(matched.group(1), int(matched.group(2)), name)] = Counter(rows)
    return found


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {name for _s, name in _relations(con)}


def _private(con: duckdb.DuckDBPyConnection) -> dict[str, Counter[tuple[Any, ...]]]:
    return {
        t: Counter(con.execute(f"SELECT * EXCLUDE (created_at) FROM sqlanon.{t}").fetchall())
        if t == "releases"
        else Counter(con.execute(f"SELECT * FROM sqlanon.{t}").fetchall())
        for t in PRIVATE
    }


def _needless_rows(con: duckdb.DuckDBPyConnection, family: str, oldest: int) -> int:
    """History and bounds rows last shown before the oldest served version."""
    n = con.execute(
        f'SELECT count(*) FROM sqlanon."{family}__history" WHERE sqlanon_last < $1', [oldest]
    ).fetchone()[0]
    if family == "k_fam":
        n += con.execute(
            f'SELECT count(*) FROM sqlanon."{family}__bounds" WHERE sqlanon_last < $1', [oldest]
        ).fetchone()[0]
    return int(n)


def _run(
    path: Path,
    plan: list[tuple[int, ...]],
    seed: int,
    retire_at: int | None,
    keep: int,
    *,
    lhd: bool,
) -> duckdb.DuckDBPyConnection:
    """The sequence ``plan`` released by a (k,e) family (and an lHD one after it, in its
    domain); after release ``retire_at`` (0: the first; None: never), the families
    retire all but their newest ``keep``."""
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    _source(con, 40, seed)
    rng = np.random.default_rng(seed + 1)
    start = 1000
    for i in range(len(plan) + 1):
        if i:
            start = _change(con, rng, plan[i - 1], start)
        sqlanon.release_ke(con, "src", "k_fam", **KE)
        if lhd:
            sqlanon.release_lhd(con, "src", "l_fam", **LHD)
        if i == retire_at:
            _retire_and_check(con, keep, ("k_fam", "l_fam") if lhd else ("k_fam",))
    return con


def _retire_and_check(con: duckdb.DuckDBPyConnection, keep: int, families: tuple[str, ...]) -> None:
    before, private = _served(con), _private(con)
    newest = {}
    for family in families:
        newest[family] = con.execute(
            "SELECT max(version) FROM sqlanon.releases WHERE family = $1", [family]
        ).fetchone()[0]
        oldest = max(newest[family] - keep + 1, 1)
        done = sqlanon.retire(con, family, keep)
        assert done["served"] == list(range(oldest, newest[family] + 1))
        assert done["retired"] == list(range(1, oldest))
        assert _needless_rows(con, family, oldest) == 0
        again = sqlanon.retire(con, family, keep)  # idempotent
        assert again["retired"] == [] and again["history_rows_deleted"] == 0
    after = _served(con)
    for (family, version, name), rows in before.items():
        if version > newest[family] - keep:
            assert after[(family, version, name)] == rows, name  # served: reads as it did
        else:
            assert (family, version, name) not in after, name  # retired: gone
    assert _private(con) == private
    _bounds_agree_served(con)


def _bounds_agree_served(con: duckdb.DuckDBPyConnection) -> None:
    """Every served (k,e) version's bounds name its groups as its rows do."""
    served = [t for _schema, t in _relations(con) if t.startswith("k_fam_v")]
    _bounds_agree(con, [t for t in served if not t.endswith("_bounds")])


steps = st.lists(st.tuples(*(st.integers(0, 6) for _ in range(4))), min_size=2, max_size=4)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking: minutes per try
)
@given(plan=steps, seed=st.integers(0, 2**16), data=st.data())
def test_retiring_keeps_served_versions_and_later_releases_as_they_would_be(
    tmp_path_factory: pytest.TempPathFactory,
    plan: list[tuple[int, ...]],
    seed: int,
    data: st.DataObject,
) -> None:
    retire_at = data.draw(st.integers(0, len(plan) - 1), label="retire after release")
    keep = data.draw(st.integers(1, retire_at + 2), label="keep")
    folder = tmp_path_factory.mktemp("retire")
    both = _run(folder / "both.duckdb", plan, seed, retire_at, keep, lhd=True)
    both.close()
    # (k,e) alone plans the same release from the same input (test_shared_rows says why
    # not with an lHD family in its domain): with or without the retire
    retired = _run(folder / "retired.duckdb", plan, seed, retire_at, keep, lhd=False)
    plain = _run(folder / "plain.duckdb", plan, seed, None, keep, lhd=False)
    releases = (
        "SELECT family, version, rows_published, held_back, suppressed, groups"
        " FROM sqlanon.releases WHERE family = 'k_fam' ORDER BY 1, 2"
    )
    assert retired.execute(releases).fetchall() == plain.execute(releases).fetchall()
    served = [name for (family, _v, name) in _served(retired) if family == "k_fam"]
    assert served and all(name.endswith("_bounds") or name in _tables(plain) for name in served)
    for table in served:  # before and after the retire, the same as without it
        if not table.endswith("_bounds"):
            assert _groups(retired, table, "group_id") == _groups(plain, table, "group_id")
        ids = f'SELECT DISTINCT group_id FROM {"sqlanon." if "bounds" in table else ""}"{table}" ORDER BY 1'
        assert retired.execute(ids).fetchall() == plain.execute(ids).fetchall(), table
    assert _members(retired, "k_fam") == _members(plain, "k_fam")
    assert sqlanon.audit(retired, "k_fam") == sqlanon.audit(plain, "k_fam")


@pytest.fixture
def released(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(tmp_path / "f.duckdb"))
    sqlanon.install(con)
    _source(con, 40, 7)
    rng = np.random.default_rng(8)
    start = 1000
    for step in [(0, 0, 0, 0), (3, 2, 3, 2), (2, 1, 2, 1)]:
        start = _change(con, rng, step, start)
        sqlanon.release_ke(con, "src", "k_fam", **KE)
    return con


def test_bad_inputs_write_nothing(released: duckdb.DuckDBPyConnection) -> None:
    before, relations = _private(released), _relations(released)
    history = released.execute("SELECT count(*) FROM sqlanon.k_fam__history").fetchone()
    for keep in (0, -1, None, 1.5, "2", True):
        with pytest.raises(ConfigError, match="keep must be a whole number"):
            sqlanon.retire(released, "k_fam", keep)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="no release family 'nope'; known families: k_fam"):
        sqlanon.retire(released, "nope", 1)
    for call in ("sqlanon_retire('k_fam')", "sqlanon_retire('k_fam', keep := 0)"):
        with pytest.raises(duckdb.Error, match="keep must be a whole number"):
            released.execute(f"SELECT {call}")
    assert _private(released) == before and _relations(released) == relations
    assert released.execute("SELECT count(*) FROM sqlanon.k_fam__history").fetchone() == history
    assert released.execute("SELECT count(*) FROM sqlanon.retirements").fetchone() == (0,)


def test_a_retired_version_is_refused_by_name_and_the_rest_answers(
    released: duckdb.DuckDBPyConnection,
) -> None:
    served = released.execute("SELECT * FROM k_fam").fetchall()
    answer = sqlanon.interval(released, "SELECT SUM(s) AS t FROM k_fam_v3")
    done = released.execute("SELECT sqlanon_retire('k_fam', keep := 1)").fetchone()[0]
    assert '"retired": [1, 2]' in done
    with pytest.raises(UnsupportedQueryError, match="version 1 of family 'k_fam'.* is retired"):
        sqlanon.interval(released, "SELECT SUM(s) AS t FROM k_fam_v1")
    assert sqlanon.interval(released, "SELECT SUM(s) AS t FROM k_fam_v3") == answer
    assert sqlanon.interval(released, "SELECT SUM(s) AS t FROM k_fam") == answer
    assert released.execute("SELECT * FROM k_fam").fetchall() == served
    with pytest.raises(duckdb.CatalogException):
        released.execute("SELECT * FROM k_fam_v2")
    # a larger keep later does not serve a retired version again
    assert sqlanon.retire(released, "k_fam", 5)["retired"] == []


def test_export_holds_the_served_versions_and_erase_still_removes_keys(
    released: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    sqlanon.retire(released, "k_fam", 2)
    out = sqlanon.export(released, "k_fam", tmp_path / "e.duckdb")
    assert sorted(out["added"]) == ["k_fam_v2", "k_fam_v2_bounds", "k_fam_v3", "k_fam_v3_bounds"]
    gone = released.execute("SELECT min(id) FROM src").fetchone()[0]
    published = "SELECT count(*) FROM sqlanon.members WHERE record_key = $1"
    assert released.execute(published, [str(gone)]).fetchone()[0] > 0
    released.execute("DELETE FROM src WHERE id = $1", [gone])
    assert sqlanon.erase(released, "src")["ghosts"] == 1
    for table in PRIVATE[:-1]:
        column = "record_key" if table in ("member_spans", "kept_values") else None
        if column:
            found = f"SELECT count(*) FROM sqlanon.{table} WHERE {column} = $1"
            assert released.execute(found, [str(gone)]).fetchone() == (0,), table
    sqlanon.release_ke(released, "src", "k_fam", **KE)
    assert released.execute("SELECT count(*) FROM k_fam_v4").fetchone()[0] > 0


def test_the_cli_retires_and_says_what_it_served(tmp_path: Path, capsys: Any) -> None:
    """``sqlanon retire --db F FAMILY --keep N``: one line on stderr, the summary as JSON;
    a bad ``--keep`` is one line and exit 2, nothing written."""
    from sqlanon.cli import main

    path = tmp_path / "cli.duckdb"
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    con.execute(
        "CREATE TABLE src AS SELECT i AS id, 20 + i % 40 AS age, (i * 37) % 500 AS s"
        " FROM range(300) r(i)"
    )
    args = {"key": "id", "sensitive": "s", "quasi": ["age"], "k": 3, "e": 10}
    for step in range(3):
        con.execute(f"UPDATE src SET age = age + 1 WHERE id % 50 = {step}")
        sqlanon.release_ke(con, "src", "fam", **args)
    con.close()
    assert main(["retire", "--db", str(path), "fam", "--keep", "0"]) == 2
    bad = capsys.readouterr().err
    assert bad.startswith("sqlanon: ") and bad.count("\n") == 1
    assert main(["retire", "--db", str(path), "fam", "--keep", "1"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["retired"] == [1, 2] and "serving versions [3]" in err
    con = duckdb.connect(str(path))
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
    assert "fam_v3" in views and not {"fam_v1", "fam_v2"} & views
