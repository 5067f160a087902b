"""One self-contained HTML page per release family: its versions, what they cost, how
they answer queries.

The page opens with a warning block when the audit of the family's domain (every
release of the people behind its source, :mod:`sqlanon.report.audit_section`) exposes records.
It holds a table of every version (rows, what was held back or suppressed, groups or
classes, the model's own quality measures, and the audit's exposed records), the rows
each version left out and why, and PNG charts embedded as ``data:`` URIs, so the single
file can be mailed or archived:

- (k,e): each group's [min, max] of the published sensitive values, one panel per
  version; lHD: the class sizes of each version.
- every family: the mean relative interval width (high - low) / |estimate| of a fixed
  workload of 30 AVG/SUM queries per version, answered through the same rewriter as
  :func:`sqlanon.api.interval` on each versioned table ``<family>_v<N>``.

The workload's predicates are drawn (fixed seed) from the quasi values the family's
first version published, so they suit any family. The report reads the private state
for the audit: it is for the data owner, not for analysts.

    >>> write_report(con, "adult_ke", "adult_ke.html")  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import decimal
import html
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlglot import exp

from sqlanon import sqltext
from sqlanon.api import session_for
from sqlanon.errors import ConfigError, SqlanonError
from sqlanon.intervals import release_catalog
from sqlanon.metrics import error_ratio
from sqlanon.release.preview import preview_next
from sqlanon.report.audit_section import AuditSection, audit_section, waiting_section
from sqlanon.rewriter import rewrite
from sqlanon.session import Session
from sqlanon.state import catalog
from sqlanon.state.source import release_relation

WORKLOAD_SIZE = 30
WORKLOAD_SEED = 20240601
_MAX_COMBINATIONS = 100_000


@dataclass(frozen=True)
class Query:
    """One workload query: its aggregate and WHERE clause, as sqlglot trees."""

    aggregate: str  # "AVG" | "SUM"
    where: exp.Condition

    def sql(self, table: str, sensitive: str, dialect: str) -> str:
        column = exp.column(sensitive, quoted=True)
        agg = exp.Avg(this=column) if self.aggregate == "AVG" else exp.Sum(this=column)
        query = (
            exp.select(exp.alias_(agg, "v"))
            .from_(exp.Table(this=exp.to_identifier(table, quoted=True)))
            .where(self.where.copy())
        )
        return query.sql(dialect=dialect)


def write_report(
    con: Any, family: str, path: str | Path, sweep: Mapping[str, Sequence[Any]] | None = None
) -> Path:
    """Write the HTML report of ``family`` to ``path``; returns the path written.
    ``sweep`` (e.g. ``{"k": [3, 5, 10]}``): also compare settings of the next version,
    one dry run each (:func:`sqlanon.preview`; nothing is written to the database)."""
    with session_for(con) as session:
        page = render_report(session, family, sweep)
    out = Path(path)
    out.write_text(page, encoding="utf-8")
    return out


def render_report(
    session: Session, family: str, sweep: Mapping[str, Sequence[Any]] | None = None
) -> str:
    """The report's HTML text (see the module docstring)."""
    figure_class = _figure_class()
    family = sqltext.check_family(family)
    versions = catalog.require_family(session, family)
    created = dict(
        session.query(
            "SELECT version, CAST(date_trunc('second', created_at) AS VARCHAR) "
            "FROM sqlanon.releases "
            "WHERE family = $1",
            [family],
        )
    )
    audit = audit_section(session, family)
    model = versions[0].model
    if model == "ke":
        spread = _group_ranges_chart(session, versions, figure_class)
        spread_title = "Group ranges: each group's [min, max] of the published sensitive values"
    else:
        spread = _class_sizes_chart(session, versions, figure_class)
        spread_title = "Class sizes per version (largest first)"
    queries = workload(session, versions[0])
    aggregated = _aggregated(session, versions[-1])
    if aggregated is None:
        queries = []
    answers = [_widths(session, r, queries, aggregated or "") for r in versions]
    widths = [w for w, _ in answers]
    refused = next((reason for _, reason in answers if reason), "")
    if aggregated is None:
        refused = "no sensitive attribute of this family is numeric: nothing to sum"
    if any(np.isfinite(w).any() for w in widths):
        width_chart: str | None = _widths_chart(versions, widths, figure_class)
    else:
        width_chart = None
        refused = refused or "no workload query matched a published row"
    rows = [
        _version_row(
            r, created.get(r.version), audit.exposed.get(r.version), w, width_chart is not None
        )
        for r, w in zip(versions, widths, strict=True)
    ]
    waiting = waiting_section(session, versions)
    if sweep:
        waiting += _sweep_section(preview_next(session, versions[-1], sweep), sweep)
    return _page(
        family, versions, rows, audit, waiting, spread_title, spread, width_chart, refused,
        queries, aggregated or "",
    )  # fmt: skip


# ------------------------------------------------------------------------------ data


def _version_row(
    r: catalog.Release, created: Any, exposed: int | None, widths: np.ndarray, answered_any: bool
) -> dict[str, Any]:
    answered = widths[np.isfinite(widths)]
    row: dict[str, Any] = {
        "version": r.version,
        "created at": created,
        "rows": r.source_rows,
        "published": r.rows_published,
        "held back": r.held_back,
        "suppressed": r.suppressed,
        # of those held back or suppressed (catalogs before the name: chain_held_back)
        "chain rule": r.metrics.get("chain_held", r.metrics.get("chain_held_back", 0)),
        "groups" if r.model == "ke" else "classes": r.groups,
    }
    if r.model == "ke":
        optimum = r.metrics.get("static_optimum")
        row["sum of errors"] = r.sum_of_errors
        row["static optimum (all rows)"] = optimum
        row["× optimum of published rows"] = error_ratio(
            r.sum_of_errors, r.metrics.get("published_optimum")
        )
    else:
        row["precision loss"] = r.metrics.get("precision_loss")
        row["DM"] = r.metrics.get("dm")
    row["audit: exposed"] = exposed
    if answered_any:
        row["queries answered"] = f"{answered.size}/{widths.size}"
        row["mean rel. width"] = float(answered.mean()) if answered.size else None
    return row


def _quasi(r: catalog.Release) -> list[str]:
    quasi = r.parameters.get("quasi") or []
    return [quasi] if isinstance(quasi, str) else list(quasi)


def _sensitive(r: catalog.Release) -> str:
    """The sensitive column of a (k,e) release (lHD: its first sensitive attribute)."""
    sensitive = r.parameters["sensitive"]
    return sensitive if isinstance(sensitive, str) else sensitive[0]


def _aggregated(session: Session, r: catalog.Release) -> str | None:
    """The column the workload sums: the first numeric sensitive attribute of ``r``
    (lHD may publish text ones: a diagnosis), None when there is none."""
    sensitive = r.parameters["sensitive"]
    names = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    q = session.quote_ident
    picked = ", ".join(q(n) for n in names)
    found = session.query(f"SELECT {picked} FROM {release_relation(session, r)} LIMIT 1")  # noqa: S608 - quoted
    if not found:
        return names[0]
    numeric = [
        n
        for n, v in zip(names, found[0], strict=True)
        if isinstance(v, int | float | decimal.Decimal) and not isinstance(v, bool)
    ]
    return numeric[0] if numeric else None


def workload(session: Session, first: catalog.Release, size: int = WORKLOAD_SIZE) -> list[Query]:
    """``size`` fixed random queries: half AND-ed equalities on 1-3 quasi columns taken
    from one published record (so each matches someone), half a range between two
    published values of one numeric quasi column (equalities if there is none)."""
    quasi = _quasi(first)
    if not quasi:
        # (k,e) without quasi columns: the whole table, one query of each aggregate
        return [Query(a, exp.true()) for a in ("AVG", "SUM")]
    q = session.quote_ident
    names = ", ".join(q(c) for c in quasi)
    combos = session.query(
        f"SELECT {names} FROM {release_relation(session, first)} GROUP BY {names} "  # noqa: S608 - quoted
        f"ORDER BY {names} LIMIT {_MAX_COMBINATIONS}"
    )
    if first.model == "lhd":
        # lHD releases publish hierarchy labels: query raw values the labels cover
        combos = _raw_combinations(session, first, quasi, combos)
    numeric = [i for i, c in enumerate(quasi) if all(_is_number(row[i]) for row in combos[:1000])]
    rng = np.random.default_rng(WORKLOAD_SEED)
    queries = []
    for i in range(size):
        aggregate = "AVG" if i % 4 < 2 else "SUM"
        if i % 2 == 1 and numeric:
            column = numeric[int(rng.integers(len(numeric)))]
            a, b = sorted(combos[int(j)][column] for j in rng.integers(0, len(combos), 2))
            where: exp.Condition = exp.Between(
                this=exp.column(quasi[column], quoted=True),
                low=exp.convert(a),
                high=exp.convert(b),
            )
        else:
            record = combos[int(rng.integers(len(combos)))]
            chosen = rng.permutation(len(quasi))[: int(rng.integers(1, min(3, len(quasi)) + 1))]
            terms = [
                exp.EQ(this=exp.column(quasi[c], quoted=True), expression=exp.convert(record[c]))
                for c in sorted(chosen.tolist())
            ]
            where = exp.and_(*terms)
        queries.append(Query(aggregate, where))
    return queries


def _raw_combinations(
    session: Session, first: catalog.Release, quasi: list[str], combos: list[Any]
) -> list[tuple[Any, ...]]:
    """The published label combinations of an lHD release with each label replaced by
    one raw value it covers (from the label domains the rewriter uses: hierarchy leaves,
    or the intervals of a widths hierarchy), so equalities and ranges on them match the
    published rows on every version. A label without a known raw value keeps its text."""
    info = release_catalog(session).get(first.table_name)
    domains = (info.domains if info is not None else None) or {}
    per_column = []
    for i, column in enumerate(quasi):
        domain = domains.get(column)
        labels = sorted({str(row[i]) for row in combos})
        raw = {label: _raw_value(domain, label) for label in labels} if domain else {}
        known = sorted((v for v in raw.values() if v is not None), key=_order)
        spare = known[len(known) // 2] if known else None  # any value suits a '*' label
        per_column.append({k: v if v is not None else spare for k, v in raw.items()})
    out = []
    for row in combos:
        values = []
        for i, value in enumerate(row):
            replaced = per_column[i].get(str(value))
            values.append(value if replaced is None else replaced)
        out.append(tuple(values))
    return out


def _raw_value(domain: Any, label: str) -> Any:
    """One raw value under ``label`` (a number when it reads as one), or None."""
    leaves = domain.leaves.get(label)
    if leaves:
        values = sorted((_as_number(v) for v in leaves), key=_order)
        return values[len(values) // 2]
    interval = domain.intervals.get(label)
    if interval is None:
        return None
    low, high = interval
    if math.isfinite(low):
        return _as_number(repr(low))
    if math.isfinite(high):
        return _as_number(repr(high - 1))
    return None


def _as_number(text: str) -> Any:
    try:
        value = float(text)
    except ValueError:
        return text
    if not math.isfinite(value):
        return text
    return int(value) if value.is_integer() else value


def _order(value: Any) -> tuple[int, Any]:
    """Numbers before texts, each in their natural order."""
    return (0, value) if _is_number(value) else (1, str(value))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.number) and not isinstance(value, bool)


def _widths(
    session: Session, r: catalog.Release, queries: list[Query], sensitive: str
) -> tuple[np.ndarray, str]:
    """(high - low) / |estimate| of each query on version ``r``; NaN when the query has no
    answer there (no matching rows, estimate 0, or a query the rewriter refuses), and the
    rewriter's first refusal (e.g. lHD releases have no interval answers yet)."""
    releases = release_catalog(session)
    out = np.full(len(queries), np.nan)
    refused = ""
    for i, query in enumerate(queries):
        sql = query.sql(r.table_name, sensitive, session.dialect)
        try:
            text = rewrite(sql, releases, session.dialect)
        except SqlanonError as exc:
            refused = refused or str(exc)
            continue
        rows = session.query_dicts(text)
        if not rows:
            continue
        low, high, est = (rows[0].get(f"v_{p}") for p in ("low", "high", "est"))
        if low is None or high is None or est is None or float(est) == 0:
            continue
        out[i] = (float(high) - float(low)) / abs(float(est))
    return out, refused


# ------------------------------------------------------------------------------ charts


def _figure_class() -> Any:
    """matplotlib's Figure with the Agg canvas (no pyplot, no global backend switch)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ConfigError(
            "sqlanon report draws its charts with matplotlib, which is not installed; "
            "pip install 'sqlanon[report]'"
        ) from exc
    return Figure


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _group_ranges_chart(session: Session, versions: list[catalog.Release], figure: Any) -> str:
    q = session.quote_ident
    panels = []
    for r in versions:
        s = q(_sensitive(r))
        panels.append(
            session.query(
                f"SELECT min({s}), max({s}) FROM {release_relation(session, r)} "  # noqa: S608 - quoted
                f"GROUP BY {q('group_id')} ORDER BY 1, 2"
            )
        )
    fig = figure(figsize=(10, 1.2 + 1.6 * len(versions)), layout="constrained")
    axes = fig.subplots(len(versions), 1, sharex=True, squeeze=False)[:, 0]
    colours = _colours(len(versions))
    for ax, r, ranges, colour in zip(axes, versions, panels, colours, strict=True):
        low = np.array([float(a) for a, _ in ranges])
        high = np.array([float(b) for _, b in ranges])
        ax.barh(np.arange(low.size), np.maximum(high - low, 0), left=low, height=0.8, color=colour)
        ax.set_ylabel(f"v{r.version}\n{low.size} groups", rotation=0, ha="right", va="center")
        ax.set_yticks([])
    axes[-1].set_xlabel(_sensitive(versions[0]))
    return _png(fig)


def _class_sizes_chart(session: Session, versions: list[catalog.Release], figure: Any) -> str:
    q = session.quote_ident
    fig = figure(figsize=(10, 1.2 + 1.6 * len(versions)), layout="constrained")
    axes = fig.subplots(len(versions), 1, sharex=True, squeeze=False)[:, 0]
    for ax, r, colour in zip(axes, versions, _colours(len(versions)), strict=True):
        sizes = np.array(
            [
                int(n)
                for (n,) in session.query(
                    f"SELECT count(*) FROM {release_relation(session, r)} "  # noqa: S608 - quoted
                    f"GROUP BY {q('class_id')} ORDER BY 1 DESC"
                )
            ]
        )
        ax.bar(np.arange(sizes.size), sizes, width=0.9, color=colour)
        ax.set_ylabel(f"v{r.version}\n{sizes.size} classes", rotation=0, ha="right", va="center")
    axes[-1].set_xlabel("class (largest first)")
    return _png(fig)


def _widths_chart(versions: list[catalog.Release], widths: list[np.ndarray], figure: Any) -> str:
    fig = figure(figsize=(10, 4), layout="constrained")
    ax = fig.subplots()
    x = np.array([r.version for r in versions])
    for xi, w in zip(x, widths, strict=True):
        w = w[np.isfinite(w)]
        ax.scatter(np.full(w.size, xi), w, s=10, alpha=0.35, color="grey")
    means = [float(w[np.isfinite(w)].mean()) if np.isfinite(w).any() else np.nan for w in widths]
    ax.plot(x, means, marker="o", color="tab:blue", label="mean over the workload")
    ax.set_xticks(x)
    ax.set_xlabel("version")
    ax.set_ylabel("(high - low) / |estimate|")
    ax.legend(loc="upper right")
    return _png(fig)


def _colours(n: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    return [cmap(0.1 + 0.8 * i / max(1, n - 1)) for i in range(n)]


# ------------------------------------------------------------------------------ HTML

_WIDTHS_CAPTION = """<p class="caption" id="widths-caption">How to read it: the relative
width is the interval's width over the size of the answer. 0 means the exact answer; 1
means an interval as wide as the answer itself (an average of 100 known to lie within
50 to 150); 100 means the interval is a hundred times wider than the answer, so the
release says next to nothing about that query. Wide intervals are usual for lHD
releases, whose generalized labels (up to <code>*</code>) may stand for many values,
and for queries that select few records.</p>"""

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
td { white-space: nowrap; }
th { background: #f2f2f2; white-space: normal; min-width: 4em; }
.wide { max-width: 100%; overflow-x: auto; }
.caption { color: #555; max-width: 60em; }
img { max-width: 100%; display: block; margin: 0.5em 0 1.5em; }
code { background: #f6f6f6; padding: 0 0.2em; }
.note { color: #a33; }
.warning { border: 3px solid #c00; background: #fff0f0; padding: 0.5em 1.2em; margin: 1em 0; }
.warning h2 { color: #c00; margin-top: 0.3em; }
"""


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return html.escape(str(value))


def _sweep_section(rows: list[dict[str, Any]], sweep: Mapping[str, Sequence[Any]]) -> str:
    """The next version under each setting of ``sweep``: one dry run per row."""
    e = html.escape
    columns = [c for c in rows[0] if c != "unchanged" and any(r[c] is not None for r in rows)]
    varied = ", ".join(e(name) for name in sweep)
    return f"""<h2>Settings compared on today's data</h2>
<p>One dry run per row: this family's next version, then a new family per setting of
{varied} (the other parameters as the newest version's; a family keeps its privacy
parameters, so other settings need a new family, which would compose with every release
of the domain so far). What each would publish, hold back and suppress, and its utility.
Nothing was written; <code>refused</code> says why a setting could not be released.</p>
{_table("sweep", rows, columns)}
"""


def _table(table_id: str, rows: list[dict[str, Any]], columns: list[str]) -> str:
    """An HTML table of ``rows`` (its ``columns``), scrolling sideways inside its box."""
    header = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{_cell(row[c])}</td>" for c in columns) + "</tr>" for row in rows
    )
    return f"""<div class="wide">
<table id="{table_id}">
<thead><tr>{header}</tr></thead>
<tbody>
{body}
</tbody>
</table>
</div>"""


def _page(
    family: str,
    versions: list[catalog.Release],
    rows: list[dict[str, Any]],
    audit: AuditSection,
    waiting: str,
    spread_title: str,
    spread_png: str,
    width_png: str | None,
    refused: str,
    queries: list[Query],
    aggregated: str,
) -> str:
    first = versions[0]
    e = html.escape
    params = ", ".join(
        f"{k}={v}" for k, v in first.parameters.items() if k not in ("seeded", "source")
    )
    model = "(k,e)" if first.model == "ke" else "lHD-diversity"
    sample = versions[-1].table_name
    shown = "\n".join(
        f"<li><code>{e(qy.sql(sample, aggregated, 'duckdb'))}</code></li>" for qy in queries[:4]
    )
    if width_png is None:
        widths = f'<p class="note">Not available: {e(refused)}.</p>'
    else:
        widths = (
            '<img id="widths" alt="relative interval width per version" '
            f'src="data:image/png;base64,{width_png}">\n' + _WIDTHS_CAPTION
        )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>sqlanon report: {e(family)}</title>
<style>{_STYLE}</style>
</head>
<body>
<h1>Release family <code>{e(family)}</code></h1>
{audit.warning}
<p>{e(model)} releases of <code>{e(first.source)}</code>: {e(params)}.
{len(versions)} version(s); the newest is <code>{e(versions[-1].table_name)}</code>.</p>
{audit.note}
<h2>Versions</h2>
{_table("versions", rows, list(rows[0]))}
<p>"audit: exposed" counts the records an attacker holding every release of the domain
up to that version (every family, both models) can pin down (<code>sqlanon audit</code>).</p>
{waiting}
<h2>{e(spread_title)}</h2>
<img id="spread" alt="{e(spread_title)}" src="data:image/png;base64,{spread_png}">
<h2>Interval width of a fixed query workload</h2>
<p>{len(queries)} AVG/SUM queries of <code>{e(aggregated)}</code> with predicates on
quasi values the first version published, answered with hard intervals on each
<code>{e(family)}_v&lt;N&gt;</code>. A point per query, the line is the mean of
(high - low) / |estimate|. The first queries, on the newest version:</p>
<ul>
{shown}
</ul>
{widths}
</body>
</html>
"""
