"""SQL kept as files (``sql/<dialect>/``, ``migrations/<dialect>/``), loaded as data.

In a wheel the folders ship inside the package (``sqlanon/_data/``); in a source
checkout they sit at the repository root. Templates take identifiers only as
``{name}`` fields filled with names the caller already quoted with
``Session.quote_ident``: values always travel as ``$n`` parameters.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from sqlanon.errors import ConfigError

_PACKAGE = Path(__file__).resolve().parent
_FIELD = re.compile(r"\{([a-z_]+)\}")
# One quoted identifier: "a""b" (SQL), or `a``b` (Spark's quote_ident).
_ONE = r'(?:"(?:[^"]|"")+"|`(?:[^`]|``)+`)'
_QUOTED = re.compile(rf"^({_ONE}\.)?{_ONE}( AS {_ONE})?$")
_SINGLE = re.compile(rf"^{_ONE}$")


def data_dir(kind: str) -> Path:
    """The folder ``sql`` or ``migrations``, wherever this install keeps it."""
    for candidate in (_PACKAGE / "_data" / kind, _PACKAGE.parent / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"sqlanon is installed without its {kind}/ folder")


# Common SQL casts to text as DuckDB and PostgreSQL spell it; Spark wants STRING
# (it takes VARCHAR only with a length).
_VARCHAR_CAST = re.compile(r"\bAS VARCHAR\b")


@cache
def load(dialect: str, name: str) -> str:
    """The text of ``sql/<dialect>/<name>.sql``, else of ``sql/common/<name>.sql`` (for
    Spark with ``AS VARCHAR`` spelled ``AS STRING``)."""
    own = data_dir("sql") / dialect / f"{name}.sql"
    if own.is_file():
        return own.read_text()
    common = data_dir("sql") / "common" / f"{name}.sql"
    if common.is_file():
        text = common.read_text()
        return _VARCHAR_CAST.sub("AS STRING", text) if dialect == "spark" else text
    raise FileNotFoundError(f"no sql/{dialect}/{name}.sql or sql/common/{name}.sql")


def migrations(dialect: str) -> list[tuple[str, str]]:
    """``(name, sql)`` of every migration of a dialect, in order."""
    folder = data_dir("migrations") / dialect
    return [(p.stem, p.read_text()) for p in sorted(folder.glob("[0-9]*.sql"))]


def statements(text: str) -> list[str]:
    """Split a file of several statements on ``;`` at line ends (the files hold no
    procedural code); comment lines are dropped."""
    lines = [ln for ln in text.splitlines() if not ln.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";\n") if s.strip().strip(";")]


class Match(str):
    """A join condition built here from quoted identifiers only (:func:`match`), so
    :func:`render` may place it where an identifier list would be refused."""


def match(left: str, right: str, columns: list[str], *, null_safe: bool = False) -> Match:
    """``left.c = right.c AND ...`` over quoted ``columns`` (``IS NOT DISTINCT FROM``
    when ``null_safe``), with quoted aliases ``left`` and ``right``.

    >>> match('"p"', '"r"', ['"cell"', '"s"'])
    '"p"."cell" = "r"."cell" AND "p"."s" = "r"."s"'
    """
    for name in [left, right, *columns]:
        if not _SINGLE.match(name):
            raise ValueError(f"match: {name!r} is not one quoted identifier")
    equal = " IS NOT DISTINCT FROM " if null_safe else " = "
    return Match(" AND ".join(f"{left}.{c}{equal}{right}.{c}" for c in columns))


#: Text compared byte by byte, whatever collation the column or session sets.
_BINARY = {"duckdb": "COLLATE C", "postgres": 'COLLATE "C"'}
_TEXT = re.compile(r"char|text|string", re.IGNORECASE)


def binary(columns: list[tuple[str, str]], dialect: str) -> Match:
    """A list of quoted column references (``"r"."c"``) with each text column (by its
    SQL type) compared byte by byte: values a case-insensitive collation calls equal
    stay apart. DuckDB and PostgreSQL."""
    parts = []
    for ref, type_name in columns:
        if not _QUOTED.match(ref) or " AS " in ref:
            raise ValueError(f"binary: {ref!r} is not one quoted column reference")
        text = _TEXT.search(type_name) is not None
        parts.append(f"{ref} {_BINARY[dialect]}" if text else ref)
    return Match(", ".join(parts))


_KEYED = {"duckdb": "sha256($1 || {})", "postgres": "sha256(convert_to($1 || {}, 'UTF8'))"}


def keyed_order(ref: str, dialect: str) -> Match:
    """SHA-256 of a release's secret (parameter ``$1``) and the text column ``ref``
    (``"x"."k"``): the keyed pseudo-random order of its rows (why it is sound:
    ``release.ke_engine.shuffle_key``). DuckDB and PostgreSQL."""
    if not _QUOTED.match(ref) or " AS " in ref:
        raise ValueError(f"keyed_order: {ref!r} is not one quoted column reference")
    return Match(_KEYED[dialect].format(ref))


def render(template: str, **quoted: str) -> str:
    """Fill ``{field}`` slots with already-quoted identifiers (or lists of them).

    Refuses anything that is not a quoted identifier (``"a"`` or ``"s"."t"``, optionally
    renamed: ``"s"."t" AS "u"``) or a comma-separated list of such, or a join condition
    :func:`match` built, so raw text can never reach the SQL.
    """
    for field, value in quoted.items():
        if isinstance(value, Match):
            continue
        if not all(_QUOTED.match(p) for p in _split_list(value)):
            raise ValueError(f"render: {field}={value!r} is not a quoted identifier list")

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in quoted:
            raise KeyError(f"template needs {{{name}}}")
        return quoted[name]

    return _FIELD.sub(fill, template)


def _split_list(value: str) -> list[str]:
    """Split ``"a", "b""c"`` (or `` `a`, `b` ``) on the commas outside quotes."""
    items: list[str] = []
    current: list[str] = []
    inside = ""
    for ch in value:
        if ch in '"`' and inside in ("", ch):
            inside = "" if inside else ch
        if ch == "," and not inside:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if current or items:
        items.append("".join(current).strip())
    return items


_FAMILY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,47}$")


def check_family(family: object) -> str:
    """A family name becomes table names: letters, digits and ``_`` only. It may come
    quoted as in SQL (``'"MixedCase"'``); the name is what is inside the quotes."""
    name = unquote(family)[0] if isinstance(family, str) else family
    if not isinstance(name, str) or not _FAMILY.match(name):
        raise ConfigError(
            f"family name {family!r} is not allowed: use 1-48 letters, digits or _ "
            "starting with a letter or _ (it names tables <family>_v<N>)"
        )
    return name


def unquote(name: str) -> tuple[str, bool]:
    """One identifier as given: ``'"A""b"'`` -> ``('A"b', True)``, ``'Ab'`` -> ``('Ab',
    False)``. A quoted name is matched exactly; an unquoted one ignoring case."""
    if len(name) >= 2 and name.startswith('"') and name.endswith('"'):
        inner = name[1:-1]
        if inner and '"' not in inner.replace('""', ""):
            return inner.replace('""', '"'), True
    return name, False


def split_name(text: str, what: str) -> list[tuple[str, bool]]:
    """A dotted name as SQL writes it, part by part: ``'"Clinic"."My.Table"'`` ->
    ``[('Clinic', True), ('My.Table', True)]``, ``'public.adult'`` -> ``[('public',
    False), ('adult', False)]``. Quotes double inside quoted parts."""
    parts: list[tuple[str, bool]] = []
    i = 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i < len(text) and text[i] == '"':
            chars: list[str] = []
            start = i + 1
            while True:
                end = text.find('"', start)
                if end < 0:
                    raise ConfigError(f"{what} {text!r}: a quote is not closed")
                chars.append(text[start:end])
                if text[end + 1 : end + 2] != '"':  # not a doubled quote: the part ends
                    break
                chars.append('"')
                start = end + 2
            part, quoted = "".join(chars), True
            i = end + 1
            if not part:
                raise ConfigError(f"{what} {text!r}: an empty quoted name")
        else:
            end = text.find(".", i)
            end = len(text) if end < 0 else end
            part, quoted = text[i:end].strip(), False
            if not part or '"' in part:
                raise ConfigError(
                    f"{what} {text!r} is not a name: write table or schema.table, with "
                    'double quotes around a part in mixed case ("Clinic"."MixedCase")'
                )
            i = end
        parts.append((part, quoted))
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return parts
        if text[i] != ".":
            raise ConfigError(f"{what} {text!r}: unexpected {text[i]!r} after {part!r}")
        i += 1
