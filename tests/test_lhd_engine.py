"""The engine path of lHD releases (sqlanon/release/lhd_engine.py) against the row path.

Both paths release the same random sequences (appends, a second lHD family over other
quasi-identifiers, a (k,e) family of the same people in between) on real DuckDB files;
the row path is forced by turning the engine path off. Every version must be the same
release: summary counts and metrics, each record's state (status, class, cell), the
release table as a multiset of rows, the kept values. Tables with few distinct values
make many identical records (one unit each in the planner). The engine path must have
been taken; its row order is drawn per release. Deletions make ghosts on the engine path
too (their stand-in QI are drawn at random, so that test checks the release itself).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.errors import InfeasibleError
from sqlanon.release import lhd_engine

COLUMNS = "id INTEGER, age INTEGER, zip INTEGER, dept INTEGER, disease VARCHAR, salary INTEGER"
DISEASES = ["flu", "cold", "asthma", "ulcer"]


@contextmanager
def engine_path(taken: list[bool] | None) -> Iterator[None]:
    """The engine path, noting in ``taken`` whether each lHD release took it; with None,
    the row path only (the engine path turned off)."""
    real = lhd_engine.release

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        assert taken is not None
        taken.append(out is not None)
        return out

    with pytest.MonkeyPatch.context() as m:
        m.setattr(lhd_engine, "release", spy if taken is not None else lambda *a, **k: None)
        yield


rows_strategy = st.lists(
    st.tuples(
        st.integers(0, 19),
        st.integers(0, 29),
        st.integers(0, 5),
        st.sampled_from(DISEASES),
        st.integers(1, 4).map(lambda x: x * 1000),
    ),
    min_size=8,
    max_size=60,
)


def create(path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    con.execute(f"CREATE TABLE people ({COLUMNS})")
    for attribute, widths in (("age", [2, 10]), ("zip", [5, 15]), ("dept", [3])):
        sqlanon.hierarchy_widths(con, "people", attribute, widths)
    return con


def append(con: duckdb.DuckDBPyConnection, rows: list[tuple[Any, ...]], first: int) -> None:
    if not rows:
        return
    con.executemany(
        "INSERT INTO people VALUES (?, ?, ?, ?, ?, ?)",
        [(first + i, *r) for i, r in enumerate(rows)],
    )


def step(con: duckdb.DuckDBPyConnection, kind: str) -> dict[str, Any] | str:
    try:
        if kind == "ke":
            return sqlanon.release_ke(
                con,
                "people",
                "pay",
                key="id",
                sensitive="salary",
                quasi=["age"],
                k=2,
                e=500,
            )
        quasi, family = (["age", "zip"], "a") if kind == "lhd_a" else (["dept", "age"], "b")
        return sqlanon.release_lhd(
            con, "people", family, key="id", quasi=quasi, sensitive=["disease"], l=2,
            max_suppression=1.0, )  # fmt: skip
    except InfeasibleError as error:
        return f"infeasible: {error}"


def seen(con: duckdb.DuckDBPyConnection, summary: dict[str, Any] | str) -> dict[str, Any]:
    """What a release left: its summary (counts, metrics), its members, its table as a
    multiset of rows, and the domain's kept values."""
    if isinstance(summary, str):
        return {"summary": summary}
    family, version, table = summary["family"], summary["version"], summary["table"]
    keep = ("rows_published", "held_back", "suppressed", "groups", "precision_loss", "dm")
    return {
        "summary": {k: summary.get(k) for k in (*keep, "unchanged")},
        "members": con.execute(
            "SELECT record_key, status, group_id, cell_id FROM sqlanon.members "
            "WHERE family = ? AND version = ? ORDER BY record_key",
            [family, version],
        ).fetchall(),
        "table": published(con, table, summary.get("model")),
        "kept": con.execute(
            "SELECT record_key, attribute, value FROM sqlanon.kept_values ORDER BY ALL"
        ).fetchall(),
    }


def published(con: duckdb.DuckDBPyConnection, table: str, model: Any) -> list[str]:
    """A release table as a multiset of rows; for (k,e), per group its other columns and
    its values apart (which record shows which value is drawn per release)."""
    cursor = con.execute(f'SELECT * FROM "{table}"')  # noqa: S608
    names = [d[0] for d in cursor.description or []]
    rows = cursor.fetchall()
    if model != "ke":
        return sorted(map(repr, rows))
    group, value = names.index("group_id"), names.index("salary")
    by_group: dict[Any, tuple[list[str], list[Any]]] = {}
    for row in rows:
        rest = repr([v for i, v in enumerate(row) if i != value])
        by_group.setdefault(row[group], ([], []))[0].append(rest)
        by_group[row[group]][1].append(row[value])
    return sorted(repr((sorted(r), sorted(v))) for r, v in by_group.values())


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.generate],
)
@given(rows_strategy, rows_strategy, rows_strategy, st.booleans())
def test_the_engine_path_releases_what_the_row_path_releases(
    tmp_path_factory: pytest.TempPathFactory,
    first: list[tuple[Any, ...]],
    second: list[tuple[Any, ...]],
    third: list[tuple[Any, ...]],
    with_ke: bool,
) -> None:
    folder = tmp_path_factory.mktemp("lhd_engine")
    steps = [
        (first, "lhd_a"),
        ([], "lhd_a"),  # nothing new: unchanged
        (second, "lhd_a"),
        *([([], "ke")] if with_ke else []),
        (third, "lhd_b"),
        ([], "lhd_a"),
    ]
    taken: list[bool] = []
    results: dict[str, list[dict[str, Any]]] = {}
    for path in ("engine", "rows"):
        con = create(folder / f"{path}.duckdb")
        results[path] = []
        with engine_path(taken if path == "engine" else None):
            size = 0
            for rows, kind in steps:
                append(con, rows, size)
                size += len(rows)
                results[path].append(seen(con, step(con, kind)))
        con.close()
    for engine, rows in zip(results["engine"], results["rows"], strict=True):
        assert engine == rows
    # no deletes or changed values here: every lHD release that got past the checks
    # took the engine path
    assert all(taken)
    published = [r for r, (_, kind) in zip(results["engine"], steps, strict=True)
                 if kind != "ke" and not isinstance(r["summary"], str)]  # fmt: skip
    assert len(taken) >= len(published)


def test_rows_come_in_a_keyed_random_order(tmp_path: Path) -> None:
    """Two releases of the same table (secrets drawn per release) list the same rows in
    different orders."""
    orders = []
    for name in ("x", "y"):
        con = create(tmp_path / f"{name}.duckdb")
        append(con, [(i % 20, i % 30, i % 6, DISEASES[i % 4], 1000) for i in range(200)], 0)
        sqlanon.release_lhd(con, "people", "a", key="id", quasi=["age"], sensitive=["disease"], l=2)
        orders.append(con.execute("SELECT age, disease FROM a_v1").fetchall())
        keyed = con.execute(
            "SELECT a.age, a.disease FROM a_v1 AS a ORDER BY a.age, a.disease"
        ).fetchall()
        assert sorted(orders[-1]) == keyed
        con.close()
    assert orders[0] != orders[1]


def test_deletions_make_ghosts_on_the_engine_path(tmp_path: Path) -> None:
    """Deleted records a release published stay as ghosts (MODELS.md, "Changing
    tables"): the engine path plans them with the live units, shows them among the rows
    of their classes (class_ghosts counts them), keeps every class l-diverse, and a run
    with nothing new publishes nothing."""
    taken: list[bool] = []
    con = create(tmp_path / "ghosts.duckdb")
    append(con, [(i % 20, i % 30, i % 6, DISEASES[i % 4], 1000) for i in range(300)], 0)
    with engine_path(taken):
        args = {"key": "id", "quasi": ["age", "zip"], "sensitive": ["disease"], "l": 2}
        sqlanon.release_lhd(con, "people", "a", **args)
        con.execute("DELETE FROM people WHERE id % 9 = 0")
        second = sqlanon.release_lhd(con, "people", "a", **args)
        again = sqlanon.release_lhd(con, "people", "a", **args)
    assert taken == [True, True, True]
    assert second["deleted"] == 34 and second["ghosts"] == 34
    assert second["rows_published"] == 266 and again["unchanged"]
    rows, ghosts, short = con.execute(
        "SELECT count(*), (SELECT count(*) FROM sqlanon.members WHERE version = 2 AND ghost "
        "AND status = 'published'), (SELECT count(*) FROM (SELECT class_id FROM a_v2 "
        "GROUP BY class_id HAVING count(DISTINCT disease) < 2)) FROM a_v2"
    ).fetchone()
    assert (rows, ghosts, short) == (300, 34, 0)
    by_class = con.execute(
        "SELECT a.class_ghosts, count(m.record_key) FROM (SELECT DISTINCT class_id, "
        "class_ghosts FROM a_v2) AS a LEFT JOIN sqlanon.members AS m ON m.version = 2 "
        "AND m.ghost AND m.group_id = a.class_id GROUP BY a.class_id, a.class_ghosts"
    ).fetchall()
    assert all(shown == actual for shown, actual in by_class)
    assert [r["exposed"] for r in sqlanon.audit(con, "a")] == [0, 0]
