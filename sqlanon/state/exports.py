"""What an analyst export holds (``sqlanon.export``): the releases of a family or a
domain, their catalog rows with only public fields, and the hierarchies the rewriter
reads for their lHD releases. An allow-list, never a deny-list: a table, a column of
``sqlanon.releases`` or a key of its JSON is exported only if it is named here.

Never exported: the source, keys, ``sqlanon.members``, ``kept_values``, ``cells``,
``links``, ``hierarchy_widths`` (the rewriter reads a widths column's labels from the
release table), ``migrations``, the counts of records a release did not publish
(``held_back``, ``suppressed``, ``source_rows``, the change counts in ``metrics``) and
the key column's name, the releasing role and the domain's constrained attributes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.session import Session
from sqlanon.state import catalog
from sqlanon.state.hierarchies import attribute_name, dataset_of
from sqlanon.state.source import BOUNDS_SCHEMAS, current_schema

#: Keys of ``parameters`` an export keeps: the published columns and the guarantee.
PUBLIC_PARAMETERS = (
    "source",
    "dataset",  # what the lHD hierarchies the rewriter reads are stored under
    "quasi",
    "sensitive",
    "k",
    "e",
    "policy",
    "l",
    "algorithm",
    "max_suppression",
    "recoding",
)
#: Keys of ``metrics`` an export keeps: what the rewriter reads (README "Changing tables").
PUBLIC_METRICS = ("ghosts", "null_quasi")

#: The catalog tables of an export (schema ``sqlanon``); each release adds its table,
#: its bounds table ((k,e)) and its family's view (:func:`allowed_relations`).
CATALOG_TABLES = ("export_info", "releases", "hierarchies", "query_limits")

#: Release table names become file names of a Parquet export: families are checked
#: names (``sqltext.check_family``), and this says so again.
_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


@dataclass(frozen=True)
class ExportedRelease:
    """One release as an export holds it: ``row`` is its public catalog row (the export's
    ``sqlanon.releases`` columns, :data:`RELEASE_COLUMNS`), ``table`` and ``bounds`` the
    owner's ``(schema, name)`` of its table and bounds table (``bounds`` None for lHD)."""

    family: str
    version: int
    table_name: str
    model: str
    row: tuple[Any, ...]
    table: tuple[str, str]
    bounds: tuple[str, str] | None


#: The export's ``sqlanon.releases`` columns, in order (``duckdb/sql/export_schema.sql``).
RELEASE_COLUMNS = (
    "family",
    "version",
    "table_name",
    "model",
    "source",
    "parameters",
    "metrics",
    "created_at",
    "rows_published",
    "groups",
    "domain",
    "seq",
)


def releases_to_export(session: Session, name: object) -> list[ExportedRelease]:
    """Every release of family ``name``, else of domain ``name`` (every family of it),
    in the domain's order; refuses a name that is neither."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"export takes a family or domain name, got {name!r}")
    found = catalog.releases(session, name)
    if not found:
        found = catalog.domain_releases(session, name)
    if not found:
        every = catalog.releases(session)
        families = sorted({r.family for r in every})
        domains = sorted({r.domain for r in every})
        raise ConfigError(
            f"no release family or domain {name!r}; families: {', '.join(families) or 'none'}"
            f"; domains: {', '.join(domains) or 'none'}"
        )
    return [_exported(session, r) for r in sorted(found, key=lambda r: (r.seq, r.version))]


def table_name_ok(name: str) -> bool:
    """Whether ``name`` may name a table of an export (and a file of a Parquet one)."""
    return bool(_TABLE_NAME.match(name.removesuffix("_bounds")))


def _exported(session: Session, release: catalog.Release) -> ExportedRelease:
    if not table_name_ok(release.table_name):
        raise ConfigError(f"release table {release.table_name!r} cannot be exported")
    return ExportedRelease(
        family=release.family,
        version=release.version,
        table_name=release.table_name,
        model=release.model,
        row=public_row(session, release),
        table=(release.schema or current_schema(session), release.table_name),
        bounds=_bounds(session, release) if release.model == "ke" else None,
    )


def _bounds(session: Session, release: catalog.Release) -> tuple[str, str]:
    schema = release.parameters.get("bounds_schema")
    if not isinstance(schema, str):
        schema = BOUNDS_SCHEMAS.get(session.dialect, "sqlanon")
    return schema, release.table_name + "_bounds"


def public_row(session: Session, release: catalog.Release) -> tuple[Any, ...]:
    """The row of ``release`` an export's ``sqlanon.releases`` holds (allow-listed)."""
    parameters = {k: release.parameters[k] for k in PUBLIC_PARAMETERS if k in release.parameters}
    metrics = {k: release.metrics[k] for k in PUBLIC_METRICS if k in release.metrics}
    ((created_at,),) = session.query(
        sqltext.load(session.dialect, "export_created_at"), [release.family, release.version]
    )
    return (
        release.family,
        release.version,
        release.table_name,
        release.model,
        release.source,
        json.dumps(parameters),
        json.dumps(metrics),
        created_at,
        release.rows_published,
        release.groups,
        release.domain,
        release.seq,
    )


def hierarchy_rows(
    session: Session, releases: Sequence[ExportedRelease]
) -> list[tuple[str, str, str, int, str]]:
    """``(dataset, attribute, value, level, label)``: the stored hierarchy rows of every
    quasi column of the lHD releases, as ``sqlanon.intervals`` looks them up (dataset:
    the release's, :func:`dataset_of`; attributes matched as :func:`attribute_name` does). They are
    public: PostgreSQL shows analysts the same rows (README, "Hierarchies are public")."""
    wanted: dict[str, set[str]] = {}
    for release in releases:
        if release.model != "lhd":
            continue
        parameters = json.loads(release.row[5])
        dataset = dataset_of(parameters)
        quasi = parameters.get("quasi") or []
        columns = [quasi] if isinstance(quasi, str) else list(quasi)
        wanted.setdefault(dataset, set()).update(attribute_name(c) for c in columns)
    found = []
    sql = sqltext.load(session.dialect, "lhd_hierarchy_rows")
    for dataset, attributes in sorted(wanted.items()):
        for attribute, value, level, label in session.query(sql, [dataset]):
            if attribute_name(str(attribute)) in attributes:
                found.append((dataset, str(attribute), str(value), int(level), str(label)))
    return found


def query_limit_rows(session: Session) -> list[tuple[str, int]]:
    """The owner's bounds on analyst queries: the export's rewriter applies them too."""
    return [
        (str(n), int(v)) for n, v in session.query("SELECT name, value FROM sqlanon.query_limits")
    ]


def allowed_relations(
    tables: Sequence[str], bounds: Sequence[str], views: Sequence[str]
) -> set[tuple[str, str]]:
    """``(schema, name)`` of everything an export may hold: the catalog tables, each
    release table and family view in ``main``, each bounds table in ``sqlanon``."""
    return (
        {("sqlanon", t) for t in CATALOG_TABLES}
        | {("main", t) for t in [*tables, *views]}
        | {("sqlanon", t + "_bounds") for t in bounds}
    )
