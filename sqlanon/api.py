"""The Python face of sqlanon: the same verbs as the SQL functions, on any connection."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlanon import release
from sqlanon.backends.base import Session
from sqlanon.errors import ConfigError
from sqlanon.rewrite.limits import QueryLimits


def install(con: Any) -> list[str]:
    """Make sqlanon usable on a DuckDB connection: apply pending catalog migrations and
    register the SQL functions on it (idempotent; call it on every new connection).
    For PostgreSQL use ``sqlanon install-postgres URL`` (see README)."""
    from sqlanon.backends.duckdb import install as install_duckdb

    return install_duckdb(con)


@contextmanager
def session_for(con: Any) -> Iterator[Session]:
    """A :class:`Session` for a DuckDB connection or a psycopg connection."""
    module = type(con).__module__
    if module.startswith("duckdb") or module.startswith("_duckdb"):
        from sqlanon.backends.duckdb import DuckDBSession

        session = DuckDBSession(con)
        try:
            yield session
        finally:
            session.close()
    elif module.startswith("psycopg"):
        from sqlanon.backends.postgres import PsycopgSession

        yield PsycopgSession(con)
    else:
        raise ConfigError(f"expected a duckdb or psycopg connection, got {type(con).__name__}")


def _require_writable(session: Session, verb: str) -> None:
    """Refuse a writing verb on a read-only DuckDB connection, before it reads anything."""
    if session.dialect != "duckdb":
        return
    from sqlanon.backends.duckdb import DuckDBSession

    if isinstance(session, DuckDBSession) and session.read_only():
        raise ConfigError(
            f"{verb} writes to the database, but this DuckDB connection is read-only "
            "(duckdb.connect(..., read_only=True)); the data owner runs it on a writable one"
        )


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
    seed: int | None = None,
    progress: Callable[[str, int], None] | None = None,
    domain: str | None = None,
) -> dict[str, Any]:
    """Publish the next (k,e)-anonymous version of ``family``; see :func:`release.release_ke`
    (``progress(stage, count)`` is called as rows are read, grouped and written;
    ``domain`` names the people behind the source, README "Domains")."""
    with session_for(con) as session:
        _require_writable(session, "release_ke")
        return release.release_ke(
            session,
            source,
            family,
            key=key,
            sensitive=sensitive,
            quasi=quasi,
            k=k,
            e=e,
            policy=policy,
            seed=seed,
            progress=progress,
            domain_name=domain,
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
    seed: int | None = None,
    progress: Callable[[str, int], None] | None = None,
    domain: str | None = None,
) -> dict[str, Any]:
    """Publish the next lHD-diverse version of ``family``; see
    :func:`sqlanon.release_lhd.release_lhd` (``progress`` as for :func:`release_ke`)."""
    # sqlanon.release_lhd names this function in the package, so import from the module
    from sqlanon.release_lhd import release_lhd as release

    with session_for(con) as session:
        _require_writable(session, "release_lhd")
        return release(
            session,
            source,
            family,
            key=key,
            quasi=quasi,
            sensitive=sensitive,
            l=l,
            algorithm=algorithm,
            max_suppression=max_suppression,
            seed=seed,
            progress=progress,
            domain_name=domain,
        )


def erase(con: Any, source: str) -> dict[str, Any]:
    """Apply the deletions from ``source`` to sqlanon's state now, without publishing a
    version (the data owner's erasure): every record a release of its domain published
    and that is gone from ``source`` becomes a ghost (its key is replaced everywhere in
    schema ``sqlanon``; the next release publishes the ghost), a gone record no release
    published is forgotten. Returns ``{"source", "domain", "deleted", "ghosts",
    "forgotten"}``; see :func:`sqlanon.live.erase` for what is refused."""
    from sqlanon.live import erase as erase_deletions

    with session_for(con) as session:
        _require_writable(session, "erase")
        return erase_deletions(session, source)


def load_hierarchies(con: Any, dataset: str, folder: str | None = None) -> dict[str, Any]:
    """Store the ARX hierarchy CSVs ``<dataset>_hierarchy_<attr>.csv`` of ``folder``
    (none: the ones bundled with sqlanon, for ``dataset`` ``adult``)."""
    from sqlanon.release_lhd import load_hierarchies as load

    with session_for(con) as session:
        _require_writable(session, "load_hierarchies")
        return load(session, dataset, folder)


def hierarchy_widths(
    con: Any, dataset: str, attribute: str, widths: Sequence[float]
) -> dict[str, Any]:
    """Store a numeric interval hierarchy (widths, e.g. ``[5, 10, 20]``) for a column."""
    from sqlanon.release_lhd import hierarchy_widths as store

    with session_for(con) as session:
        _require_writable(session, "hierarchy_widths")
        return store(session, dataset, attribute, widths)


def audit(con: Any, family: str, records: bool = False) -> list[dict[str, Any]]:
    """Replay the attacker of ``family``'s domain (every release of the people behind
    its source, every family, both models); one dict per release of the domain, in
    order (``sqlanon.audit``). ``records``: also the exposed keys (owner only)."""
    from sqlanon.audit import audit_family

    with session_for(con) as session:
        return audit_family(session, family, records=records)


def release_catalog(session: Session) -> dict[str, Any]:
    """The rewriter's view of every release in this database (names analysts may use)."""
    return _catalog(session, _release_rows(session))


def _release_rows(session: Session) -> tuple[tuple[Any, ...], ...]:
    """``(family, version, table_name, model, parameters JSON, metrics JSON)`` of every
    release, by family and version (the rewriter reads ``ghosts`` from the metrics)."""
    if session.dialect == "postgres":
        # Analysts may not read sqlanon.releases: a SECURITY DEFINER function shows them
        # only the names and columns of each release, and its number of ghost rows.
        sql = (
            "SELECT family, version, table_name, model, CAST(jsonb_build_object("
            "'quasi', quasi, 'sensitive', sensitive) AS text) AS parameters, "
            "CAST(jsonb_build_object('ghosts', ghosts) AS text) AS metrics "
            "FROM sqlanon.release_catalog()"
        )
    else:
        sql = (
            "SELECT family, version, table_name, model, CAST(parameters AS VARCHAR), "
            "CAST(metrics AS VARCHAR) FROM sqlanon.releases"
        )
    # sorted here (by family, version): cheaper than ORDER BY, and a stable cache key
    return tuple(sorted(tuple(r) for r in session.query(sql)))


def _catalog(session: Session, rows: Sequence[Sequence[Any]]) -> dict[str, Any]:
    from sqlanon.rewrite import catalog_from_rows

    if not any(r[3] == "lhd" for r in rows):
        return catalog_from_rows(rows)
    if session.dialect == "postgres":
        # ... nor sqlanon.hierarchies: another one shows the lHD releases' hierarchies.
        found = session.query(
            "SELECT table_name, quasi, value, level, label FROM sqlanon.release_hierarchies()"
            " WHERE value IS NOT NULL"
        )
    else:
        found = _lhd_hierarchy_rows(session, rows)
    return catalog_from_rows(rows, _lhd_domains(session, rows, found))


def session_rewrite(
    session: Session,
    sql: str,
    dialect: str | None = None,
    checkpoint: Callable[[], None] | None = None,
) -> str:
    """The interval SQL of ``sql`` against the releases of ``session``'s database.

    Without lHD releases the catalog is just the release rows, so the SQL is cached on
    (query, dialect, rows): a repeated query costs one read of ``sqlanon.releases``, and
    any new release changes the rows. lHD catalogs also depend on hierarchies and
    published labels and are rebuilt on every call. ``checkpoint`` is passed to the
    rewriter (called between its steps); give the same function each time, it is part
    of the cache key.
    """
    from sqlanon.catalog import query_limits
    from sqlanon.rewrite import rewrite as rewrite_sql

    dialect = dialect or session.dialect
    limits = query_limits(session)  # the rewriter checks them before it parses
    rows = _release_rows(session)
    if any(r[3] == "lhd" for r in rows):
        return rewrite_sql(sql, _catalog(session, rows), dialect, limits, checkpoint)
    return _rewrite_ke(sql, dialect, rows, limits, checkpoint)


@functools.lru_cache(maxsize=256)
def _rewrite_ke(
    sql: str,
    dialect: str,
    rows: tuple[tuple[Any, ...], ...],
    limits: QueryLimits,
    checkpoint: Callable[[], None] | None = None,
) -> str:
    from sqlanon.rewrite import catalog_from_rows
    from sqlanon.rewrite import rewrite as rewrite_sql

    return rewrite_sql(sql, catalog_from_rows(rows), dialect, limits, checkpoint)


def set_limit(con: Any, name: str, value: int | None) -> dict[str, int]:
    """Set one bound on analyst queries, checked before the rewriter parses a query (the
    data owner's; ``None`` restores the default). Names and defaults:
    ``max_query_chars`` 50,000 characters, ``max_query_tokens`` 10,000 tokens,
    ``max_query_depth`` 32 levels of parentheses, CASE or NOT. Returns every limit now.

    >>> sqlanon.set_limit(con, "max_query_tokens", 20_000)  # doctest: +SKIP
    """
    import dataclasses

    from sqlanon.catalog import set_limit as store

    with session_for(con) as session:
        _require_writable(session, "set_limit")
        return dataclasses.asdict(store(session, name, value))


def _quasi_columns(parameters: Any) -> list[str]:
    import json

    quasi = json.loads(parameters).get("quasi") or []
    return [quasi] if isinstance(quasi, str) else list(quasi)


def _lhd_hierarchy_rows(session: Session, rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """``(table_name, quasi column, value, level, label)`` for every ARX hierarchy row of
    every lHD release's quasi column, read from ``sqlanon.hierarchies`` (DuckDB; on
    PostgreSQL ``sqlanon.release_hierarchies()`` gives the same rows): the dataset is
    the release source's table name, attributes match columns as in
    :func:`sqlanon.release_lhd.attribute_name`."""
    import json

    from sqlanon.release_lhd import attribute_name

    by_attribute: dict[tuple[str, str], list[tuple[Any, Any, Any]]] = {}
    for dataset, attribute, value, level, label in session.query(
        "SELECT dataset, attribute, value, level, label FROM sqlanon.hierarchies"
    ):
        key = (str(dataset), attribute_name(str(attribute)))
        by_attribute.setdefault(key, []).append((value, level, label))
    found = []
    for _family, _version, table, model, parameters, *_metrics in rows:
        if model != "lhd":
            continue
        dataset = str(json.loads(parameters).get("source", "")).rsplit(".", 1)[-1]
        for column in _quasi_columns(parameters):
            for value, level, label in by_attribute.get((dataset, attribute_name(column)), []):
                found.append((table, column, value, level, label))
    return found


def _lhd_domains(
    session: Session, rows: Sequence[Sequence[Any]], hierarchy_rows: Iterable[Sequence[Any]]
) -> dict[str, Any]:
    """Per lHD release table, per quasi column: what its published labels may stand for.

    ``hierarchy_rows`` are ``(table_name, quasi column, value, level, label)`` rows of
    the columns' ARX hierarchies (public metadata); a column without any has a numeric
    widths hierarchy, whose labels are read from the release table itself."""
    from sqlanon.rewrite.catalog import label_domain

    found: dict[tuple[str, str], list[tuple[Any, Any, Any]]] = {}
    for table, column, value, level, label in hierarchy_rows:
        found.setdefault((str(table), str(column)), []).append((value, level, label))
    q = session.quote_ident
    # The owner may drop old version tables (README, "Changing tables"): skip them.
    present = {
        str(r[0])
        for r in session.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
    }
    domains: dict[str, Any] = {}
    for _family, _version, table, model, parameters, *_metrics in rows:
        if model != "lhd" or str(table) not in present:
            continue
        per_column = {}
        for column in _quasi_columns(parameters):
            if (str(table), column) in found:
                per_column[column] = label_domain(found[(str(table), column)])
            else:
                labels = session.query(f"SELECT DISTINCT {q(column)} FROM {q(table)}")  # noqa: S608
                per_column[column] = label_domain(published=[r[0] for r in labels])
        domains[str(table)] = per_column
    return domains


def rewrite(sql: str, catalog: Any, dialect: str = "duckdb") -> str:
    """The interval SQL for an analyst's query (for inspection, or to run elsewhere).

    ``catalog`` is either a mapping built with :func:`sqlanon.rewrite.catalog_from_rows`
    or a connection whose ``sqlanon.releases`` is read; ``dialect`` is any sqlglot dialect.
    """
    from sqlanon.rewrite import rewrite as rewrite_sql

    if not isinstance(catalog, Mapping):
        with session_for(catalog) as session:
            return session_rewrite(session, sql, dialect)
    return rewrite_sql(sql, catalog, dialect)


def interval(con: Any, sql: str) -> list[dict[str, Any]]:
    """Run an analyst's aggregate query as interval SQL; one dict per output row with
    ``<name>_low``, ``<name>_high`` and ``<name>_est`` per aggregate."""
    with session_for(con) as session:
        return session.query_dicts(session_rewrite(session, sql))
