"""The audit reads histories, not records (issue 27): the engine groups the audited
records by what every release showed of them and by their values
(``sqlanon/sql/audit_histories.sql``), the attacker weighs each entry by its records,
and every figure it reports equals the per-record audit's (``tests/audit_reference.py``,
the reads as they were, with SQL of their own) on random release sequences: (k,e) and
lHD families on one source, records held back or absent, ghosts of deleted records,
changed values linked in chains; and on product releases of a live table with
deletions, an erasure and changed values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.attacker.history import AttackedRelease
from sqlanon.attacker.replay import audit_domain
from sqlanon.duckdb.session import DuckDBSession
from sqlanon.errors import ConfigError
from sqlanon.models.cells import Requirement
from sqlanon.state import catalog
from sqlanon.state.audit_reads import audit_domain_of
from tests.audit_reference import audit_per_record

WORDS = ["flu", "cold", "asthma"]


def both_paths(con: Any, domain: str) -> tuple[Any, Any]:
    """The audit of ``domain`` (with and without the owner's keys) on the aggregated
    path and on the per-record reference; a ConfigError stands for its class."""
    session = DuckDBSession(con)
    try:
        chosen = sorted(
            (r for r in catalog.releases(session) if r.domain == domain), key=lambda r: r.seq
        )
        out = []
        for run in (
            lambda records: audit_domain_of(session, domain, records=records),
            lambda records: audit_per_record(session, chosen, records),
        ):
            try:
                out.append([run(False), run(True)])
            except ConfigError as exc:
                out.append([type(exc).__name__])
        return out[0], out[1]
    finally:
        session.close()


def catalog_rows(
    con: Any, family: str, version: int, seq: int, model: str, groups: dict[str, int]
) -> None:
    """One release of main.src as its catalog rows (keys to groups; ghosts' ids start
    with ``ghost:``)."""
    if model == "ke":
        parameters = {"sensitive": "v", "k": 2, "e": 1}
    else:
        sensitive = ["v", "w"] if version % 2 else ["w"]
        parameters = {"sensitive": sensitive, "l": 2, "quasi": ["age"]}
    parameters |= {"key": "id", "source": "main.src"}
    con.execute(
        "INSERT INTO sqlanon.releases (family, version, table_name, model, source, parameters,"
        " rows_published, groups, source_rows, domain, seq)"
        " VALUES (?, ?, ?, ?, 'main.src', CAST(? AS JSON), ?, ?, ?, 'main.src', ?)",
        [family, version, f"{family}_v{version}", model, json.dumps(parameters),
         len(groups), len(set(groups.values())), len(groups), seq],
    )  # fmt: skip
    con.execute("INSERT INTO sqlanon.state_versions VALUES (?, ?)", [family, version])
    if not groups:
        return
    con.executemany(
        "INSERT INTO sqlanon.member_spans (family, record_key, first_version, last_version, "
        "group_id, status, row_hash, ghost) VALUES (?, ?, ?, ?, ?, 'published', 0, ?)",
        [(family, k, version, version, g, k.startswith("ghost:")) for k, g in groups.items()],
    )


def ghost_of(con: Any, key: str, values: tuple[int, str]) -> str:
    """``key``'s published rows become a ghost's (deleted, or the old incarnation of a
    changed value), which keeps ``values``."""
    ghost = f"ghost:{key}"
    con.execute(
        "UPDATE sqlanon.member_spans SET record_key = ?, ghost = true WHERE record_key = ?",
        [ghost, key],
    )
    for attribute, value in zip(("v", "w"), values, strict=True):
        con.execute(
            "INSERT INTO sqlanon.kept_values VALUES ('main.src', ?, ?, ?)",
            [ghost, attribute, str(value)],
        )
    return ghost


@st.composite
def sequences(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(3, 10))
    rows = [(draw(st.integers(0, 3)), draw(st.sampled_from(WORDS))) for _ in range(n)]
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        model = draw(st.sampled_from(["ke", "lhd"]))
        groups = draw(st.lists(st.integers(-1, 2), min_size=2 * n, max_size=2 * n))
        # after the release: a record deleted (a ghost) or changed (a ghost and a chain)
        event = draw(st.sampled_from(["none", "delete", "change"]))
        steps.append((model, groups, event, draw(st.integers(0, n - 1)), draw(st.integers(0, 3))))
    return {"rows": rows, "steps": steps}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sequences())
def test_the_aggregated_audit_equals_the_per_record_audit(case: dict[str, Any]) -> None:
    con = duckdb.connect()
    try:
        sqlanon.install(con)
        con.execute("CREATE TABLE src (id INTEGER, age INTEGER, v INTEGER, w VARCHAR)")
        values = {str(i): row for i, row in enumerate(case["rows"])}
        con.executemany(
            "INSERT INTO src VALUES (?, 30, ?, ?)", [(int(k), *v) for k, v in values.items()]
        )
        ghosts: dict[str, str] = {}  # key -> its ghost's id
        changed: set[str] = set()
        versions = {"ke": 0, "lhd": 0}
        for seq, (model, groups, event, who, new) in enumerate(case["steps"], start=1):
            versions[model] += 1
            # every record that is or was: live keys, then ghosts (an erased record's
            # ghost may still be published: it keeps its place)
            everyone = [k for k in values if k not in ghosts or k in changed]
            everyone += list(ghosts.values())
            published = {k: g for k, g in zip(everyone, groups, strict=False) if g >= 0}
            catalog_rows(con, f"s_{model}", versions[model], seq, model, published)
            key = str(who)
            if event == "none" or key in ghosts or key not in published:
                continue
            ghosts[key] = ghost_of(con, key, values[key])
            if event == "delete":
                con.execute("DELETE FROM src WHERE id = ?", [who])
            else:
                changed.add(key)
                values[key] = (new, values[key][1])
                con.execute("UPDATE src SET v = ? WHERE id = ?", [new, who])
                con.execute(
                    "INSERT INTO sqlanon.links VALUES ('main.src', ?, ?)", [ghosts[key], key]
                )
        aggregated, reference = both_paths(con, "main.src")
        assert aggregated == reference
    finally:
        con.close()


def test_the_driver_reads_one_row_per_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Product releases of a live table (a (k,e) and an lHD family on one source;
    deletions, an erasure, changed values, quasi-identifiers and new rows between them):
    both paths agree, and the driver reads one row per distinct history and values, far
    fewer than the records."""
    from sqlanon.state import audit_reads

    con = duckdb.connect(str(tmp_path / "live.duckdb"))
    sqlanon.install(con)
    con.execute(
        "CREATE TABLE people (id INTEGER, age INTEGER, sex VARCHAR, s INTEGER, job VARCHAR)"
    )

    def arrive(start: int, n: int) -> None:
        con.execute(
            "INSERT INTO people SELECT i, 20 + (i * 7) % 40, CASE WHEN i % 3 = 0 THEN 'F' "
            "ELSE 'M' END, (i * 37) % 4 * 10, chr(CAST(97 + (i * 5) % 4 AS INTEGER)) "
            "FROM range(?, ?) AS t(i)",
            [start, start + n],
        )

    (tmp_path / "people_hierarchy_sex.csv").write_text("M;*\nF;*\n")
    arrive(0, 400)
    sqlanon.load_hierarchies(con, "people", str(tmp_path))
    sqlanon.hierarchy_widths(con, "people", "age", [5, 10, 20])

    def release() -> None:
        sqlanon.release_ke(
            con, "people", "p_ke", key="id", sensitive="s", quasi=["age", "sex"], k=3, e=10
        )
        sqlanon.release_lhd(
            con, "people", "p_lhd", key="id", quasi=["age", "sex"], sensitive=["job"], l=2,
            max_suppression=0.5,
        )  # fmt: skip

    release()
    for i, step in enumerate(
        [
            "DELETE FROM people WHERE id IN (3, 17, 40)",
            "UPDATE people SET s = (s + 10) % 40 WHERE id IN (5, 21)",
            "UPDATE people SET age = age + 1 WHERE id = 8",
        ]
    ):
        con.execute(step)
        arrive(1000 + 20 * i, 20)
        if i == 1:
            con.execute("DELETE FROM people WHERE id IN (50, 51)")
            sqlanon.erase(con, "people")
        release()
    seen: list[int] = []
    real = audit_reads._histories

    def counted(*args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        out = real(*args, **kwargs)
        seen.append(len(out["records"]))
        return out

    monkeypatch.setattr(audit_reads, "_histories", counted)
    aggregated, reference = both_paths(con, "main.people")
    assert aggregated == reference
    records = con.execute(
        "SELECT count(DISTINCT record_key) FROM sqlanon.members WHERE status = 'published'"
    ).fetchone()[0]
    assert con.execute("SELECT count(*) FROM sqlanon.links").fetchone()[0] >= 2
    assert seen[0] < records / 2, (seen, records)  # without the keys: histories
    assert seen[1] == records  # with them (the owner's records=True): one per record
    con.close()


def test_weights_count_records_and_chains_stay_single() -> None:
    """A weighted entry counts as its records; a record repeated gives the same audit."""
    s = np.array([1, 1, 2, 5])
    v1 = AttackedRelease(np.array([0, 0, 0, 0]), Requirement.ke("s", 2, 1))
    v2 = AttackedRelease(np.array([0, 0, 1, 1]), Requirement.ke("s", 2, 1))
    weighted = audit_domain({"s": s}, [v1, v2], weights=[3, 1, 1, 2])
    expand = np.array([0, 0, 0, 1, 2, 3, 3])
    plain = audit_domain(
        {"s": s[expand]}, [AttackedRelease(r.group[expand], r.requirement) for r in (v1, v2)]
    )
    assert [w.counts() for w in weighted] == [p.counts() for p in plain]
    assert weighted[1].counts()["exposed"] == 4  # the cell {1, 1, 1, 1}
    with pytest.raises(ConfigError, match="weight must be 1"):
        audit_domain({"s": s}, [v1], weights=[2, 1, 1, 1], chains=[(0, 1)])
    with pytest.raises(ConfigError, match="at least one record"):
        audit_domain({"s": s}, [v1], weights=[0, 1, 1, 1])


@pytest.mark.postgres
def test_on_postgresql_both_paths_agree(pg_db: str, pg_python_root: Path, pg_conn: Any) -> None:
    """The same SQL on PostgreSQL (a client session): a (k,e) and an lHD family of one
    live source and a new family per version, deletions and changed values between
    versions; the domain's audit, and the newest version audited with an independent
    release of a copy (which exposes records): both paths agree."""
    from sqlanon.postgres.install import install_postgres
    from sqlanon.postgres.session import PsycopgSession
    from sqlanon.state.audit_reads import audit_versions

    install_postgres(pg_db, python_root=pg_python_root)
    pg_conn.execute("CREATE TABLE people (id integer, age integer, sex text, s integer)")
    add = (
        "INSERT INTO people SELECT i, 20 + mod(i * 7, 30), CASE mod(i, 3) WHEN 0 THEN 'F' "
        "ELSE 'M' END, mod(i * 37, 5) * 10 FROM generate_series(%s::int, %s::int) AS i"
    )
    pg_conn.execute(add, [1, 120])
    sqlanon.hierarchy_widths(pg_conn, "people", "age", [5, 10, 20])
    for step in range(3):
        if step:
            pg_conn.execute("DELETE FROM people WHERE id %% 31 = %s", [step])
            pg_conn.execute("UPDATE people SET s = (s + 10) %% 50 WHERE id %% 29 = %s", [step])
            pg_conn.execute(add, [1000 * step, 1000 * step + 15])
        sqlanon.release_ke(pg_conn, "people", "p_ke", key="id", sensitive="s", quasi=["age"],
                           k=3, e=10)  # fmt: skip
        sqlanon.release_lhd(pg_conn, "people", "p_l", key="id", quasi=["age"],
                            sensitive=["s"], l=2, max_suppression=0.5)  # fmt: skip
        # a family per version
        sqlanon.release_ke(pg_conn, "people", f"p_new{step}", key="id", sensitive="s",
                           quasi=["sex"], k=2, e=10)  # fmt: skip
    assert pg_conn.execute("SELECT count(*) FROM sqlanon.links").fetchone()[0] > 0
    session = PsycopgSession(pg_conn)
    chosen = sorted(
        (r for r in catalog.releases(session) if r.domain == "public.people"), key=lambda r: r.seq
    )
    assert len(chosen) == 9
    for records in (False, True):
        assert audit_domain_of(session, "public.people", records=records) == audit_per_record(
            session, chosen, records
        )
    # an independent release of a copy (another domain), audited with the newest
    # version (records linked by key): their groups cut each other into small cells
    pg_conn.execute("CREATE TABLE copy AS SELECT * FROM people")
    sqlanon.release_ke(pg_conn, "copy", "c_ke", key="id", sensitive="s", quasi=["sex", "age"],
                       k=2, e=10, domain="copies")  # fmt: skip
    both = {(r.family, r.version): r for r in catalog.releases(session)}
    refs = [("p_ke", 3), ("c_ke", 1)]
    again = audit_versions(session, refs, records=True)
    assert again == audit_per_record(session, [both[ref] for ref in refs], True)
    assert again[-1]["exposed"] > 0, again
