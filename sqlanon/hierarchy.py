"""Generalization hierarchies (DGH) for quasi-identifiers.

A hierarchy maps every raw value of one attribute to one label per level: level 0 is the
raw value itself, each higher level is coarser, the top level is ``*``. The number of
levels above the raw value is the hierarchy's ``height`` (ARX's ``sex`` file has height 1,
its ``age`` file height 4). Hierarchies must be trees: two raw values that share a label at
some level share every label above it, so "the lowest level at which a set of values has
one ancestor" is well defined. That is what local recoding publishes.

Two sources:

- ARX's CSV format (``Hierarchy.from_arx_csv``): one row per raw value, ``;``-separated,
  no header, column i = label at level i, last column one label for every row (ARX
  writes ``*``; another, such as ``Any``, is read as ``*``, which is what a release
  publishes for it);
- numeric widths (``Hierarchy.from_widths``): ``[20, 25)``, ``[20, 30)``, ``[20, 40)``, ``*``.

Raw values are compared as text; :func:`value_key` turns data values into that text
(``39``, ``39.0`` and ``"39"`` all become ``"39"``).

A missing value (SQL NULL, read as ``None``, or as NaN from a numeric column) is an
ordinary value with a branch of its own in every hierarchy: its label is ``None`` (NULL)
at every level below the top and ``*`` at the top, so it shares an ancestor with another
value only at ``*``. A hierarchy file needs no row for it (a row for the text ``NULL`` is
that text, not a missing value).
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sqlanon.errors import ConfigError

TOP = "*"

# A dataset or attribute name as it may appear in a hierarchy file's name: letters,
# digits, "_" and "-", not starting with "-". No dot, path separator or pattern character.
_PLAIN = re.compile(r"\w[\w-]*")


def is_missing(value: Any) -> bool:
    """Whether ``value`` stands for SQL NULL: None, or a float NaN (how a numeric
    column's NULL arrives in an array)."""
    return value is None or (isinstance(value, float | np.floating) and value != value)


def missing_mask(values: np.ndarray) -> np.ndarray:
    """:func:`is_missing` of each value, as a boolean array."""
    if values.dtype.kind == "f":
        nan: np.ndarray = np.isnan(values)
        return nan
    return np.fromiter((is_missing(v) for v in values.tolist()), dtype=bool, count=values.size)


def value_key(value: Any) -> str:
    """The text a data value is looked up by: integral floats lose their ``.0``."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, float | np.floating):
        if math.isfinite(value) and float(value).is_integer():
            return str(int(value))
        return str(float(value))
    if isinstance(value, np.generic):
        return str(value.item())
    return str(value)


@dataclass(frozen=True)
class Hierarchy:
    """A tree of labels over the raw values of one attribute.

    ``table[raw]`` is the tuple of labels of ``raw`` at levels 0..height (``table[raw][0]
    == raw`` and ``table[raw][-1] == "*"``). Build it with :meth:`from_arx_csv` or
    :meth:`from_widths`; the constructor checks that the table is a tree.
    """

    attribute: str
    table: Mapping[str, tuple[str, ...]]
    _labels: tuple[tuple[str, ...], ...] = field(init=False, repr=False, compare=False)
    _index: tuple[dict[str, int], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.table:
            raise ConfigError(f'hierarchy of "{self.attribute}" is empty; give at least one value')
        depth = len(next(iter(self.table.values())))
        if depth < 2:
            raise ConfigError(
                f'hierarchy of "{self.attribute}" needs at least 2 levels (raw value and "*")'
            )
        parent: list[dict[str, tuple[str, ...]]] = [{} for _ in range(depth)]
        for raw, labels in self.table.items():
            where = f'hierarchy of "{self.attribute}", value "{raw}"'
            if len(labels) != depth:
                raise ConfigError(
                    f"{where}: has {len(labels)} levels, the first value has {depth}; "
                    "every row needs the same number of columns"
                )
            if labels[0] != raw:
                raise ConfigError(f'{where}: level 0 must be the value itself, got "{labels[0]}"')
            if labels[-1] != TOP:
                raise ConfigError(f'{where}: last level must be "*", got "{labels[-1]}"')
            for level in range(1, depth - 1):
                above = labels[level + 1 :]
                seen = parent[level].setdefault(labels[level], above)
                if seen != above:
                    raise ConfigError(
                        f'{where}: level-{level} label "{labels[level]}" has ancestors '
                        f"{list(above)} here but {list(seen)} for another value; "
                        "a label must have one parent per level"
                    )
        labels_by_level: list[tuple[str, ...]] = []
        for level in range(depth):
            labels_by_level.append(tuple(dict.fromkeys(r[level] for r in self.table.values())))
        object.__setattr__(self, "table", dict(self.table))
        object.__setattr__(self, "_labels", tuple(labels_by_level))
        object.__setattr__(
            self, "_index", tuple({lab: i for i, lab in enumerate(ls)} for ls in labels_by_level)
        )

    @property
    def height(self) -> int:
        """Number of levels above the raw value (the top level's number)."""
        return len(self._labels) - 1

    def labels(self, level: int) -> tuple[str, ...]:
        """Distinct labels at ``level``, in first-appearance order; codes index this
        (below the top, the code one past the end is the missing value's branch)."""
        return self._labels[level]

    def label(self, level: int, code: int) -> str | None:
        """The label of ``code`` at ``level``; None for the missing value's branch."""
        labels = self._labels[level]
        return None if code == len(labels) else labels[code]

    @classmethod
    def from_arx_csv(cls, attribute: str, source: str | os.PathLike[str]) -> Hierarchy:
        """Parse ARX's hierarchy CSV, given as a path or as the text itself.

        A ``str`` holding a newline or a ``;`` is taken as text, anything else as a path.
        Identical repeated rows are accepted; a value listed twice differently is an error.
        """
        if isinstance(source, str) and ("\n" in source or ";" in source):
            return cls.parse_arx(attribute, source, "text")
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f'cannot read the hierarchy of "{attribute}" from {path}: {exc}'
            ) from exc
        return cls.parse_arx(attribute, text, str(path))

    @classmethod
    def parse_arx(cls, attribute: str, text: str, origin: str) -> Hierarchy:
        """Parse the text of an ARX hierarchy CSV; ``origin`` names it in errors."""
        table: dict[str, tuple[str, ...]] = {}
        parents: list[dict[str, tuple[tuple[str, ...], int]]] = []
        depth = None
        top = None
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            row = tuple(cell.strip() for cell in line.split(";"))
            where = f'hierarchy of "{attribute}" ({origin}) row {number} {line!r}'
            if depth is None:
                depth = len(row)
                parents = [{} for _ in range(depth)]
            if len(row) != depth:
                raise ConfigError(
                    f"{where}: has {len(row)} columns, row 1 has {depth}; "
                    "every row needs one column per level"
                )
            if depth < 2:
                raise ConfigError(f"{where}: needs at least 2 columns (value and top level)")
            if top is None:
                top = row[-1]
            if row[-1] != top:
                raise ConfigError(
                    f'{where}: the last column is "{row[-1]}" here but "{top}" in row 1; '
                    "the top level must be one label for every value"
                )
            if top != TOP and TOP in row[:-1]:
                raise ConfigError(
                    f'{where}: "*" is a label below the top level "{top}"; "*" stands for '
                    "the top level, rename that label"
                )
            row = (*row[:-1], TOP)
            if row[0] in table and table[row[0]] != row:
                raise ConfigError(f'{where}: value "{row[0]}" is listed twice with other labels')
            table[row[0]] = row
            for level in range(1, depth - 1):
                above, first = parents[level].setdefault(row[level], (row[level + 1 :], number))
                if above != row[level + 1 :]:
                    raise ConfigError(
                        f'{where}: level-{level} label "{row[level]}" has ancestors '
                        f"{list(row[level + 1 :])} here but {list(above)} in row {first}; "
                        "a label must have one parent per level"
                    )
        if not table:
            raise ConfigError(f'hierarchy of "{attribute}" ({origin}) has no rows')
        return cls(attribute, table)

    @classmethod
    def from_widths(
        cls, attribute: str, widths: Sequence[float], values: Iterable[Any]
    ) -> Hierarchy:
        """Interval hierarchy for a numeric attribute: level i groups values into
        ``[a, a + widths[i-1])`` with ``a`` a multiple of the width; the top is ``*``.

        Each width must be a multiple of the previous one, so intervals nest.

        >>> Hierarchy.from_widths("age", [5, 10], [23, 38]).table["23"]
        ('23', '[20, 25)', '[20, 30)', '*')
        """
        if not widths:
            raise ConfigError(f'widths for "{attribute}" are empty; give e.g. [5, 10, 20]')
        for i, width in enumerate(widths):
            if not width > 0:
                raise ConfigError(f'widths for "{attribute}" must be positive, got {width}')
            if i and not _is_multiple(width, widths[i - 1]):
                raise ConfigError(
                    f'widths for "{attribute}": {width} is not a multiple of {widths[i - 1]}; '
                    "each width must be a multiple of the previous so intervals nest"
                )
        table: dict[str, tuple[str, ...]] = {}
        for value in values:
            if is_missing(value):
                continue  # the missing value's own branch, as in every hierarchy
            key = value_key(value)
            try:
                number = float(value)
            except (TypeError, ValueError) as exc:
                raise ConfigError(
                    f'widths hierarchy of "{attribute}": value {value!r} is not a number'
                ) from exc
            if not math.isfinite(number):
                raise ConfigError(
                    f'widths hierarchy of "{attribute}": value {value!r} is not finite'
                )
            labels = [key]
            for width in widths:
                low = math.floor(number / width) * width
                labels.append(f"[{_fmt(low)}, {_fmt(low + width)})")
            labels.append(TOP)
            table[key] = tuple(labels)
        if not table:
            raise ConfigError(f'widths hierarchy of "{attribute}" got no values')
        return cls(attribute, table)

    def encode(self, values: Iterable[Any]) -> np.ndarray:
        """Codes of ``values`` at every level: int64 array of shape (n, height + 1),
        column ``i`` indexes :meth:`labels` ``(i)``; a missing value (:func:`is_missing`)
        has the code one past the end below the top. Raises ``ConfigError`` naming up to
        ten values the hierarchy does not cover."""
        distinct: dict[Any, int] = {}
        inverse = np.fromiter(
            (distinct.setdefault(None if is_missing(v) else v, len(distinct)) for v in values),
            dtype=np.int64,
        )
        keys = [None if v is None else value_key(v) for v in distinct]
        missing = sorted({k for k in keys if k is not None and k not in self.table})
        if missing:
            shown = ", ".join(repr(m) for m in missing[:10])
            more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
            raise ConfigError(
                f'hierarchy of "{self.attribute}" does not cover {len(missing)} value(s) in '
                f"the data: {shown}{more}; add a row for each to the hierarchy file"
            )
        null = [len(self._labels[lv]) for lv in range(self.height)] + [self._index[-1][TOP]]
        rows = [
            null if k is None else [self._index[lv][lab] for lv, lab in enumerate(self.table[k])]
            for k in keys
        ]
        table = np.array(rows, dtype=np.int64).reshape(len(keys), self.height + 1)
        codes: np.ndarray = table[inverse]
        return codes

    def as_rows(self) -> list[tuple[str, str, int, str]]:
        """``(attribute, value, level, label)`` for every value and level, so a backend
        can store or inspect the hierarchy as a table."""
        return [
            (self.attribute, raw, level, label)
            for raw, labels in self.table.items()
            for level, label in enumerate(labels)
        ]


def check_dataset(dataset: object) -> str:
    """``dataset`` when it is a plain name, the first part of its hierarchy files' names:
    letters, digits, ``_`` and ``-``, not starting with ``-``. Anything else (a pattern
    such as ``*``, a path such as ``../x`` or ``a/b``, a dot) is refused."""
    if not isinstance(dataset, str) or not _PLAIN.fullmatch(dataset):
        raise ConfigError(
            f"dataset must be a plain name (by default the source table's): letters, "
            "digits, _ and - only "
            f"(it names the files <dataset>_hierarchy_<attribute>.csv), got {dataset!r}"
        )
    return dataset


def load_directory(path: str | os.PathLike[str], dataset: str) -> dict[str, Hierarchy]:
    """Every ``<dataset>_hierarchy_<attr>.csv`` directly in folder ``path``, keyed by
    attribute.

    ``dataset`` must be a plain name (:func:`check_dataset`); so must ``<attr>``, or the
    file is not one of these. The folder is listed, never searched by a pattern built from
    the caller's text, never recursed into; a file is read only when it is a regular file
    of that exact name in it, never through a symbolic link. A folder that does not exist,
    cannot be read or holds no such file gives one and the same error, so that nothing is
    learnt about folders beyond the one given.
    """
    prefix = f"{check_dataset(dataset)}_hierarchy_"
    if not isinstance(path, str | os.PathLike):
        raise ConfigError(f"the hierarchy folder must be a path, got {path!r}")
    try:
        with os.scandir(path) as entries:
            names = sorted(
                e.name
                for e in entries
                if _attribute_of(e.name, prefix) is not None and e.is_file(follow_symlinks=False)
            )
    except OSError:
        names = []
    found: dict[str, Hierarchy] = {}
    for name in names:
        attribute = _attribute_of(name, prefix)
        assert attribute is not None
        origin = os.path.join(os.fsdecode(path), name)
        found[attribute] = Hierarchy.parse_arx(attribute, _read_regular_file(origin), origin)
    if not found:
        raise ConfigError(
            f"found no {prefix}<attribute>.csv file in the hierarchy folder "
            f"{os.fsdecode(path)!r}: it does not exist, cannot be read, or holds no such file"
        )
    return found


def _attribute_of(name: str, prefix: str) -> str | None:
    """The ``<attr>`` of a file name ``<prefix><attr>.csv``, else None."""
    if not (name.startswith(prefix) and name.endswith(".csv")):
        return None
    attribute = name[len(prefix) : -len(".csv")]
    return attribute if _PLAIN.fullmatch(attribute) else None


def _read_regular_file(path: str) -> str:
    """The UTF-8 text of the regular file ``path``, opened without following a symbolic
    link (and without waiting on a FIFO) in case the folder changed since it was listed."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ConfigError(f"hierarchy file {path} is not a regular file")
            data = f.read()
    except OSError as exc:
        raise ConfigError(f"cannot read hierarchy file {path}: {exc.strerror}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"hierarchy file {path} is not UTF-8 text") from exc


def _is_multiple(width: float, previous: float) -> bool:
    ratio = width / previous
    return ratio >= 1 and abs(ratio - round(ratio)) < 1e-9


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))
