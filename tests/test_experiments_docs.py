"""The generated experiment documents stay true (issue 28).

``docs/EXPERIMENTS.md`` and BENCHMARKS.md's ``lhd-seed-experiments`` section are written
by bench scripts. Each test here recomputes a cheap, deterministic subset of one section
(counts, PREC, DM, errors, exposed records: never a time) with the script's own code and
formatting, and compares it with the row the document prints. A failure means the planner
or the data changed since the section was generated: the message names the script to
rerun (``nice .venv/bin/python bench/<script>.py``), which rewrites the section and its
plots; commit them with the change.
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import ke_experiments  # noqa: E402
import lhd_experiments  # noqa: E402
import lhd_figures  # noqa: E402

import sqlanon  # noqa: E402
from sqlanon.hierarchy import Hierarchy, load_directory  # noqa: E402

EXPERIMENTS = ROOT / "docs" / "EXPERIMENTS.md"
BENCHMARKS = ROOT / "BENCHMARKS.md"


# ------------------------------------------------------------------- reading the docs


def section(path: Path, name: str) -> str:
    """The text between a generated section's markers."""
    text = path.read_text()
    begin, end = f"<!-- begin:{name} -->", f"<!-- end:{name} -->"
    assert begin in text and end in text, f"{path.name} has no section {name!r}"
    return text[text.index(begin) + len(begin) : text.index(end)]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table_rows(text: str, after: str = "") -> dict[str, dict[str, str]]:
    """The first markdown table in ``text`` after the line starting with ``after``: each
    row by its first cell, as {column header: cell}."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(after)) if after else 0
    first = next(i for i in range(start, len(lines)) if lines[i].startswith("|"))
    header = _cells(lines[first])
    rows = {}
    for line in lines[first + 2 :]:
        if not line.startswith("|"):
            break
        cells = _cells(line)
        rows[cells[0]] = dict(zip(header, cells, strict=True))
    return rows


def assert_fresh(
    doc: dict[str, dict[str, str]],
    head: dict[str, dict[str, str]],
    row: str,
    columns: dict[str, list[int] | None],
    where: str,
    script: str,
) -> None:
    """The doc's ``row`` holds HEAD's values in ``columns`` (a list picks parts of a cell
    split on ' / ' or ' · ', None the whole cell)."""
    assert row in doc, f"{where}: no row {row!r}; rerun `nice .venv/bin/python {script}`"
    stale = []
    for column, parts in columns.items():
        said, computed = doc[row].get(column), head[row][column]
        if parts is not None and said is not None:
            sep = " · " if " · " in computed else " / "
            said = sep.join(said.split(sep)[i] for i in parts)
            computed = sep.join(computed.split(sep)[i] for i in parts)
        if said != computed:
            stale.append(f"{column!r}: the doc says {said!r}, HEAD computes {computed!r}")
    assert not stale, (
        f"{where}, row {row!r}, is stale (the planner or the data changed since it was "
        f"generated): " + "; ".join(stale) + f". Rerun `nice .venv/bin/python {script}` "
        "and commit the section it rewrites."
    )


# ------------------------------------------------------------------------------- data


@pytest.fixture(scope="module")
def seed() -> tuple[dict[str, np.ndarray], dict[str, Hierarchy]]:
    """Seed 002's records and ARX hierarchies as the lHD scripts load them, from the
    copies bundled with sqlanon (a clone has no ``../shared``): the same 1,427 records of
    ``adult.data`` in file order (``sqlanon/data/ATTRIBUTION.md``), the same ARX files."""
    bundled = Path(sqlanon.__file__).parent / "data"
    with (bundled / "adult_capital_loss.csv").open(newline="") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(r["id"]))
    table = {
        name.replace("_", "-"): np.array([r[name] for r in rows], dtype=object)
        for name in rows[0]
        if name != "id"
    }
    for numeric in ("age", "capital-loss", "hours-per-week"):
        table[numeric] = table[numeric].astype(np.int64)
    return table, load_directory(bundled / "hierarchies", "adult")


# -------------------------------------------------------- docs/EXPERIMENTS.md, 000/001


@pytest.fixture(scope="module")
def ke_grid() -> list[tuple[str, int, float, float | None, Any]]:
    return ke_experiments.grid(quick=False)


def test_ke_experiments_section(ke_grid: list[tuple[str, int, float, float | None, Any]]) -> None:
    """Figs. 21/22 at appends of 14% (9 versions, the last one partial): versions,
    errors, exposed records and the held-back share of paper, auto and independent
    (naive is left out: seconds per setting)."""
    figure, x = "append", "14%"
    values = ke_experiments.capital_loss()
    _, k, e, fraction, _ = next(s for s in ke_grid if s[0] == figure and s[4] == x)
    row = ke_experiments.pure_row(
        values, figure, k, e, fraction, x, ("paper", "auto", "independent")
    )
    row |= {"naive": None, "naive+overlap": None}
    row["whole"] = dict.fromkeys(ke_experiments.THROUGH_DUCKDB, math.nan)
    head = table_rows(ke_experiments.table([row], "append size"))
    doc = table_rows(section(EXPERIMENTS, "seeds-000-001"), "### Figs. 21/22")
    picked = [0, 2, 3]  # paper, auto, independent of paper / naive / auto / independent
    assert_fresh(
        doc,
        head,
        x,
        {
            "versions": None,
            "error: paper / naive / auto / independent": picked,
            next(c for c in head[x] if c.startswith("exposed")): picked,
            "auto max held back": None,
        },
        "docs/EXPERIMENTS.md, section seeds-000-001, Figs. 21/22",
        "bench/ke_experiments.py",
    )


def test_ke_partition_grid(ke_grid: list[tuple[str, int, float, float | None, Any]]) -> None:
    """Figs. 19/20: the e of every row, and the counts no e gives, as the doc says."""
    values = ke_experiments.capital_loss()
    rows = [(x, e) for figure, _, e, _, x in ke_grid if figure == "partitions"]
    said = "e per row (the largest integer e giving that many partitions): " + ", ".join(
        f"{x} partitions: e = {e:g}" for x, e in rows
    )
    missing = [p for p in ke_experiments.PARTITION_GRID if p not in {x for x, _ in rows}]
    text = section(EXPERIMENTS, "seeds-000-001")
    rerun = "; rerun `nice .venv/bin/python bench/ke_experiments.py`"
    assert said in text, f"docs/EXPERIMENTS.md, Figs. 19/20: HEAD computes {said!r}{rerun}"
    for p in missing:
        why = ke_experiments.unreachable(values, p)
        assert why in text, f"docs/EXPERIMENTS.md, Figs. 19/20: {p} partitions: {why!r}{rerun}"


# -------------------------------------------------------------- docs/EXPERIMENTS.md, 002


def test_seed_002_section(seed: tuple[dict[str, np.ndarray], dict[str, Hierarchy]]) -> None:
    """Figs. 11-12 at 2 QI (the point where the greedy's DM moved from 2,881 to 77,767
    when the planner changed): sqlanon's and the seed's greedy's PREC, f_PREC, DM,
    suppressed and exposed; the record count."""
    records, hierarchies = seed
    row = lhd_figures.limited(records, hierarchies, "qi", 2, compared=False)
    head = table_rows(lhd_figures.limited_table([row], "QI published"))
    text = section(EXPERIMENTS, "seed-002")
    columns = {c: None for c in head["2"] if c.startswith("sqlanon")}
    assert_fresh(
        table_rows(text, "### Figs. 11-12"),
        head,
        "2",
        columns,
        "docs/EXPERIMENTS.md, section seed-002, Figs. 11-12",
        "bench/lhd_figures.py",
    )
    assert f"{records['age'].size:,} here" in text, (
        f"docs/EXPERIMENTS.md, section seed-002: HEAD reads {records['age'].size:,} "
        "records; rerun `nice .venv/bin/python bench/lhd_figures.py`"
    )


# ---------------------------------------------------- BENCHMARKS.md, seed 002's Figs. 5-10


def test_lhd_seed_experiments_section(
    seed: tuple[dict[str, np.ndarray], dict[str, Hierarchy]],
) -> None:
    """The '2 QI' row of Figs. 5-10's table, every column (none is a time)."""
    records, hierarchies = seed
    setting = lhd_experiments.run_setting(
        "2 QI", records, hierarchies, lhd_experiments.QI_ORDER[:2], ["capital-loss"], 2
    )
    head = table_rows(lhd_experiments.table([setting], "QI in R2"))
    text = section(BENCHMARKS, "lhd-seed-experiments")
    assert_fresh(
        table_rows(text, "### Number of QI"),
        head,
        "2 QI",
        dict.fromkeys(head["2 QI"]),
        "BENCHMARKS.md, section lhd-seed-experiments, Number of QI",
        "bench/lhd_experiments.py --seed-only",
    )
    assert f"**{records['age'].size:,} rows**" in text, (
        f"BENCHMARKS.md, section lhd-seed-experiments: HEAD reads {records['age'].size:,} "
        "records; rerun `nice .venv/bin/python bench/lhd_experiments.py --seed-only`"
    )
