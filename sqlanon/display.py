"""Query results and release summaries as plain aligned text tables (the CLI and the
demo print them)."""

from __future__ import annotations

import math
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
