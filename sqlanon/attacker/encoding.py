"""Attribute values as integer codes, as the audit compares them. Pure numpy.

Equal values get equal codes under Python equality (``10000 == 10000.0``); numbers keep
each code's value so that spreads (max - min) can be measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from numbers import Number
from typing import Any

import numpy as np

from sqlanon.errors import ConfigError

__all__ = ["Encoded", "decoder", "spread"]


@dataclass(frozen=True)
class Encoded:
    """One attribute: a code per record (equal values, equal codes, Python equality:
    ``10000 == 10000.0``) and, for numbers, each code's value (NaN for NULL)."""

    codes: np.ndarray
    size: int
    numbers: np.ndarray | None

    @staticmethod
    def of(name: str, column: np.ndarray | Sequence[Any]) -> Encoded:
        array = np.asarray(column)
        if array.dtype.kind == "O" and all(_is_number(v) for v in array.tolist()):
            array = np.array([np.nan if v is None else float(v) for v in array.tolist()])
        if array.dtype.kind in "biuf":
            x = array.astype(np.float64)
            uniques, codes = np.unique(x, return_inverse=True)
            return Encoded(codes.reshape(-1).astype(np.int64), uniques.size, uniques)
        if array.dtype.kind not in "OUS":
            raise ConfigError(f"values of {name!r}: unsupported type {array.dtype}")
        index: dict[Any, int] = {}
        codes = np.array([index.setdefault(v, len(index)) for v in array.tolist()], np.int64)
        return Encoded(codes, len(index), None)


def _is_number(value: Any) -> bool:
    return value is None or (
        isinstance(value, Number | Decimal) and not isinstance(value, bool | np.bool_)
    )


def decoder(column: np.ndarray | Sequence[Any], encoded: Encoded) -> list[Any]:
    """The value of each code (the first record holding it)."""
    array = np.asarray(column)
    first = np.full(encoded.size, -1, dtype=np.int64)
    order = np.arange(encoded.codes.size)[::-1]
    first[encoded.codes[order]] = order
    return [array[i].item() if hasattr(array[i], "item") else array[i] for i in first]


def spread(encoded: Encoded, codes: Any) -> float:
    """max - min of the numbers of ``codes`` (NULLs ignored; 0 when none)."""
    if encoded.numbers is None:
        return 0.0
    x = encoded.numbers[np.fromiter(codes, dtype=np.int64)]
    x = x[~np.isnan(x)]
    return float(x.max() - x.min()) if x.size else 0.0
