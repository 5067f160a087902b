"""Generalization hierarchies in the catalog: ARX files loaded into
``sqlanon.hierarchies``, numeric widths in ``sqlanon.hierarchy_widths``, and the
hierarchy of each quasi-identifier of an lHD release read back from them.

Hierarchies are stored per dataset and attribute. A release looks them up under its
``dataset``: the source table's name (without schema) unless the release names another
(``dataset := 'adult'`` for a copy, view or dbt model of ``adult``), so one set of files
serves every table of the same data. An attribute matches a column case-insensitively
with ``-`` and ``_`` taken as equal, so ARX's ``adult_hierarchy_marital-status.csv``
serves a column ``marital_status``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.hierarchy import Hierarchy, check_dataset, load_directory
from sqlanon.session import Session
from sqlanon.state import catalog
from sqlanon.state.source import NUMERIC, Source


def attribute_name(name: str) -> str:
    """How attributes and columns are matched: ``Marital-Status`` ~ ``marital_status``."""
    return name.lower().replace("-", "_")


# ARX's hierarchies for UCI Adult, shipped with the package (sqlanon/data/ATTRIBUTION.md).
BUNDLED_HIERARCHIES = Path(__file__).resolve().parents[1] / "data" / "hierarchies"


def bundled_datasets() -> list[str]:
    """The datasets sqlanon bundles hierarchies for (``adult``)."""
    names = (f.name for f in BUNDLED_HIERARCHIES.iterdir())
    return sorted({n.split("_hierarchy_")[0] for n in names if "_hierarchy_" in n})


def load_hierarchies(
    session: Session, dataset: str, folder: str | os.PathLike[str] | None = None
) -> dict[str, Any]:
    """Store every ``<dataset>_hierarchy_<attr>.csv`` of ``folder`` in
    ``sqlanon.hierarchies``, replacing that dataset's rows (and widths of the same
    attributes). Without a folder, the hierarchies bundled with sqlanon for ``dataset``
    (``adult``: ARX's UCI Adult hierarchies). Returns ``{"dataset", "attributes", "rows"}``.

    ``dataset`` is a plain name and only files of that exact name directly in ``folder``
    are read (:func:`sqlanon.hierarchy.load_directory`): on PostgreSQL the folder is on
    the server, read by the server's OS user on the data owner's behalf."""
    dataset = check_dataset(dataset)
    if folder is None:
        bundled = bundled_datasets()
        if dataset not in bundled:
            raise ConfigError(
                f"sqlanon bundles no hierarchies for {dataset!r} (it bundles "
                f"{', '.join(map(repr, bundled))}); give the folder holding your "
                f"{dataset}_hierarchy_<attribute>.csv files"
            )
        folder = BUNDLED_HIERARCHIES
    found = load_directory(folder, dataset)
    rows = [row for h in found.values() for row in h.as_rows()]
    with session.transaction():
        catalog.delete_rows(
            session, "hierarchies", "dataset = $1", [dataset], f"dataset {dataset!r}"
        )
        for attribute in found:
            catalog.delete_rows(
                session,
                "hierarchy_widths",
                "dataset = $1 AND attribute = $2",
                [dataset, attribute],
                f"a hierarchy of attribute {attribute!r} of dataset {dataset!r}",
            )
        columns = list(zip(*rows, strict=True))
        session.load_temp(
            "_sqlanon_hierarchy",
            {
                "attribute": np.array(columns[0], dtype=object),
                "value": np.array(columns[1], dtype=object),
                "level": np.array(columns[2], dtype=np.int64),
                "label": np.array(columns[3], dtype=object),
            },
            {"attribute": "VARCHAR", "value": "VARCHAR", "level": "INTEGER", "label": "VARCHAR"},
        )
        session.execute(sqltext.load(session.dialect, "lhd_store_hierarchy"), [dataset])
        session.execute("DROP TABLE _sqlanon_hierarchy")
    return {"dataset": dataset, "attributes": sorted(found), "rows": len(rows)}


def hierarchy_widths(
    session: Session, dataset: str, attribute: str, widths: Sequence[float]
) -> dict[str, Any]:
    """Store a numeric interval hierarchy spec (built from the data at release time);
    it replaces a loaded ARX hierarchy of the same attribute."""
    if not isinstance(dataset, str) or not dataset:
        raise ConfigError(f"dataset must be the source table's name, got {dataset!r}")
    if not isinstance(attribute, str) or not attribute:
        raise ConfigError(f"attribute must be a column name, got {attribute!r}")
    if widths is None or isinstance(widths, str) or not isinstance(widths, Sequence):
        raise ConfigError(f"widths must be a list of numbers, got {widths!r}")
    spec = [float(w) for w in widths]
    Hierarchy.from_widths(attribute, spec, [0])  # checks: positive, each a multiple
    with session.transaction():
        for table in ("hierarchies", "hierarchy_widths"):
            catalog.delete_rows(
                session,
                table,
                "dataset = $1 AND attribute = $2",
                [dataset, attribute],
                f"a hierarchy of attribute {attribute!r} of dataset {dataset!r}",
            )
        json_type = "STRING" if session.dialect == "spark" else "JSON"
        session.execute(
            f"INSERT INTO sqlanon.hierarchy_widths VALUES ($1, $2, CAST($3 AS {json_type}))",  # noqa: S608
            [dataset, attribute, json.dumps(spec)],
        )
    return {"dataset": dataset, "attribute": attribute, "widths": spec}


def dataset_of(parameters: dict[str, Any]) -> str:
    """The dataset a release's hierarchies are looked up under: its ``dataset``, or (a
    release made before releases recorded it) its source's table name."""
    dataset = parameters.get("dataset")
    if isinstance(dataset, str) and dataset:
        return dataset
    return str(parameters.get("source", "")).rsplit(".", 1)[-1]


def read_hierarchies(
    session: Session,
    src: Source,
    dataset: str,
    quasi: Sequence[str],
    data: dict[str, np.ndarray],
) -> dict[str, Hierarchy]:
    """The hierarchy of every QI column of ``src``, from the catalog (stored under
    ``dataset``): its ARX rows, or its widths over the values ``data`` holds of it."""
    tables: dict[str, dict[str, dict[int, str]]] = {}
    for attribute, value, level, label in session.query(
        sqltext.load(session.dialect, "lhd_hierarchy_rows"), [dataset]
    ):
        tables.setdefault(attribute, {}).setdefault(value, {})[int(level)] = label
    widths = {
        a: json.loads(w)
        for a, w in session.query(
            "SELECT attribute, CAST(widths AS "  # noqa: S608 - a type name
            + ("STRING" if session.dialect == "spark" else "VARCHAR")
            + ") FROM sqlanon.hierarchy_widths WHERE dataset = $1",
            [dataset],
        )
    }
    found: dict[str, Hierarchy] = {}
    for column in quasi:
        by_rows = [a for a in tables if attribute_name(a) == attribute_name(column)]
        by_widths = [a for a in widths if attribute_name(a) == attribute_name(column)]
        if by_rows:
            rows = tables[by_rows[0]]
            found[column] = Hierarchy(
                column,
                {v: tuple(levels[i] for i in sorted(levels)) for v, levels in rows.items()},
            )
        elif by_widths:
            found[column] = Hierarchy.from_widths(
                column, widths[by_widths[0]], np.unique(data[column]).tolist()
            )
        elif NUMERIC.search(src.columns[column].lower()):
            raise ConfigError(
                f"no hierarchy for quasi-identifier {column!r} of dataset {dataset!r}; it is "
                f"numeric: give one with SELECT sqlanon_hierarchy_widths('{dataset}', "
                f"'{column}', [5, 10, 20]), or name the dataset whose hierarchies this "
                "source uses (dataset := '<name>')"
            )
        else:
            raise ConfigError(
                f"no hierarchy for quasi-identifier {column!r} of dataset {dataset!r}; load "  # noqa: S608
                f"one with SELECT sqlanon_load_hierarchies('{dataset}', '<folder>') from a "
                f"file {dataset}_hierarchy_{column}.csv (ARX format), or name the dataset "
                "whose hierarchies this source uses (dataset := '<name>')"
            )
    return found
