"""The Python face of sqlanon: the same verbs as the SQL functions, on any connection."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlanon import errors, intervals, rewriter
from sqlanon.duckdb import export as duckdb_export
from sqlanon.duckdb import register as duckdb_register
from sqlanon.duckdb.session import DuckDBSession
from sqlanon.errors import ConfigError
from sqlanon.models.lhd_defer import DEFAULT_POLICY as DEFAULT_LHD_POLICY
from sqlanon.postgres.session import PsycopgSession
from sqlanon.release import ke_release, lhd_release
from sqlanon.release import preview as previewing
from sqlanon.release import retire as retiring
from sqlanon.session import Session
from sqlanon.spark import attach as spark_attach
from sqlanon.spark.session import SparkSqlSession
from sqlanon.state import audit_reads, capture, catalog, deletions, hierarchies


class _CallbackFailed(Exception):
    """What the caller's own ``progress`` callback raised, carried out of the verb as it
    is: it is not a bug of sqlanon's."""

    def __init__(self, raised: Exception) -> None:
        super().__init__(raised)
        self.raised = raised


def _callers(progress: Callable[[str, int], None] | None) -> Callable[[str, int], None] | None:
    if progress is None:
        return None

    def call(stage: str, count: int) -> None:
        try:
            progress(stage, count)
        except Exception as exc:
            raise _CallbackFailed(exc) from exc

    return call


@contextmanager
def _reported(verb: str) -> Iterator[None]:
    """Run verb ``verb``: a bug inside it reaches the caller as an
    :class:`~sqlanon.errors.InternalError` that says to report it (the verb's
    transaction has rolled back: nothing was written)."""
    try:
        with errors.reported(f"sqlanon.{verb}", passing=(_CallbackFailed,)):
            yield
    except _CallbackFailed as exc:
        raise exc.raised from None


def install(con: Any) -> list[str]:
    """Make sqlanon usable on a DuckDB connection: apply pending catalog migrations and
    register the SQL functions on it (idempotent; call it on every new connection).
    On a ``pyspark.sql.SparkSession``: create database ``sqlanon`` and its catalog
    tables (idempotent). For PostgreSQL use ``sqlanon install-postgres URL`` (see README)."""
    if spark_attach.is_spark_session(con):
        return spark_attach.install(con)

    return duckdb_register.install(con)


@contextmanager
def session_for(con: Any) -> Iterator[Session]:
    """A :class:`Session` for a DuckDB connection, a psycopg connection or a
    ``pyspark.sql.SparkSession``."""
    module = type(con).__module__
    if module.startswith("duckdb") or module.startswith("_duckdb"):
        session = DuckDBSession(con)
        try:
            yield session
        finally:
            session.close()
    elif module.startswith("psycopg"):
        psycopg_session = PsycopgSession(con)
        with psycopg_session.transaction():  # pins the search path (postgres.session)
            yield psycopg_session
    elif spark_attach.is_spark_session(con):
        spark_session = SparkSqlSession(con)
        try:
            yield spark_session
        finally:
            spark_session.close()
    else:
        raise ConfigError(
            "expected a duckdb or psycopg connection or a pyspark SparkSession, "
            f"got {type(con).__name__}"
        )


def _require_writable(session: Session, verb: str) -> None:
    """Refuse a writing verb on a read-only DuckDB connection, before it reads anything."""
    if isinstance(session, DuckDBSession):
        session.refuse_read_only(verb)


def release_ke(
    con: Any,
    source: str,
    family: str,
    *,
    key: str,
    sensitive: str,
    quasi: Sequence[str],
    k: int,
    e: float,
    policy: str = "auto",
    progress: Callable[[str, int], None] | None = None,
    domain: str | None = None,
    dry_run: bool = False,
    dataset: str | None = None,
) -> dict[str, Any]:
    """Publish the next (k,e)-anonymous version of ``family``; see
    :func:`sqlanon.release.ke_release.release_ke`
    (``progress(stage, count)`` is called as rows are read, grouped and written;
    ``domain`` names the people behind the source, README "Domains"; ``dry_run``: plan
    and refuse as the release would, write nothing, return what it would return;
    ``dataset``: what the source is a copy, view or model of, default its table's name:
    a new domain is named ``schema.dataset``, and lHD releases look their hierarchies up
    under it)."""
    with _reported("release_ke"), session_for(con) as session:
        _require_writable(session, "release_ke")
        return ke_release.release_ke(
            session,
            source,
            family,
            key=key,
            sensitive=sensitive,
            quasi=quasi,
            k=k,
            e=e,
            policy=policy,
            progress=_callers(progress),
            domain_name=domain,
            dry_run=dry_run,
            dataset=dataset,
        )


def release_lhd(
    con: Any,
    source: str,
    family: str,
    *,
    key: str,
    quasi: Sequence[str],
    sensitive: Sequence[str],
    l: int,  # noqa: E741
    algorithm: str = "auto",
    max_suppression: float = 0.05,
    progress: Callable[[str, int], None] | None = None,
    domain: str | None = None,
    dry_run: bool = False,
    recoding: str = "local",
    dataset: str | None = None,
    policy: str = DEFAULT_LHD_POLICY,
) -> dict[str, Any]:
    """Publish the next lHD-diverse version of ``family``; see
    :func:`sqlanon.release.lhd_release.release_lhd` (``progress``, ``dry_run``,
    ``dataset`` as for :func:`release_ke`: the hierarchies of the quasi-identifiers are
    the ones loaded under ``dataset``, e.g. ``load_hierarchies(con, "adult", folder)``
    then ``release_lhd(con, "adult_copy", ..., dataset="adult")``; ``recoding='global'``:
    one generalization level per quasi-identifier for the whole release, so every label
    of a column is of one level; ``policy``: ``publish``, ``auto`` or ``defer``, whether
    appended records may be held back while they can only form wide classes)."""
    with _reported("release_lhd"), session_for(con) as session:
        _require_writable(session, "release_lhd")
        return lhd_release.release_lhd(
            session,
            source,
            family,
            key=key,
            quasi=quasi,
            sensitive=sensitive,
            l=l,
            algorithm=algorithm,
            max_suppression=max_suppression,
            progress=_callers(progress),
            domain_name=domain,
            dry_run=dry_run,
            recoding=recoding,
            dataset=dataset,
            policy=policy,
        )


def preview(
    con: Any,
    source: str,
    family: str,
    model: str = "ke",
    sweep: Mapping[str, Sequence[Any]] | None = None,
    **params: Any,
) -> list[dict[str, Any]]:
    """One dry run of ``family``'s next version per setting of ``sweep``; one row per
    setting, in order (the setting, then rows published, held back, suppressed,
    chain held back and the planner's utility; ``refused``: why a setting would be
    refused). ``params``: the release's other arguments (``domain`` included).

    >>> sqlanon.preview(con, "adult", "adult_ke", "ke", {"k": [3, 5, 10]},
    ...                 key="id", sensitive="capital_loss", quasi=["age"], e=20)  # doctest: +SKIP
    """
    with _reported("preview"), session_for(con) as session:
        _require_writable(session, "preview")
        if "domain" in params:
            params["domain_name"] = params.pop("domain")
        return previewing.preview(session, source, family, model=model, sweep=sweep or {}, **params)


def erase(con: Any, source: str) -> dict[str, Any]:
    """Apply the deletions from ``source`` to sqlanon's state now, without publishing a
    version (the data owner's erasure): every record a release of its domain published
    and that is gone from ``source`` becomes a ghost (its key is replaced everywhere in
    schema ``sqlanon``; the next release publishes the ghost), a gone record no release
    published is forgotten. Returns ``{"source", "domain", "deleted", "ghosts",
    "forgotten"}``; see :func:`sqlanon.state.deletions.erase` for what is refused."""
    with _reported("erase"), session_for(con) as session:
        _require_writable(session, "erase")
        return deletions.erase(session, source)


def retire(con: Any, family: str, keep: int) -> dict[str, Any]:
    """Stop serving every version of ``family`` but its newest ``keep`` (at least 1):
    their views (and bounds) go, and the rows no served version needs; the private
    state and catalog rows stay, so later releases and the audit compose with them as
    before (a version once published stays known). Again with the same ``keep``: no-op.
    Returns ``{"family", "served", "retired", "history_rows_deleted",
    "bounds_rows_deleted"}``; see :mod:`sqlanon.release.retire`.

    >>> sqlanon.retire(con, "adult_ke", keep=4)  # doctest: +SKIP
    """
    with _reported("retire"), session_for(con) as session:
        _require_writable(session, "retire")
        return retiring.retire(session, family, keep)


def capture_changes(con: Any, source: str, key: str | None = None) -> dict[str, Any]:
    """PostgreSQL: turn change capture on for ``source`` (a plain table the caller
    owns), keyed by ``key`` (default: its releases' key). Triggers then record the keys
    that leave it, and a later release reads its deleted records from them instead of
    the whole source (same results); writers pay for it (docs/POSTGRES.md, "Change
    capture"). Idempotent. DuckDB and Spark refuse it with a ConfigError: they read the
    whole source in one pass. See :mod:`sqlanon.state.capture`."""
    with _reported("capture_changes"), session_for(con) as session:
        _require_writable(session, "capture_changes")
        return capture.capture_changes(session, source, key)


def stop_capture(con: Any, source: str) -> dict[str, Any]:
    """PostgreSQL: turn change capture off for ``source`` (its triggers and what they
    captured go); later releases read the whole source again."""
    with _reported("stop_capture"), session_for(con) as session:
        _require_writable(session, "stop_capture")
        return capture.stop_capture(session, source)


def load_hierarchies(con: Any, dataset: str, folder: str | None = None) -> dict[str, Any]:
    """Store the ARX hierarchy CSVs ``<dataset>_hierarchy_<attr>.csv`` of ``folder``
    (none: the ones bundled with sqlanon, for ``dataset`` ``adult``)."""
    with _reported("load_hierarchies"), session_for(con) as session:
        _require_writable(session, "load_hierarchies")
        return hierarchies.load_hierarchies(session, dataset, folder)


def hierarchy_widths(
    con: Any, dataset: str, attribute: str, widths: Sequence[float]
) -> dict[str, Any]:
    """Store a numeric interval hierarchy (widths, e.g. ``[5, 10, 20]``) for a column."""
    with _reported("hierarchy_widths"), session_for(con) as session:
        _require_writable(session, "hierarchy_widths")
        return hierarchies.hierarchy_widths(session, dataset, attribute, widths)


def audit(con: Any, family: str, records: bool = False) -> list[dict[str, Any]]:
    """Replay the attacker of ``family``'s domain (every release of the people behind
    its source, every family, both models); one dict per release of the domain, in
    order (``sqlanon.audit``). ``records``: also the exposed keys (owner only)."""
    with _reported("audit"), session_for(con) as session:
        return audit_reads.audit_family(session, family, records=records)


def export(
    con: Any, name: str, path: str | os.PathLike[str], format: str = "duckdb"
) -> dict[str, Any]:  # noqa: A002
    """Write the analyst hand-off of family or domain ``name`` to ``path``: every version
    of the family (or of every family of the domain), their bounds tables, the family
    views and the public catalog the rewriter needs; nothing private (no source, keys,
    ``sqlanon.members``, kept values, cells or links). ``format``: ``"duckdb"`` (a
    database file) or ``"parquet"`` (a folder, :func:`attach_export` opens it). Again to
    the same path adds the new versions. ``con``: a DuckDB or psycopg connection or a
    ``pyspark.sql.SparkSession`` (their tables are read through it, written with DuckDB).

    >>> sqlanon.export(con, "adult_ke", "adult_ke.duckdb")  # doctest: +SKIP
    """
    with _reported("export"), session_for(con) as session:
        duckdb_con = con if isinstance(session, DuckDBSession) else None
        return duckdb_export.export(session, name, path, format, con=duckdb_con)


def attach_export(con: Any, folder: str | os.PathLike[str]) -> list[str]:
    """Open the Parquet export ``folder`` on DuckDB connection ``con`` (a new one, e.g.
    ``duckdb.connect()``) as its DuckDB file would open, and register the query
    functions: :func:`interval` then answers as on the owner's database. Returns the
    families."""
    with _reported("attach_export"):
        families = duckdb_export.attach_export(con, folder)
        duckdb_register.install(con)
        return families


def set_limit(con: Any, name: str, value: int | None) -> dict[str, int]:
    """Set one bound on analyst queries, checked before the rewriter parses a query (the
    data owner's; ``None`` restores the default). Names and defaults:
    ``max_query_chars`` 50,000 characters, ``max_query_tokens`` 10,000 tokens,
    ``max_query_depth`` 32 levels of parentheses, CASE or NOT. Returns every limit now.

    >>> sqlanon.set_limit(con, "max_query_tokens", 20_000)  # doctest: +SKIP
    """
    with _reported("set_limit"), session_for(con) as session:
        _require_writable(session, "set_limit")
        return dataclasses.asdict(catalog.set_limit(session, name, value))


def rewrite(sql: str, catalog: Any, dialect: str = "duckdb") -> str:
    """The interval SQL for an analyst's query (for inspection, or to run elsewhere).

    ``catalog`` is either a mapping built with :func:`sqlanon.rewriter.catalog_from_rows`
    or a connection whose ``sqlanon.releases`` is read; ``dialect`` is any sqlglot dialect.
    """
    with _reported("rewrite"):
        if isinstance(catalog, Mapping):
            return rewriter.rewrite(sql, catalog, dialect)
        with session_for(catalog) as session:
            return intervals.session_rewrite(session, sql, dialect)


def interval(con: Any, sql: str) -> list[dict[str, Any]]:
    """Run an analyst's aggregate query as interval SQL; one dict per output row with
    ``<name>_low``, ``<name>_high`` and ``<name>_est`` per aggregate."""
    with _reported("interval"), session_for(con) as session:
        return session.query_dicts(intervals.session_rewrite(session, sql))
