"""The engine path's stages that both models share: the source read once into the
temporary table ``_sqlanon_read`` with a few totals, the changes applied from counts,
and the private state written by joining the plan (``_sqlanon_plan``) to the rows in SQL.

Python only ever holds one entry per group of records the planner may treat alike
((k,e): a cell and a value, :mod:`~sqlanon.release.ke_engine`; lHD: a unit of identical
records, :mod:`~sqlanon.release.lhd_engine`). A path that cannot take a release says so
before it writes anything, and the row path takes it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from typing import Any

from sqlanon import sqltext
from sqlanon.models.cells import Cells
from sqlanon.release.pipeline import J, Job, Steps, Written, run
from sqlanon.session import Session
from sqlanon.state import domains, live, spans
from sqlanon.state.source import render_sql

#: PostgreSQL settings for the statements of one release, only until it ends: memory
#: for one sort or hash (a session's default, 4MB, sends the shuffle's sorts of 10^6
#: rows to disk; only ever raised), and no JIT (its compilation costs ~0.3 s a statement
#: here and saves nothing on these plans).
WORK_MEM_KB = 256 * 1024


def run_on_engine(
    session: Session, job: J, steps: Steps[J, Any], *, temp: Sequence[str], tune: bool = False
) -> Written | None:
    """:func:`~sqlanon.release.pipeline.run` on the engine path, inside the caller's
    transaction: its temporary tables ``temp`` dropped before and after, either way
    (and, with ``tune``, PostgreSQL tuned for it: :func:`tune_postgres`)."""
    restore = tune_postgres(session) if tune else []
    _drop(session, temp)
    try:
        written = run(session, job, steps)
    except BaseException:
        # The caller rolls back (temporary tables and settings with it); a cleanup in a
        # transaction the error aborted would fail and hide the error itself.
        with contextlib.suppress(Exception):
            _drop(session, temp)
        raise
    _drop(session, temp)
    for name, value in restore:
        session.execute("SELECT set_config($1, $2, true)", [name, value])
    return written


def _drop(session: Session, temp: Sequence[str]) -> None:
    for name in temp:
        session.execute(f"DROP TABLE IF EXISTS {name}")


def tune_postgres(session: Session) -> list[tuple[str, str]]:
    """On PostgreSQL, set this transaction's ``work_mem`` (raised to
    :data:`WORK_MEM_KB`) and ``jit`` (off) for the release; returns the settings to
    restore."""
    if session.dialect != "postgres":
        return []
    work_mem, kb, jit = session.query(
        "SELECT current_setting('work_mem') AS work_mem, "
        "pg_size_bytes(current_setting('work_mem')) / 1024 AS kb, current_setting('jit') AS jit"
    )[0]
    wanted = [("jit", "off")]
    if int(kb) < WORK_MEM_KB:
        wanted.append(("work_mem", f"{WORK_MEM_KB}kB"))
    for name, value in wanted:
        session.execute("SELECT set_config($1, $2, true)", [name, value])
    return [(name, str(work_mem if name == "work_mem" else jit)) for name, _ in wanted]


def shuffle_key() -> str:
    """The secret of a release's shuffle: 128 bits from ``os.urandom`` (32 hex digits),
    never stored, and never derived from anything a caller gives (there is no seed:
    nobody, the owner included, can choose or recompute a release's pairing).

    Why the shuffle is sound. Within a group, the record of rank i by a keyed order h
    gets the group's i-th smallest value. Anyone who reads the release can read that
    order off it (a record's published value is the one of its h-rank), so privacy never
    rests on h staying hidden; it rests on h being a function of the key and the secret
    only, never of the sensitive value, and on the order it gives a group being a
    uniformly random permutation of its records whatever their keys are (keys may well
    encode S: numbered by salary, say; an order that followed the keys would then pair
    records with their own values). Given the group's multiset, the published pairing is
    then independent of the true one, as the row path's ``os.urandom`` shuffle
    (``ke_shuffle.permute_within_groups``) makes it. Ties in h (distinct keys only, about
    n^2 / 2^65) fall back to key order.

    DuckDB: h = m(m(x XOR k1) XOR k2), with x = ``hash(key)`` (DuckDB's 64-bit hash of
    the key in its own type: public), m = DuckDB's ``hash`` of a 64-bit integer (a
    bijective multiply-xorshift mixer, murmur's finalizer) and k1, k2 the secret's two
    64-bit halves: a two-round Even-Mansour permutation of x over that mixer, about 3%
    of SHA-256's cost per row here (bench/ke_release.py). It is not a cryptographic PRF,
    and needs not be: what it must do is make a group's order, for any fixed keys,
    uniform over the 2^128 secrets (each round's XOR makes every x's input uniform, the
    mixer spreads each bit over all 64; tests/test_engine_path.py checks it with
    consecutive keys). An attacker who sees the release but not the secret can predict
    nothing beyond the release itself: the order of h within each group, which the
    release already shows, and nothing of other releases (each draws its own secret)
    or of any sensitive value. PostgreSQL and Spark keep SHA-256 of the secret and the
    key's text (``sha256($1 || key)``: a pseudo-random function of the key under the
    standard assumption behind prefix-keyed SHA-2), which gives the same guarantee.
    """
    return os.urandom(16).hex()


def read_source(session: Session, read: str, parameters: list[Any], stats: str) -> dict[str, Any]:
    """Run ``read`` (it creates ``_sqlanon_read``) and return the totals of the
    ``stats`` file over it: rows ``n``, ``inserted``, ``quasi_changed``, ``celled``,
    ``value_changed``..."""
    session.execute(read, parameters)
    return session.query_dicts(sqltext.load(session.dialect, stats))[0]


def counted_changes(
    session: Session, job: Job, stats: dict[str, Any], changed_keys: Sequence[str] = ()
) -> live.Changes:
    """The changes since the family's last version, applied from the read's totals
    (:func:`sqlanon.state.live.apply_counted_changes`)."""
    scope, last, n = job.scope, job.last, int(stats["n"])
    inserted = int(stats["inserted"]) if last is not None else n
    return live.apply_counted_changes(
        session, scope.name, scope.last, last, job.src, job.key, inserted=inserted,
        known=n - inserted, quasi_changed=int(stats["quasi_changed"]) if last else 0,
        celled=int(stats["celled"]), changed_keys=changed_keys,
    )  # fmt: skip


def newly_published(session: Session, matches: Mapping[str, str]) -> int:
    """How many records of ``_sqlanon_read`` the plan publishes that the family's last
    version did not publish."""
    return int(session.query(render_sql(session, "ke_engine_newly_published", **matches))[0][0])


def write_state(
    session: Session,
    job: Job,
    matches: Mapping[str, str],
    columns: Mapping[str, str],
    cells: Cells,
    ghosts: bool,
) -> None:
    """Store the members (and ``ghosts``' from ``_sqlanon_ghost_members``), the values
    of records new to a cell (each constrained attribute read as ``columns[a]``) and
    every cell's requirement as this version."""
    family, version, scope = job.family, job.version, job.scope
    session.execute(render_sql(session, "ke_engine_members", **matches))
    if ghosts:
        session.execute(sqltext.load(session.dialect, "write_ghost_members"))
    spans.stable_cell_ids(
        session, None if scope.last is None else (scope.last.family, scope.last.version)
    )
    spans.store_members(session, family, version)
    for attribute in scope.attributes:
        session.execute(
            render_sql(
                session, "ke_engine_keep", column=session.quote_ident(columns[attribute]), **matches
            ),
            [scope.name, attribute, attribute not in scope.before],
        )
    domains.write_cells(session, family, version, cells)
