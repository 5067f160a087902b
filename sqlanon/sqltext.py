"""SQL kept as files, shipped as package data and loaded as data.

Each statement is one file. Where the engines agree it is ``sqlanon/sql/<name>.sql``,
the few words they spell differently written as fields (``CAST(x AS {text_type})``)
that :func:`load` fills from :data:`DIALECT_WORDS`; where a statement differs by more
than a word, each engine that needs its own has ``sqlanon/<engine>/sql/<name>.sql``.
An engine's catalog migrations are ``sqlanon/<engine>/migrations/NNN_name.sql``.
Templates take identifiers only as ``{name}`` fields filled with names the caller
already quoted with ``Session.quote_ident``: values always travel as ``$n`` parameters.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from pathlib import Path

from sqlanon.errors import ConfigError

_PACKAGE = Path(__file__).resolve().parent
_FIELD = re.compile(r"\{([a-z_]+)\}")
# One quoted identifier: "a""b" (SQL), or `a``b` (Spark's quote_ident).
_ONE = r'(?:"(?:[^"]|"")+"|`(?:[^`]|``)+`)'
_QUOTED = re.compile(rf"^({_ONE}\.)?{_ONE}( AS {_ONE})?$")
_SINGLE = re.compile(rf"^{_ONE}$")


def data_dir(kind: str) -> Path:
    """The folder ``kind`` shipped beside the package (``dbt_sqlanon``): inside it in a
    wheel (``sqlanon/_data/``, pyproject's force-include), at the repository root in a
    source checkout."""
    for candidate in (_PACKAGE / "_data" / kind, _PACKAGE.parent / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"sqlanon is installed without its {kind}/ folder")


#: What each engine writes for a word the common SQL (``sqlanon/sql/``) leaves as a field:
#: types (Spark's VARCHAR takes a length; JSON is text there), Spark's table format, integer
#: division, ``{explode}({series}(a, b))`` for one row per integer from a to b (PostgreSQL's
#: generate_series returns rows already), and the 64-bit hash of a row's values that
#: fingerprints it (PostgreSQL hashes the row's text: its own ``*_read_source.sql``).
DIALECT_WORDS: dict[str, dict[str, str]] = {
    "duckdb": {
        "text_type": "VARCHAR",
        "double_type": "DOUBLE",
        "json_type": "JSON",
        "table_format": "",
        "int_div": "//",
        "explode": "unnest",
        "series": "generate_series",
        "fingerprint": "hash",
    },
    "postgres": {
        "text_type": "VARCHAR",  # as the common SQL always cast; its own files write text
        "double_type": "DOUBLE PRECISION",
        "json_type": "JSON",
        "table_format": "",
        "int_div": "/",
        "explode": "",
        "series": "generate_series",
    },
    "spark": {
        "text_type": "STRING",
        "double_type": "DOUBLE",
        "json_type": "STRING",
        "table_format": "USING parquet",
        "int_div": "DIV",
        "explode": "explode",
        "series": "sequence",
        "fingerprint": "xxhash64",
    },
}
_WORDS = frozenset(word for words in DIALECT_WORDS.values() for word in words)


@cache
def load(dialect: str, name: str) -> str:
    """The text of ``sqlanon/<dialect>/sql/<name>.sql``, else of ``sqlanon/sql/<name>.sql``
    as :func:`spell` writes it for ``dialect`` (for PostgreSQL with its calls qualified
    too: :func:`pg_qualified`). The other fields are left for :func:`render`."""
    own = _PACKAGE / dialect / "sql" / f"{name}.sql"
    if own.is_file():
        return own.read_text()
    common = _PACKAGE / "sql" / f"{name}.sql"
    if not common.is_file():
        raise FileNotFoundError(f"no sqlanon/{dialect}/sql/{name}.sql or sqlanon/sql/{name}.sql")
    text = spell(common.read_text(), dialect)
    return pg_qualified(text) if dialect == "postgres" else text


def spell(template: str, dialect: str) -> str:
    """``template`` with each :data:`DIALECT_WORDS` field spelled as ``dialect`` spells it.

    >>> spell("CAST(x AS {text_type}) FROM {source}", "spark")
    'CAST(x AS STRING) FROM {source}'
    """
    words = DIALECT_WORDS[dialect]

    def fill(found: re.Match[str]) -> str:
        word = found.group(1)
        if word not in _WORDS:
            return found.group()
        if word not in words:
            raise KeyError(f"{dialect} has no spelling of {{{word}}}: give it one in DIALECT_WORDS")
        return words[word]

    return _FIELD.sub(fill, template)


def migrations(dialect: str) -> list[tuple[str, str]]:
    """``(name, sql)`` of every migration of a dialect, in order."""
    folder = _PACKAGE / dialect / "migrations"
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
    stay apart. On Spark (whose hashes read strings byte by byte whatever their
    collation) each column is followed by whether it is NULL: Spark's ``xxhash64``
    skips a NULL argument, so ``(NULL, 'a')`` would hash as ``('a', NULL)``."""
    parts = []
    for ref, type_name in columns:
        if not _QUOTED.match(ref) or " AS " in ref:
            raise ValueError(f"binary: {ref!r} is not one quoted column reference")
        if dialect == "spark":
            parts.append(f"{ref}, isnull({ref})")
            continue
        text = _TEXT.search(type_name) is not None
        parts.append(f"{ref} {_BINARY[dialect]}" if text else ref)
    return Match(", ".join(parts))


def number(value: int) -> Match:
    """An integer as SQL text, for :func:`render` (a view's version, which no parameter
    can stand for): built from an ``int``, so it can carry nothing else."""
    return Match(str(int(value)))


_PIVOTS = frozenset({"min", "max"})


def pivot(aggregate: str, value: str, by: str, names: list[str]) -> Match:
    """One column per value 0, 1, ... of the integer column ``by``: ``aggregate`` (min
    or max) of ``value`` over the rows where ``by`` is that number, named ``names`` (all
    quoted: ``"a"."v"``, ``"a"."n"``, ``["v0", ...]`` as ``Session.quote_ident`` wrote
    them).

    >>> pivot("max", '"g"', '"p"', ['"h0"', '"h1"']).split(", ")
    ['max(CASE WHEN "p" = 0 THEN "g" END) AS "h0"', 'max(CASE WHEN "p" = 1 THEN "g" END) AS "h1"']
    """
    if aggregate not in _PIVOTS:
        raise ValueError(f"pivot: {aggregate!r} is not one of {sorted(_PIVOTS)}")
    for ref in [value, by, *names]:
        if not _QUOTED.match(ref) or " AS " in ref:
            raise ValueError(f"pivot: {ref!r} is not one quoted column reference")
    return Match(
        ", ".join(
            f"{aggregate}(CASE WHEN {by} = {i} THEN {value} END) AS {name}"
            for i, name in enumerate(names)
        )
    )


_KEYED = {
    "duckdb": "sha256($1 || {})",
    "postgres": "sha256(convert_to($1 || {}, 'UTF8'))",
    "spark": "sha2(concat($1, {}), 256)",
}


def keyed_order(ref: str, dialect: str) -> Match:
    """SHA-256 of a release's secret (parameter ``$1``) and the text column ``ref``
    (``"x"."k"``): the keyed pseudo-random order of its rows (why it is sound:
    ``release.engine_path.shuffle_key``)."""
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


# --- PostgreSQL: no name resolved through a caller's search path ---------------------
#
# sqlanon's SQL runs with other people's rights (a superuser's release, another owner's).
# Whoever may create in a schema of the search path could plant a look-alike of a
# function it calls (CVE-2018-1058). The path is pinned (``postgres.session``), and on
# top of that every call of a pg_catalog function is written ``pg_catalog.f(...)``: the
# files for PostgreSQL alone spell it out, the SQL common to every dialect (and the few
# statements Python builds) get it from :func:`pg_qualified`, applied by both PostgreSQL
# sessions to everything they run. :func:`unqualified_calls` is the lint
# (tests/test_search_path.py) that keeps both honest.

#: Every pg_catalog function sqlanon's SQL calls by its bare name.
PG_FUNCTIONS = frozenset(
    """
    abs array_agg array_length avg bool_and bool_or cardinality ceil ceiling concat
    convert_to count current_database current_schema current_setting dense_rank encode exp floor
    format format_type generate_series hashtext hashtextextended jsonb_agg jsonb_array_elements_text
    jsonb_build_array jsonb_build_object jsonb_typeof left length ln lower max md5 min mod now
    pg_advisory_lock pg_advisory_unlock pg_advisory_xact_lock pg_size_bytes
    pg_try_advisory_xact_lock power quote_ident random rank regexp_replace replace round
    right row_number set_config sha256 sign sqrt stddev_pop string_agg substr sum to_jsonb trunc
    unnest upper var_pop
    """.split()
)

#: Words followed by ``(`` that are SQL syntax (or a type with a modifier), not a call.
_SYNTAX = frozenset(
    """
    all and any array as between cast char character check coalesce decimal exists filter
    operator
    from greatest grouping in join key least not nullif numeric on or over primary
    references row select table unique using values varchar view when where with
    """.split()
)
#: A name after these words is a relation (or an alias) with its column list, or a
#: function being defined or dropped, not a call.
_BEFORE_RELATION = frozenset(
    {"into", "table", "on", "as", "references", "index", "exists", "using", "function"}
)

_CODE_TOKEN = re.compile(
    r"""
      (?P<comment>--[^\n]*|/\*.*?\*/)
    | (?P<string>[eE]?'(?:[^']|'')*')
    | (?P<ident>"(?:[^"]|"")*")
    | (?P<dollar>\$(?P<tag>[A-Za-z_][A-Za-z0-9_]*)?\$.*?\$(?P=tag)\$)
    | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def _words(sql: str) -> list[tuple[int, int, str, str]]:
    """``(start, end, kind, text)`` of every token of ``sql`` (strings, quoted names,
    comments and dollar-quoted bodies are single tokens, so nothing inside them counts)."""
    out = []
    for m in _CODE_TOKEN.finditer(sql):
        kind = str(m.lastgroup)  # the outermost group: "dollar", never its "tag"
        if kind == "other" and m.group().isspace():
            continue
        out.append((m.start(), m.end(), kind, m.group()))
    return out


def _calls(sql: str) -> list[tuple[int, str, str | None]]:
    """Every ``name(`` of ``sql`` outside strings, quoted names, comments and dollar-quoted
    bodies: ``(offset, lower-case name, the schema written before it or None)``."""
    tokens = _words(sql)
    found = []
    for i, (start, _end, kind, text) in enumerate(tokens):
        if kind != "word" or i + 1 >= len(tokens) or tokens[i + 1][3] != "(":
            continue
        qualified_by = None
        if i >= 2 and tokens[i - 1][3] == ".":
            qualified_by = tokens[i - 2][3]
        elif i >= 1 and tokens[i - 1][2] == "word" and tokens[i - 1][3].lower() in _BEFORE_RELATION:
            continue
        found.append((start, text.lower(), qualified_by))
    return found


@lru_cache(maxsize=1024)
def pg_qualified(sql: str) -> str:
    """``sql`` with every bare call of a :data:`PG_FUNCTIONS` function written
    ``pg_catalog.f(...)`` (nothing else changes).

    >>> pg_qualified("SELECT count(*), max(\\"count\\") FROM t WHERE x IN (1)")
    'SELECT pg_catalog.count(*), pg_catalog.max("count") FROM t WHERE x IN (1)'
    """
    parts: list[str] = []
    done = 0
    for start, name, schema in _calls(sql):
        if schema is None and name in PG_FUNCTIONS:
            parts.append(sql[done:start])
            parts.append("pg_catalog.")
            done = start
    parts.append(sql[done:])
    return "".join(parts)


def unqualified_calls(sql: str) -> list[str]:
    """The calls of ``sql`` that would be looked up in the search path: bare names that
    are not SQL syntax (for the lint; dollar-quoted bodies are not looked into)."""
    return sorted({n for _s, n, schema in _calls(sql) if schema is None and n not in _SYNTAX})


def dollar_bodies(sql: str, languages: tuple[str, ...] = ("sql", "plpgsql")) -> list[str]:
    """The dollar-quoted bodies in ``sql`` of functions (and ``DO`` blocks, PL/pgSQL)
    written in one of ``languages``, without their quotes: the lint reads them as SQL.

    >>> dollar_bodies("CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $x$ SELECT 1 $x$;")
    [' SELECT 1 ']
    """
    tokens = _words(sql)
    bodies = []
    for i, (_s, _e, kind, text) in enumerate(tokens):
        if kind != "dollar":
            continue
        first = i
        while first > 0 and tokens[first - 1][3] != ";":
            first -= 1
        last = i
        while last + 1 < len(tokens) and tokens[last][3] != ";":
            last += 1
        words = [t[3].lower() for t in tokens[first : last + 1] if t[2] == "word"]
        language = "plpgsql" if words[:1] == ["do"] else None
        for a, b in zip(words, words[1:], strict=False):
            if a == "language":
                language = b
        if language in languages:
            tag_end = text.index("$", 1) + 1
            bodies.append(text[tag_end:-tag_end])
    return bodies
