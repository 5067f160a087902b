"""Query results as plain aligned text tables, a release's summary as one line, and a
long release's progress (the CLI and the demo print them)."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Sequence
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> None:
    """A plain aligned text table."""
    if not rows:
        print("(no rows)")
        return
    columns = list(columns or rows[0].keys())
    cells = [[format_value(r.get(c), c) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True)))
    for row in cells:
        print("  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)))


def format_value(value: Any, column: str = "") -> str:
    """A value for the table: floats to 4 significant digits (whole numbers from 10^4).
    A bound of an interval (a ``*_low`` / ``*_high`` column) is rounded outward, low down
    and high up, so the interval shown still contains the true answer."""
    if value is None:
        return "-"
    if not isinstance(value, float):
        return str(value)
    outward = {"_low": ROUND_FLOOR, "_high": ROUND_CEILING}
    rounding = next((r for end, r in outward.items() if column.endswith(end)), None)
    if rounding is None or not math.isfinite(value) or value == 0:
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"
    digits = 0 if abs(value) >= 1e4 else 3 - math.floor(math.log10(abs(value)))
    shown = Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=rounding)
    return format(shown.normalize(), "f")


class Progress:
    """Progress of a long release on stderr (stdout keeps the JSON summary): one line per
    stage with its count, the time since the stage before and its rate. Only when stderr
    is a terminal; ``SQLANON_PROGRESS=1`` shows it elsewhere too (a CI log),
    ``SQLANON_PROGRESS=0`` never.

    ``sqlanon: rows read: 2,119,000 in 3.2 s (662,188/s)``; planning is rated by the rows
    it planned: ``sqlanon: groups built: 21,190 in 1.4 s (1,513,571 rows/s)``."""

    def __init__(self) -> None:
        wanted = os.environ.get("SQLANON_PROGRESS", "")
        self.shown = wanted == "1" or (wanted != "0" and sys.stderr.isatty())
        self.since = time.monotonic()
        self.rows = 0

    def __call__(self, stage: str, count: int) -> None:
        now = time.monotonic()
        elapsed, self.since = now - self.since, now
        per = count
        unit = "/s"
        if stage == "rows read":
            self.rows = count
        elif stage == "groups built":
            per, unit = self.rows, " rows/s"
        if self.shown:
            rate = f"{per / elapsed:,.0f}{unit}" if elapsed > 0 else "-"
            line = f"sqlanon: {stage}: {count:,} in {elapsed:.2f} s ({rate})"
            print(line, file=sys.stderr, flush=True)


def change_line(family: str, summary: dict[str, Any]) -> str:
    """What a release did, in one line: nothing (unchanged), or its change counts and
    the records it left out (README, "Changing tables": held back, suppressed, and how
    many of those the chain rule left out)."""
    if summary.get("unchanged"):
        return f"{family}: no change since version {summary['version']}: nothing published"
    counts = ", ".join(
        f"{summary.get(name, 0)} {label}"
        for name, label in (
            ("inserted", "inserted"),
            ("deleted", "deleted"),
            ("quasi_changed", "quasi changed"),
            ("value_changed", "value changed"),
            ("ghosts", "ghosts"),
        )
    )
    held, suppressed = summary.get("held_back", 0), summary.get("suppressed", 0)
    return (
        f"{family} version {summary['version']} published: {counts}; {held + suppressed} left "
        f"out ({held} held back, {suppressed} suppressed; {summary.get('chain_held', 0)} of "
        "them by the chain rule)"
    )


def dry_run_line(family: str, summary: dict[str, Any]) -> str:
    """What a dry run found, in one line: the figures the release would report."""
    if summary.get("unchanged"):
        return f"dry run of {family}: no change since version {summary['version']}; nothing written"
    held, suppressed = summary.get("held_back", 0), summary.get("suppressed", 0)
    groups = "groups" if summary.get("model") == "ke" else "classes"
    return (
        f"dry run of {family} version {summary['version']}: "
        f"{summary.get('rows_published', 0)} would be published, {held + suppressed} left out "
        f"({held} held back, {suppressed} suppressed; {summary.get('chain_held', 0)} of them "
        f"by the chain rule), {summary.get('groups', 0)} {groups}; nothing written"
    )
