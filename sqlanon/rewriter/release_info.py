"""What the rewriter knows about releases: one :class:`ReleaseInfo` per release version.

The rewriter never looks at the database; it is handed a *catalog*, a mapping from every
name an analyst may write in ``FROM`` to the release it means:

- the versioned table name (``adult_ke_v3``) maps to that version;
- the family name (``adult_ke``, the view of the newest version) maps to the newest one.

Backends build it from ``sqlanon.releases`` with :func:`catalog_from_rows`::

    rows = session.query(
        "SELECT family, version, table_name, model, parameters, metrics FROM sqlanon.releases")
    catalog = catalog_from_rows(rows)
    sql = rewrite("SELECT COUNT(*) FROM adult_ke WHERE age > 30", catalog, "duckdb")

Rewritten SQL always reads the versioned table (and its bounds table), never the family
view, so the answer cannot mix two versions if a release lands while it runs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlanon.errors import ConfigError, UnsupportedQueryError

Model = Literal["ke", "lhd"]

#: Schema holding the per-release bounds tables (and the private catalog).
BOUNDS_SCHEMA = "sqlanon"

_KEY_COLUMN: dict[str, str] = {"ke": "group_id", "lhd": "class_id"}

#: The column a release with ghosts adds: per row for (k,e) (true on ghost rows, whose
#: quasi columns are NULL), per class for lHD (the number of ghost rows in the class).
GHOST_COLUMN: dict[str, str] = {"ke": "ghost", "lhd": "class_ghosts"}


@dataclass(frozen=True)
class LabelDomain:
    """What each published label of one lHD quasi column may stand for.

    ``leaves[label]`` is the set of raw values (as text) under the label in an ARX
    hierarchy; ``intervals[label]`` is ``(low, high)`` for a numeric widths hierarchy:
    ``[low, high)``, ``low == high`` for a raw number, ``(-inf, inf)`` for ``*``. Labels
    in neither are treated as unknown (a predicate on them may or may not hold).
    Hierarchies are public generalization metadata, so analysts may see all of this.

    ``nulls``: the release published NULL values of the column (release metric
    ``null_quasi``). A NULL value has a branch of its own in every hierarchy (NULL below
    the top, ``*`` at the top), so a NULL label stands for NULL exactly and ``*`` may
    stand for NULL too.
    """

    leaves: Mapping[str, frozenset[str]] = field(default_factory=dict)
    intervals: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    nulls: bool = False


@dataclass(frozen=True)
class ReleaseInfo:
    """One release version as the rewriter sees it.

    ``table`` is the release table, in ``schema`` when the catalog names one (PostgreSQL:
    found whatever the analyst's search path), else found through the search path;
    ``bounds_table`` is the name of the (k,e) bounds table inside schema ``sqlanon``
    (``None`` for lHD releases). ``quasi`` and ``sensitive`` are the published column
    names, spelled as in the database. ``domains`` (lHD only) maps each quasi column to
    its :class:`LabelDomain`; without it lHD queries are refused.

    ``ghosts`` is the number of ghost rows (deleted records that stay members of their
    group or class, MODELS.md "Changing tables"); when positive the release table has
    the column :attr:`ghost_column` and interval answers count real rows only.

    ``source`` is the private table the release was made from (parameters ``"source"``,
    ``schema.table`` or ``table``): a query may join public data, never that table.

    ``retired``: the owner no longer serves this version (``sqlanon.retire``); a query
    naming it is refused (:func:`lookup` callers use :func:`served`).
    """

    family: str
    version: int
    table: str
    model: Model
    quasi: tuple[str, ...]
    sensitive: tuple[str, ...]
    bounds_table: str | None = None
    domains: Mapping[str, LabelDomain] | None = field(default=None, compare=False)
    ghosts: int = 0
    schema: str | None = None
    bounds_schema: str = BOUNDS_SCHEMA
    source: str | None = field(default=None, compare=False)
    retired: bool = False

    def __post_init__(self) -> None:
        if self.model not in _KEY_COLUMN:
            raise ConfigError(
                f"release {self.table!r}: model must be 'ke' or 'lhd', got {self.model!r}"
            )
        if self.ghosts < 0:
            raise ConfigError(f"release {self.table!r}: ghosts must be >= 0, got {self.ghosts}")
        if self.ghosts and self.ghost_column in (*self.quasi, *self.sensitive):
            raise ConfigError(
                f"release {self.table!r} has ghosts, so its column {self.ghost_column!r} "
                "cannot also be a published attribute"
            )
        object.__setattr__(self, "quasi", tuple(self.quasi))
        object.__setattr__(self, "sensitive", tuple(self.sensitive))
        if self.model == "ke":
            if len(self.sensitive) != 1:
                raise ConfigError(
                    f"(k,e) release {self.table!r} needs exactly one sensitive column, "
                    f"got {list(self.sensitive)}"
                )
            if self.bounds_table is None:
                raise ConfigError(f"(k,e) release {self.table!r} needs its bounds table")

    @property
    def key_column(self) -> str:
        """The public grouping column: ``group_id`` for (k,e), ``class_id`` for lHD."""
        return _KEY_COLUMN[self.model]

    @property
    def ghost_column(self) -> str:
        """``ghost`` for (k,e), ``class_ghosts`` for lHD (present only when ghosts > 0)."""
        return GHOST_COLUMN[self.model]


Catalog = Mapping[str, ReleaseInfo]


def _names(value: Any, what: str, table: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"release {table!r}: parameters.{what} must be a list of column names")


def _json_object(value: Any, what: str, table: str) -> Mapping[str, Any] | None:
    """``value`` decoded (JSON text or an already decoded dict); None for SQL NULL."""
    if value is None:
        return None
    decoded = json.loads(value) if isinstance(value, str | bytes) else value
    if not isinstance(decoded, Mapping):
        raise ConfigError(f"release {table!r}: {what} must be a JSON object")
    return decoded


def _ghosts(metrics: Any, table: str) -> int:
    found = (_json_object(metrics, "metrics", table) or {}).get("ghosts") or 0
    if isinstance(found, bool) or not isinstance(found, int | float) or found != int(found):
        raise ConfigError(f"release {table!r}: metrics.ghosts must be an integer, got {found!r}")
    return int(found)


def _retired(value: Any, table_name: Any) -> bool:
    if value is None or value in (True, False):
        return bool(value)
    raise ConfigError(f"release {table_name!r}: retired must be true or false, got {value!r}")


def catalog_from_rows(
    rows: Iterable[Sequence[Any]],
    domains: Mapping[str, Mapping[str, LabelDomain]] | None = None,
) -> dict[str, ReleaseInfo]:
    """Build the rewriter's catalog from rows of ``sqlanon.releases``.

    Each row is ``(family, version, table_name, model, parameters[, metrics[,
    retired]])``;
    ``parameters`` is the JSON text (or an already decoded dict) holding ``"quasi"`` and
    ``"sensitive"``, each a list of column names (a single name is accepted for
    ``"sensitive"``). ``metrics`` (JSON text, dict or NULL) gives ``"ghosts"``, the number
    of ghost rows in the release (absent or 0: none, and no ghost column). The bounds table
    of a (k,e) release is ``sqlanon."<table_name>_bounds"``.

    ``domains`` maps an lHD release's table name to its quasi columns' label domains
    (see :func:`label_domain`).

    Returns a dict keyed by every versioned table name and by every family name (mapped
    to its newest version).
    """
    catalog: dict[str, ReleaseInfo] = {}
    newest: dict[str, ReleaseInfo] = {}
    for row in rows:
        if len(row) not in (5, 6, 7):
            raise ConfigError(
                "a catalog row is (family, version, table_name, model, parameters[, metrics"
                f"[, retired]]); got {len(row)} values"
            )
        family, version, table_name, model, parameters = row[:5]
        params = _json_object(parameters, "parameters", table_name)
        if params is None:
            raise ConfigError(f"release {table_name!r}: parameters must be a JSON object")
        for key in ("quasi", "sensitive"):
            if key not in params:
                raise ConfigError(f"release {table_name!r}: parameters lack {key!r}")
        info = ReleaseInfo(
            family=str(family),
            version=int(version),
            table=str(table_name),
            model=model,
            quasi=_names(params["quasi"], "quasi", table_name),
            sensitive=_names(params["sensitive"], "sensitive", table_name),
            bounds_table=f"{table_name}_bounds" if model == "ke" else None,
            domains=(domains or {}).get(str(table_name)) if model == "lhd" else None,
            ghosts=_ghosts(row[5] if len(row) >= 6 else None, table_name),
            schema=params["schema"] if isinstance(params.get("schema"), str) else None,
            bounds_schema=str(params.get("bounds_schema") or BOUNDS_SCHEMA),
            source=str(params["source"]) if params.get("source") else None,
            retired=_retired(row[6] if len(row) == 7 else False, table_name),
        )
        catalog[info.table] = info
        if info.family not in newest or newest[info.family].version < info.version:
            newest[info.family] = info
    for family, info in newest.items():
        if family in catalog and catalog[family] is not info:
            raise ConfigError(f"family name {family!r} is also the name of a release table")
        catalog[family] = info
    return catalog


def private_names(catalog: Catalog) -> frozenset[str]:
    """Lower-case names no analyst query may read besides a release itself: every name
    the catalog knows (releases, families), every bounds table and every release's
    source table (by its last dotted part, whatever the schema)."""
    found: set[str] = set()
    for name, info in catalog.items():
        found |= {name.lower(), info.table.lower()}
        if info.bounds_table:
            found.add(info.bounds_table.lower())
        if info.source:
            found.add(info.source.rsplit(".", 1)[-1].strip('"').lower())
    return frozenset(found)


def lookup(catalog: Catalog, name: str) -> ReleaseInfo | None:
    """The release ``name`` refers to: exact match first, then case-insensitive."""
    if name in catalog:
        return catalog[name]
    folded = [info for key, info in catalog.items() if key.lower() == name.lower()]
    if len({id(info) for info in folded}) == 1:
        return folded[0]
    return None


def served(info: ReleaseInfo | None) -> ReleaseInfo | None:
    """``info`` as :func:`lookup` found it; refused when its version is retired."""
    if info is not None and info.retired:
        raise UnsupportedQueryError(
            f"version {info.version} of family {info.family!r} ({info.table}) is retired: "
            f"its owner no longer serves it; query a served version, or {info.family!r} "
            "for the newest"
        )
    return info


def _interval(label: str) -> tuple[float, float] | None:
    """``[a, b)`` -> (a, b); ``*`` -> (-inf, inf); a number -> (x, x); else None."""
    text = label.strip()
    if text == "*":
        return (-math.inf, math.inf)
    if text.startswith("[") and text.endswith(")") and "," in text:
        low, high = text[1:-1].split(",", 1)
        try:
            return (float(low), float(high))
        except ValueError:
            return None
    try:
        value = float(text)
    except ValueError:
        return None
    return (value, value) if math.isfinite(value) else None


def label_domain(
    hierarchy_rows: Iterable[Sequence[Any]] = (),
    published: Iterable[str | None] = (),
    nulls: bool = False,
) -> LabelDomain:
    """The :class:`LabelDomain` of one quasi column.

    ``hierarchy_rows`` are ``(value, level, label)`` rows of an ARX hierarchy (from
    ``sqlanon.hierarchies``); without them the column has a numeric widths hierarchy and
    the ``published`` labels are parsed as intervals. A label text found at several
    levels stands for the union of its leaves (a superset keeps the bounds sound).
    ``nulls``: the release published NULL values of the column.
    """
    leaves: dict[str, set[str]] = {}
    for value, _level, label in hierarchy_rows:
        leaves.setdefault(str(label), set()).add(str(value))
    if leaves:
        return LabelDomain(leaves={k: frozenset(v) for k, v in leaves.items()}, nulls=nulls)
    intervals = {}
    for label in published:
        parsed = None if label is None else _interval(str(label))
        if parsed is not None:
            intervals[str(label)] = parsed
    return LabelDomain(intervals=intervals, nulls=nulls)


def null_quasi(metrics: Any, table: str) -> frozenset[str]:
    """The quasi columns a release published NULL values of (its metric ``null_quasi``;
    ``metrics`` as in :func:`catalog_from_rows`)."""
    found = (_json_object(metrics, "metrics", table) or {}).get("null_quasi") or []
    if not isinstance(found, list) or not all(isinstance(c, str) for c in found):
        raise ConfigError(f"release {table!r}: metrics.null_quasi must list column names")
    return frozenset(found)
