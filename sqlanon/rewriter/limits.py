"""Bounds on an analyst's query, checked before sqlglot parses it.

The rewriter's cost grows with the query (20,000 ORs kept a backend busy for seconds)
and sqlglot's parser recurses about 20 Python frames per nested parenthesis, so a few
dozen levels raise ``RecursionError``. Three cheap checks run first: the length in
characters (before anything else), then, on the token stream, the number of tokens and
the nesting depth (parentheses, brackets and CASE ... END, plus a run of prefix
operators such as ``NOT NOT NOT``). The data owner may change each bound
(:func:`sqlanon.set_limit`, stored in ``sqlanon.query_limits``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from sqlanon.errors import QueryLimitError, UnsupportedQueryError
from sqlanon.errors import one_line as plain_line


@dataclass(frozen=True)
class QueryLimits:
    """The bounds on one analyst query; the defaults pass any ordinary aggregate query
    (an IN list of a few thousand values) and refuse pathological ones in milliseconds."""

    #: characters of SQL text, checked before tokenizing
    max_query_chars: int = 50_000
    #: tokens (``age = 3 OR`` is 4): at 10,000 a rewrite took at most 0.76 s of CPU, but
    #: 3.4-4.2 s for ORs of two-column ANDs on lHD (BENCHMARKS.md, bench/rewrite_speed.py)
    max_query_tokens: int = 10_000
    #: nesting: parentheses, brackets, CASE, runs of NOT / unary minus; 32 stays far
    #: below Python's recursion limit in sqlglot's parser and generator
    max_query_depth: int = 32


DEFAULT_LIMITS = QueryLimits()

#: The names :func:`sqlanon.set_limit` accepts (rows of ``sqlanon.query_limits``).
LIMIT_NAMES = tuple(f.name for f in dataclasses.fields(QueryLimits))

_OPEN = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE, TokenType.CASE}
_CLOSE = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE, TokenType.END}
_PREFIX = {TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE}


def limits_from_rows(rows: list[tuple[object, object]]) -> QueryLimits:
    """The limits with the ``(name, value)`` rows of ``sqlanon.query_limits`` applied
    (unknown names are ignored: a newer sqlanon may have written them)."""
    found = {str(name): int(str(value)) for name, value in rows if str(name) in LIMIT_NAMES}
    return dataclasses.replace(DEFAULT_LIMITS, **found)


def one_line(error: BaseException) -> str:
    """An error's text on one line, without the ANSI underlining sqlglot adds."""
    return plain_line(str(error))


def tokens(sql: str, dialect: str, limits: QueryLimits = DEFAULT_LIMITS) -> list[Token]:
    """The tokens of ``sql`` once the query is known to be within ``limits``.

    Raises :class:`QueryLimitError` for a query too long, with too many tokens or nested
    too deeply, and :class:`UnsupportedQueryError` for text that does not tokenize (an
    unterminated string) or an unknown dialect."""
    if len(sql) > limits.max_query_chars:
        raise QueryLimitError(
            f"the query has {len(sql):,} characters, more than the limit of "
            f"{limits.max_query_chars:,} (max_query_chars); shorten it or ask the data "
            "owner to raise the limit"
        )
    try:
        found = Dialect.get_or_raise(dialect).tokenize(sql)
    except ValueError as exc:  # sqlglot: unknown dialect
        raise UnsupportedQueryError(f"unknown SQL dialect {dialect!r}: {one_line(exc)}") from exc
    except SqlglotError as exc:
        raise UnsupportedQueryError(f"cannot read the query: {one_line(exc)}") from exc
    if len(found) > limits.max_query_tokens:
        raise QueryLimitError(
            f"the query has {len(found):,} tokens, more than the limit of "
            f"{limits.max_query_tokens:,} (max_query_tokens); split it into several queries "
            "or ask the data owner to raise the limit"
        )
    depth = deepest = run = 0
    for token in found:
        kind = token.token_type
        run = run + 1 if kind in _PREFIX else 0
        if kind in _OPEN:
            depth += 1
        elif kind in _CLOSE:
            depth = max(depth - 1, 0)
        deepest = max(deepest, depth + run)
        if deepest > limits.max_query_depth:
            raise QueryLimitError(
                f"the query is nested more than {limits.max_query_depth} levels deep "
                "(max_query_depth: parentheses, CASE, runs of NOT or minus signs); "
                "simplify it or ask the data owner to raise the limit"
            )
    return found


def parse_statement(
    sql: str,
    dialect: str,
    limits: QueryLimits = DEFAULT_LIMITS,
    checkpoint: Callable[[], None] | None = None,
) -> exp.Expr:
    """The one statement in ``sql``, a SELECT or a set operation of SELECTs, parsed in
    ``dialect`` after the limits are checked on its tokens; else UnsupportedQueryError.
    ``checkpoint`` runs between tokenizing and parsing (a pending cancel stops there)."""
    found = tokens(sql, dialect, limits)
    if checkpoint is not None:
        checkpoint()
    try:
        parsed = Dialect.get_or_raise(dialect).parser().parse(found, sql)
    except ParseError as err:
        raise UnsupportedQueryError(f"cannot parse the query: {one_line(err)}") from err
    statements = [s for s in parsed if s is not None]
    if len(statements) != 1:
        raise UnsupportedQueryError(
            f"expected exactly one statement, got {len(statements)}; send one SELECT at a time"
        )
    stmt = statements[0]
    if not isinstance(stmt, exp.Select | exp.SetOperation):
        raise UnsupportedQueryError(
            f"only SELECT queries are answered; got {stmt.key.upper()}: {stmt.sql()[:80]}"
        )
    return stmt
