"""Live tables end to end on real DuckDB files, checked by the exact attacker.

Random tiny sequences of inserts, deletes, quasi-identifier changes and sensitive-value
changes, released again and again through the public API ((k,e) with k=2, lHD with l=2
on a categorical column, and both on one source). After every release the test builds
what the attacker holds (MODELS.md, "Changing tables") from what was published only:

- every group's or class's multiset: read from the release tables (ghost rows
  included, whatever they show);
- every group's membership, which ghost is whose and which records changed which
  attributes: the attacker model grants these, so the test takes memberships from
  ``sqlanon.members`` and matches ghosts to the people it deleted or changed (it knows
  each person's key and history of true values);

and hands it to :func:`tests.attacker.exact_candidates` (shares nothing with sqlanon).
Required: nobody below the requirement of a release that published them, and every
incarnation's true values always among its candidates. Also: intervals over releases
with ghosts contain the truth over the live published rows; a refused release writes
nothing; a deleted person's key is gone from every table of the sqlanon schema.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.errors import InternalError, SqlanonError
from tests.attacker import History, Publication, Published, exact_candidates, exact_exposed

AGES = (20, 30, 40)
ZONES = ("z1", "z2", "z3", "z4")
S_VALUES = (1, 2, 3)
C_VALUES = ("a", "b", "c")
MAX_PEOPLE = 8
MAX_INCARNATIONS = 10
MODELS = ("ke", "lhd", "both")


def key_of(person: int) -> str:
    """A key no other text of the catalog contains (the erasure check looks for it)."""
    return f"pk{person}q"


# ------------------------------------------------------------------- the table


@dataclass
class Person:
    age: int
    zone: str
    s: int
    c: str
    alive: bool = True
    incarnations: list[str] = field(default_factory=list)  # ids, oldest first (key last)


@dataclass
class Table:
    """The source table as the test drives it, and what it knows about each person."""

    con: duckdb.DuckDBPyConnection
    model: str
    people: list[Person] = field(default_factory=list)
    truth: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # ghost -> values
    # changes no release has taken in yet (every release since was refused): person ->
    # the values the catalog still holds for its key
    pending: dict[int, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def attributes(self) -> tuple[str, ...]:
        return {"ke": ("s",), "lhd": ("c",), "both": ("s", "c")}[self.model]

    def values(self, p: Person) -> tuple[Any, ...]:
        return tuple(getattr(p, a) for a in self.attributes)

    def key_truth(self, i: int) -> tuple[Any, ...]:
        """The values of the incarnation the catalog knows under person ``i``'s key."""
        return self.pending.get(i, self.values(self.people[i]))

    def insert(self, age: int, zone: str, s: int, c: str) -> None:
        person = Person(age, zone, s, c)
        self.people.append(person)
        key = key_of(len(self.people) - 1)
        person.incarnations.append(key)
        self.con.execute("INSERT INTO src VALUES (?, ?, ?, ?, ?)", [key, age, zone, s, c])

    def live(self) -> list[int]:
        return [i for i, p in enumerate(self.people) if p.alive]

    def delete(self, i: int) -> None:
        self.people[i].alive = False
        self.con.execute("DELETE FROM src WHERE id = ?", [key_of(i)])

    def change_quasi(self, i: int, age: int, zone: str) -> None:
        p = self.people[i]
        p.age, p.zone = age, zone
        self.con.execute("UPDATE src SET age = ?, zone = ? WHERE id = ?", [age, zone, key_of(i)])

    def change_value(self, i: int, attribute: str, value: Any) -> None:
        setattr(self.people[i], attribute, value)
        self.con.execute(
            f"UPDATE src SET {attribute} = ? WHERE id = ?",  # noqa: S608 (a, s or c)
            [value, key_of(i)],
        )


def make_table(con: duckdb.DuckDBPyConnection, folder: Path, model: str) -> Table:
    con.execute("CREATE TABLE src (id VARCHAR, age INTEGER, zone VARCHAR, s INTEGER, c VARCHAR)")
    folder.mkdir(exist_ok=True)
    (folder / "src_hierarchy_zone.csv").write_text("z1;A;*\nz2;A;*\nz3;B;*\nz4;B;*\n")
    sqlanon.load_hierarchies(con, "src", str(folder))
    sqlanon.hierarchy_widths(con, "src", "age", [20])
    return Table(con, model)


def families(table: Table, seed: int) -> list[Any]:
    """The release call of every family of the model, in order."""
    ke = {"key": "id", "sensitive": "s", "quasi": ["age"], "k": 2, "e": 1}
    lhd = {"key": "id", "quasi": ["age", "zone"], "sensitive": ["c"], "l": 2}
    calls = []
    if table.model in ("ke", "both"):
        calls.append(lambda: sqlanon.release_ke(table.con, "src", "f_ke", **ke))
    if table.model in ("lhd", "both"):
        # tiny tables: suppressing a few rows must not refuse the whole release
        calls.append(
            lambda: sqlanon.release_lhd(table.con, "src", "f_lhd", **lhd, max_suppression=0.5)
        )
    return calls


# --------------------------------------------------------- the attacker's view


def snapshot(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Every table of the database with its rows (the state a refusal must not touch)."""
    out: dict[str, Any] = {}
    for schema, name in con.execute(
        "SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_catalog = current_database() ORDER BY ALL"
    ).fetchall():
        rows = con.execute(f'SELECT * FROM "{schema}"."{name}"').fetchall()  # noqa: S608
        out[f"{schema}.{name}"] = sorted(map(repr, rows))
    return out


def member_rows(con: duckdb.DuckDBPyConnection) -> list[tuple[str, int, str, int | None, str]]:
    return con.execute(
        "SELECT m.family, m.version, m.record_key, m.group_id, m.status FROM sqlanon.members "
        "AS m JOIN sqlanon.releases AS r USING (family, version) ORDER BY r.seq, m.record_key"
    ).fetchall()


def signatures(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[Any, ...]]:
    """Per record id: its (family, version, group, status) in every version."""
    out: dict[str, list[Any]] = {}
    for family, version, record, group, status in member_rows(con):
        out.setdefault(record, []).append((family, version, group, status))
    return {r: tuple(s) for r, s in out.items()}


def follow(table: Table, before: dict[str, tuple[Any, ...]]) -> None:
    """After a step whose releases took the changes in: name the ghosts they made.
    ``before``: the signatures before the step. A chain link names the ghost of a
    changed record (its values: those before the change), or the next ghost of a chain;
    the other new ghosts are deleted people, matched by their history (people with the
    same history are interchangeable to everyone)."""
    con = table.con
    changed, table.pending = table.pending, {}
    known = {x for p in table.people for x in p.incarnations}
    links = dict(con.execute("SELECT later, earlier FROM sqlanon.links").fetchall())
    ghosts = {
        r
        for (r,) in con.execute(
            "SELECT DISTINCT record_key FROM sqlanon.members WHERE ghost"
        ).fetchall()
    }
    new = ghosts - known
    # the old incarnation of a changed published record: linked to its key now
    for i, old in changed.items():
        key = key_of(i)
        p = table.people[i]
        ghost = links.get(key)
        if ghost is not None and ghost in new:
            p.incarnations.insert(len(p.incarnations) - 1, ghost)
            table.truth[ghost] = old
            new.discard(ghost)
    # a chain's key that was deleted: its link now points at the new ghost
    for later, earlier in links.items():
        if later in new:
            owner = next(p for p in table.people if earlier in p.incarnations)
            owner.incarnations[-1] = later
            table.truth[later] = changed.get(table.people.index(owner), table.values(owner))
            new.discard(later)
    # the other new ghosts: deleted people, by their history before this release
    after = signatures(con)
    waiting = {
        i: before[key_of(i)]
        for i, p in enumerate(table.people)
        if not p.alive and p.incarnations[-1] == key_of(i) and key_of(i) in before
    }
    kept: dict[str, dict[str, str]] = {}
    for record, attribute, value in con.execute(
        "SELECT record_key, attribute, value FROM sqlanon.kept_values"
    ).fetchall():
        kept.setdefault(record, {})[attribute] = value
    for ghost in sorted(new):
        # The releases are in order: the ghost's history before this release comes
        # first. People deleted together with the same history may be placed apart
        # now: their kept values tell them apart (equal values: interchangeable).
        # (only the attributes the domain's releases published are kept)
        def same(i: int, ghost: str = ghost) -> bool:
            values = dict(
                zip(table.attributes, changed.get(i, table.values(table.people[i])), strict=True)
            )
            mine = kept.get(ghost, {})
            return bool(mine) and all(str(values[a]) == v for a, v in mine.items())

        i = next(
            (i for i, sig in waiting.items() if sig == after[ghost][: len(sig)] and same(i)),
            None,
        )
        assert i is not None, f"ghost {ghost} matches no deleted person"
        del waiting[i]
        table.people[i].incarnations[-1] = ghost
        table.truth[ghost] = changed.get(i, table.values(table.people[i]))


def history(table: Table) -> History:
    """What the attacker holds after the last release: the published multisets (from
    the release tables), the memberships, which ghost is whose, and the links."""
    con = table.con
    positions = {a: j for j, a in enumerate(table.attributes)}
    truth = dict(table.truth)
    keys = {r for (r,) in con.execute("SELECT DISTINCT record_key FROM sqlanon.members").fetchall()}
    for i, p in enumerate(table.people):
        if p.incarnations[-1] == key_of(i) and key_of(i) in keys:
            truth[key_of(i)] = table.key_truth(i)
    releases = con.execute(
        "SELECT family, version, table_name, model, CAST(parameters AS VARCHAR) "
        "FROM sqlanon.releases ORDER BY seq"
    ).fetchall()
    publications = []
    for family, version, name, model, parameters in releases:
        p = json.loads(parameters)
        members: dict[int, list[str]] = {}
        for record, group in con.execute(
            "SELECT record_key, group_id FROM sqlanon.members "
            "WHERE family = ? AND version = ? AND status = 'published'",
            [family, version],
        ).fetchall():
            members.setdefault(group, []).append(record)
        if model == "ke":
            where = (positions["s"],)
            rows = con.execute(f'SELECT group_id, s FROM "{name}"').fetchall()  # noqa: S608
            need = {positions["s"]: p["k"]}
            spread = {positions["s"]: float(p["e"])}
        else:  # every sensitive attribute the release published (s, c: names we chose)
            where = tuple(positions[a] for a in p["sensitive"])
            shown = ", ".join(p["sensitive"])
            rows = con.execute(f'SELECT class_id, {shown} FROM "{name}"').fetchall()  # noqa: S608
            need = {positions[a]: p["l"] for a in p["sensitive"]}
            spread = {}
        multisets: dict[int, Counter[tuple[Any, ...]]] = {}
        for g, *value in rows:
            multisets.setdefault(g, Counter())[tuple(value)] += 1
        assert set(multisets) == set(members), f"{name}: groups differ from the members"
        groups = []
        for g, records in members.items():
            assert sum(multisets[g].values()) == len(records), f"{name} group {g}"
            for r in records:
                assert r in truth, f"{name}: {r} is nobody the test knows"
            groups.append(Published(tuple(records), multisets[g]))
        publications.append(Publication(where, tuple(groups), need, spread))
    links = []
    for later, earlier in con.execute("SELECT later, earlier FROM sqlanon.links").fetchall():
        for x in (earlier, later):
            assert x in truth, f"link {earlier} -> {later}: {x} is nobody the test knows"
        a, b = truth[earlier], truth[later]
        links.append((earlier, later, frozenset(j for j in range(len(a)) if a[j] != b[j])))
    return History(truth, publications, links)


def check_ghost_rows(con: duckdb.DuckDBPyConnection, summary: dict[str, Any]) -> None:
    """The version just published shows its ghosts as the model says: (k,e) rows with
    ghost true and NULL quasi-identifiers, lHD each class's number of ghosts."""
    name = summary["table"]
    members = dict(
        con.execute(
            "SELECT group_id, count(*) FILTER (WHERE ghost) FROM sqlanon.members "
            "WHERE family = ? AND version = ? AND status = 'published' GROUP BY group_id",
            [summary["family"], summary["version"]],
        ).fetchall()
    )
    columns = [r[0] for r in con.execute(f'DESCRIBE "{name}"').fetchall()]  # noqa: S608
    if summary["model"] == "ke":
        shown = dict(
            con.execute(
                f'SELECT group_id, count(*) FILTER (WHERE ghost AND age IS NULL) FROM "{name}" '  # noqa: S608
                "GROUP BY group_id"
            ).fetchall()
            if "ghost" in columns
            else []
        )
    else:
        shown = dict(
            con.execute(f'SELECT DISTINCT class_id, class_ghosts FROM "{name}"').fetchall()  # noqa: S608
            if "class_ghosts" in columns
            else []
        )
    assert {g: n for g, n in shown.items() if n} == {g: n for g, n in members.items() if n}
    assert sum(members.values()) == summary["ghosts"]


def check_attacker(table: Table, where: str) -> None:
    h = history(table)
    candidates = exact_candidates(h)  # raises when a truth is not a candidate
    for x, t in h.truth.items():
        assert t in candidates[x], f"{where}: {x}'s truth {t} is not a candidate"
    exposed = exact_exposed(h, candidates)
    assert not exposed, f"{where}: EXPOSED {exposed}"


def check_intervals(table: Table, summary: dict[str, Any]) -> None:
    """Interval answers over the version just published contain the truth over the
    live rows it published (the source as it read it; ghosts have no truth)."""
    con = table.con
    published = {
        r
        for (r,) in con.execute(
            "SELECT record_key FROM sqlanon.members WHERE family = ? AND version = ? "
            "AND status = 'published' AND NOT ghost",
            [summary["family"], summary["version"]],
        ).fetchall()
    }
    live = [p for i, p in enumerate(table.people) if key_of(i) in published]
    assert len(live) == summary["rows_published"]
    if summary["model"] == "ke":
        answers = sqlanon.interval(
            con, "SELECT age, COUNT(*) AS n, SUM(s) AS total FROM f_ke GROUP BY age"
        )
        by_age: dict[int, list[int]] = {}
        for p in live:
            by_age.setdefault(p.age, []).append(p.s)
        got = {a["age"]: a for a in answers}
        assert set(got) == set(by_age), (got, by_age)
        for age, values in by_age.items():
            a = got[age]
            assert a["n_low"] <= len(values) <= a["n_high"]
            assert a["total_low"] <= sum(values) <= a["total_high"], (age, values, a)
    else:
        for c in C_VALUES:
            (a,) = sqlanon.interval(con, f"SELECT COUNT(*) AS n FROM f_lhd WHERE c = '{c}'")  # noqa: S608
            truth = sum(p.c == c for p in live)
            assert a["n_low"] <= truth <= a["n_high"], (c, truth, a)


# ------------------------------------------------------------- the sequences

Step = tuple[str, int, Any]  # (kind, person index seed, payload)


#: One record of the live tests' table: (age, zone, s, c).
PERSON = st.tuples(
    st.sampled_from(AGES), st.sampled_from(ZONES), st.sampled_from(S_VALUES),
    st.sampled_from(C_VALUES),
)  # fmt: skip


def changes(kinds: tuple[str, ...] = ("insert", "delete", "quasi", "value")) -> Any:
    """One change of the table (:func:`apply`): an insert, a delete, a changed
    quasi-identifier or a changed sensitive value of a record picked by index."""
    found = {
        "insert": st.tuples(st.just("insert"), st.just(0), PERSON),
        "delete": st.tuples(st.just("delete"), st.integers(0, 99), st.none()),
        "quasi": st.tuples(
            st.just("quasi"),
            st.integers(0, 99),
            st.tuples(st.sampled_from(AGES), st.sampled_from(ZONES)),
        ),
        "value": st.tuples(
            st.just("value"),
            st.integers(0, 99),
            st.tuples(st.sampled_from(("s", "c")), st.integers(0, 2)),
        ),
    }
    return st.one_of(*[found[kind] for kind in kinds])


@st.composite
def sequences(draw: Any) -> tuple[str, list[tuple[Any, ...]], list[list[Step]], int]:
    model = draw(st.sampled_from(MODELS))
    first = draw(st.lists(PERSON, min_size=3, max_size=6))
    steps = draw(st.lists(st.lists(changes(), min_size=1, max_size=3), min_size=1, max_size=3))
    return model, first, steps, draw(st.integers(0, 3))


def replay(
    first: list[tuple[Any, ...]],
    batches: list[list[Step]],
    step: Callable[[Table, str], None],
    label: Any,
) -> None:
    """A fresh DuckDB file holding the live tests' table (both models' columns) with the
    people ``first``; ``step(table, where)`` runs once, then after each batch of changes
    (:func:`apply`); ``where`` names the step and ``label`` for a failure's message."""
    with tempfile.TemporaryDirectory() as tmp:
        con = duckdb.connect(str(Path(tmp) / "live.duckdb"))
        try:
            sqlanon.install(con)
            table = make_table(con, Path(tmp) / "hier", "both")
            for person in first:
                table.insert(*person)
            for t, batch in enumerate([[], *batches]):
                apply(table, batch)
                step(table, f"after step {t} of {label}")
        finally:
            con.close()


def release_in_turn(
    table: Table,
    releases: list[tuple[str, Callable[[], dict[str, Any]]]],
    where: str,
    published: Callable[[str, dict[str, Any]], None] | None = None,
) -> None:
    """One step of a live sequence: each ``(family, call)`` releases in turn. A refusal
    is no bug (no :class:`InternalError`, nothing asking to report it) and writes
    nothing; a published version's ghost rows match its members (and ``published``
    checks more); then the test follows what was published and the exact attacker
    looks at every release so far."""
    before_sig, took = signatures(table.con), False
    for family, call in releases:
        before = snapshot(table.con)
        try:
            summary = call()
        except SqlanonError as exc:
            message = str(exc)
            assert not isinstance(exc, InternalError), f"{where} {family}: {message}"
            assert "please report" not in message, f"{where} {family}: {message}"
            assert snapshot(table.con) == before, f"a refused release wrote something: {exc}"
            event(f"{family} refused: {type(exc).__name__}")
            continue
        event(f"{family} {'unchanged' if summary.get('unchanged') else 'published'}")
        if not summary.get("unchanged"):
            took = True
            check_ghost_rows(table.con, summary)
            if published is not None:
                published(family, summary)
    if took:
        follow(table, before_sig)
    if table.con.execute("SELECT count(*) FROM sqlanon.releases").fetchone()[0]:
        check_attacker(table, where)


def apply(table: Table, steps: list[Step]) -> None:
    """One batch of changes (a sensitive value changes at most once per batch)."""
    changed: set[int] = set()
    incarnations = len(table.truth) + len(table.live()) + len(table.pending)
    for kind, pick, payload in steps:
        live = [i for i in table.live() if i not in changed]
        if kind == "insert":
            if len(table.people) < MAX_PEOPLE and incarnations < MAX_INCARNATIONS:
                table.insert(*payload)
                incarnations += 1
        elif not live:
            continue
        elif kind == "delete":
            table.delete(live[pick % len(live)])
        elif kind == "quasi":
            table.change_quasi(live[pick % len(live)], *payload)
        else:
            attribute, shift = payload
            if attribute not in table.attributes or incarnations >= MAX_INCARNATIONS:
                continue
            i = live[pick % len(live)]
            p = table.people[i]
            domain = S_VALUES if attribute == "s" else C_VALUES
            others = [v for v in domain if v != getattr(p, attribute)]
            table.pending.setdefault(i, table.values(p))
            table.change_value(i, attribute, others[shift % len(others)])
            changed.add(i)
            incarnations += 1


def drive(con: duckdb.DuckDBPyConnection, folder: Path, scenario: Any) -> dict[str, int]:
    model, first, batches, seed = scenario
    table = make_table(con, folder, model)
    for person in first:
        table.insert(*person)
    tally = Counter[str]()
    for t, batch in enumerate([[], *batches]):
        apply(table, batch)
        before_sig = signatures(con)
        took = False
        for call in families(table, seed + t):
            before = snapshot(con)
            try:
                summary = call()
            except SqlanonError as exc:
                # refused (nothing can be published yet, or a product refusal): nothing
                # may be written
                tally[type(exc).__name__] += 1
                assert snapshot(con) == before, f"a refused release wrote something: {exc}"
                continue
            tally["unchanged" if summary.get("unchanged") else "published"] += 1
            if summary.get("unchanged"):
                assert snapshot(con) == before, "an unchanged run wrote something"
            else:
                took = True
                check_ghost_rows(con, summary)
                check_intervals(table, summary)
        if took:
            follow(table, before_sig)
        if con.execute("SELECT count(*) FROM sqlanon.releases").fetchone()[0]:
            check_attacker(table, f"after step {t} of {scenario}")
    tally["ghosts"] = con.execute(
        "SELECT count(DISTINCT record_key) FROM sqlanon.members WHERE ghost"
    ).fetchone()[0]
    tally["links"] = con.execute("SELECT count(*) FROM sqlanon.links").fetchone()[0]
    return dict(tally)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(sequences())
# two people deleted together with the same history, placed apart by the next release
@example(
    (
        "lhd",
        [(20, "z3", 2, "b"), (30, "z2", 1, "a"), (20, "z2", 1, "c"), (30, "z2", 1, "a")],
        [
            [("value", 15, ("s", 0)), ("value", 57, ("c", 0)), ("insert", 0, (40, "z3", 3, "b"))],
            [("delete", 9, None)],
            [("delete", 16, None), ("delete", 40, None)],
        ],
        1,
    )
)
# the lHD family never publishes (one value of c): ghosts keep s only
@example(
    (
        "both",
        [(30, "z1", 3, "a"), (40, "z1", 1, "a"), (20, "z2", 3, "a")],
        [[("delete", 1, None)]],
        0,
    )
)
@example(
    (
        "both",
        [(30, "z2", 1, "b"), (30, "z4", 1, "c"), (40, "z3", 3, "c"), (40, "z4", 3, "a")]
        + [(40, "z3", 3, "a"), (30, "z3", 1, "c")],
        [[("delete", 4, None), ("delete", 72, None)], [("value", 65, ("s", 1))]],
        0,
    )
)
def test_live_sequences_leave_the_exact_attacker_nothing(scenario: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        con = duckdb.connect(str(Path(tmp) / "live.duckdb"))
        try:
            sqlanon.install(con)
            drive(con, Path(tmp) / "hier", scenario)
        finally:
            con.close()


# ------------------------------------------------------------- fixed cases


def scan_for(con: duckdb.DuckDBPyConnection, text: str) -> list[str]:
    """Every table.column of schema sqlanon whose text holds ``text``."""
    found = []
    for table, column in con.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = 'sqlanon' AND table_catalog = current_database() ORDER BY ALL"
    ).fetchall():
        hits = con.execute(
            f'SELECT count(*) FROM sqlanon."{table}" '  # noqa: S608 (names from the catalog)
            f'WHERE strpos(CAST("{column}" AS VARCHAR), ?) > 0',
            [text],
        ).fetchone()[0]
        if hits:
            found.append(f"{table}.{column}")
    return found


def test_a_deleted_persons_key_is_gone_from_every_sqlanon_table(tmp_path: Path) -> None:
    """Erasure: after the release that follows a delete, the key's text is nowhere in the
    sqlanon schema (members, kept values, links, catalog, bounds...), in any column.
    Also for a person whose value changed before being deleted (a chain)."""
    con = duckdb.connect(str(tmp_path / "erase.duckdb"))
    sqlanon.install(con)
    table = make_table(con, tmp_path / "hier", "both")
    for n in range(8):
        table.insert(AGES[n % 2], ZONES[n % 4], S_VALUES[n % 3], C_VALUES[(n + 1) % 3])
    for call in families(table, 1):
        call()
    assert scan_for(con, key_of(2)) and scan_for(con, key_of(5))  # the scan sees keys
    table.change_value(5, "s", 3 if table.people[5].s != 3 else 1)
    for call in families(table, 2):
        call()
    assert con.execute("SELECT count(*) FROM sqlanon.links").fetchone()[0] == 1
    table.delete(2)
    table.delete(5)
    for n in range(8, 12):
        table.insert(AGES[n % 2], ZONES[n % 4], S_VALUES[n % 3], C_VALUES[n % 3])
    summaries = [call() for call in families(table, 3)]
    assert summaries[0]["deleted"] == 2
    assert scan_for(con, key_of(2)) == [] and scan_for(con, key_of(5)) == []
    assert scan_for(con, key_of(3))  # a person still there keeps their key
    con.close()


def test_a_refused_release_writes_nothing(tmp_path: Path) -> None:
    """A release that cannot publish anything after deletes and a change (every new row
    alone, k=2 impossible) is refused with the database exactly as it was: no ghost, no
    link, no version, no table."""
    con = duckdb.connect(str(tmp_path / "refused.duckdb"))
    sqlanon.install(con)
    table = make_table(con, tmp_path / "hier", "ke")
    for s in (1, 2, 1, 2):
        table.insert(20, "z1", s, "a")
    (ke,) = families(table, 1)
    assert ke()["rows_published"] == 4
    table.delete(0)
    table.change_value(1, "s", 3)
    table.change_value(2, "s", 3)
    table.change_value(3, "s", 3)
    before = snapshot(con)
    with pytest.raises(SqlanonError):
        ke()
    assert snapshot(con) == before
    con.close()
