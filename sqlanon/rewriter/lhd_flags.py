"""A condition over an lHD release as per-row flags: may / must be true, may / must be false.

The condition is cut into *components*: maximal subtrees reading one quasi column, and
in an AND or OR chain all the terms reading the same one (judged in Python once per
label of that column's :class:`LabelDomain` by :mod:`sqlanon.rewriter.lhd_components`;
the output carries a ``CASE`` over the label literals), and conditions reading no quasi
column (copied as SQL, exact). Components combine per row by Kleene logic over the four
flags, which is sound however they correlate. A row is *sure* when the condition must be
true and *possible* when it may be.

Each flag comes with a *fraction*, the share of the raw values under the row's labels
that satisfy the condition, assuming values spread uniformly under each label and the
components independent (AND multiplies, OR = a + b - ab, NOT = 1 - a); estimates use it.

With ``by_leaves`` (the general rewriter, :mod:`sqlanon.rewriter.lhd_general`) a
component the Python judge cannot read (``lower(sex) = 'female'``, ``age + 5 > 50``) is
judged by the database itself: one small CTE evaluates it on every leaf of every label
(``(label, leaf)`` rows of a VALUES list; an interval label that is one raw number is
its own leaf) and the row joins its label's verdict; a label with no leaves listed
(an interval, an unknown label) leaves the row possible. A term relating a quasi column
to another column is possible on every row. Without ``by_leaves`` both are refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter.lhd_components import (
    MAY_BE_FALSE,
    MAY_BE_TRUE,
    NEVER,
    SURE,
    Component,
    Judgement,
    judge_labels,
    judge_null,
    operands,
)
from sqlanon.rewriter.release_info import LabelDomain, ReleaseInfo
from sqlanon.rewriter.sqlbuild import column as _col
from sqlanon.rewriter.sqlbuild import cte as _cte
from sqlanon.rewriter.sqlbuild import fragment as _f
from sqlanon.rewriter.sqlbuild import show as _show

_DOUBLE = exp.DataType(this=exp.DataType.Type.DOUBLE)  # DataType.build parses, per call

#: The key of a column node: what tells the quasi columns from the others.
ColumnKey = Callable[[exp.Column], str]


@dataclass
class Flags:
    """SQL booleans: the condition may/must be true, may/must be false; and the fraction."""

    may_t: exp.Expr
    must_t: exp.Expr
    may_f: exp.Expr
    must_f: exp.Expr
    frac: exp.Expr


@dataclass(frozen=True)
class LeafJudge:
    """A CTE judging one component on every (label, leaf) pair, joined on the label."""

    name: str
    body: exp.Select
    alias: str
    column: str


def _column_names(tree: exp.Expr, key: ColumnKey) -> dict[int, frozenset[str]]:
    """The keys of the columns under each node of ``tree`` (by ``id``), in one pass:
    looking them up per node would walk a chain of n terms n times."""
    names: dict[int, frozenset[str]] = {}
    for node in reversed(list(tree.walk(bfs=False))):  # children before their parents
        found = [names[id(child)] for child in node.iter_expressions()]
        if isinstance(node, exp.Column):
            found.append(frozenset({key(node)}))
        names[id(node)] = frozenset().union(*found) if len(found) != 1 else found[0]
    return names


def possible() -> Flags:
    """A condition that may be true and may be false on every row."""
    return Flags(exp.true(), exp.false(), exp.true(), exp.false(), _f("0.5"))


class FlagCompiler:
    """Compiles conditions over the release rows aliased ``row`` into :class:`Flags`
    over the per-row columns it adds (:attr:`columns`, read as ``l.pN``).

    ``key`` names a column node (a release column by its own name); ``exact`` copies a
    condition reading no quasi column into the output."""

    def __init__(
        self,
        release: ReleaseInfo,
        row: str,
        key: ColumnKey,
        exact: Callable[[exp.Expr], exp.Expr],
        by_leaves: bool = False,
    ) -> None:
        assert release.domains is not None
        self.domains = release.domains
        self.quasi = frozenset(release.quasi)
        self.row, self.key, self.exact, self.by_leaves = row, key, exact, by_leaves
        self.names: dict[int, frozenset[str]] = {}
        self.columns: list[exp.Expr] = []  # per-row columns of the "lab" CTE
        self.judges: list[LeafJudge] = []  # CTEs the "lab" CTE joins (by_leaves)
        self.known: dict[str, exp.Column] = {}  # quasi column -> its lab column "label known"
        # (column, labels per code, labels per share) -> (code column, share expression)
        self.judged: dict[tuple[Any, ...], tuple[exp.Column, exp.Expr]] = {}
        self.by_sql: dict[tuple[str, str], Flags] = {}  # leaf-judged components by text

    def compile(self, tree: exp.Expr) -> Flags:
        """The flags of ``tree``, a condition over the release rows."""
        self.names.update(_column_names(tree, self.key))
        return self.flags(tree)

    def _add(self, expr: exp.Expr) -> exp.Column:
        name = f"p{len(self.columns)}"
        self.columns.append(exp.alias_(expr, name, copy=False))
        return exp.column(name, table="l")

    def _kind(self, node: exp.Expr) -> str | None:
        """The empty string for a condition reading no quasi column, the column's name
        for one reading a single quasi column and nothing else, None for any other."""
        names = self.names[id(node)]
        quasi = names & self.quasi
        if not quasi:
            return ""
        return next(iter(quasi)) if len(quasi) == 1 and names == quasi else None

    def flags(self, node: exp.Expr) -> Flags:
        node = node.unnest()
        kind = self._kind(node)
        if kind == "":
            return self._exact([node], exp.And)
        if kind is not None:
            return self._component([node], exp.And, kind)
        if isinstance(node, exp.Not):
            inner = self.flags(node.this)
            return Flags(
                inner.may_f, inner.must_f, inner.may_t, inner.must_t, _one_minus(inner.frac)
            )
        if isinstance(node, exp.And | exp.Or):
            return self._chain(node)
        if self.by_leaves:
            return possible()
        raise UnsupportedQueryError(
            f"a condition relating several columns is not supported: {_show(node)}; "
            "compare each quasi-identifier with literals"
        )

    def _chain(self, node: exp.And | exp.Or) -> Flags:
        """An AND or OR chain, its terms gathered (in order of first appearance) into one
        component per quasi column, one exact condition and the mixed terms; the parts
        combine by Kleene logic, the fractions as independent events. Gathering a
        column's terms is exact (it is one component like ``age IN (...)``) and keeps the
        output linear: one CASE per column, not one per term."""
        kind = type(node)
        parts: dict[str | int, list[exp.Expr]] = {}
        for term in operands(node, kind):
            found = self._kind(term)
            parts.setdefault(id(term) if found is None else found, []).append(term)
        flags = [
            self.flags(terms[0])
            if isinstance(key, int)
            else self._exact(terms, kind)
            if key == ""
            else self._component(terms, kind, key)
            for key, terms in parts.items()
        ]
        return combine(flags, kind)

    def _exact(self, terms: list[exp.Expr], kind: type[exp.Expr]) -> Flags:
        """Terms reading no quasi column: exact, copied as SQL."""
        join = exp.and_ if kind is exp.And else exp.or_
        exact = join(*[self.exact(t) for t in terms], copy=False)
        true = self._add(exp.func("COALESCE", exact, exp.false()))
        false = self._add(exp.func("COALESCE", exp.not_(exact.copy()), exp.false()))
        exact_frac = exp.Case(ifs=[exp.If(this=true.copy(), true=_f("1.0"))], default=_f("0.0"))
        return Flags(true, true.copy(), false, false.copy(), exact_frac)

    def _component(self, terms: list[exp.Expr], kind: type[exp.Expr], column: str) -> Flags:
        """Per row: the component's code on the row's label (a CASE listing the labels
        of all codes but the most frequent, its ELSE), its share of the label's values
        where neither SURE nor NEVER, and whether the catalog knows the label at all (a
        label it does not know may or may not satisfy the condition). Listing every
        label per component made a chain of n terms on several columns n CASEs of every
        label; an equality now lists the few labels over its value. In a column holding
        NULLs a NULL label is a label like the others (``None`` below)."""
        domain = self.domains.get(column, LabelDomain())
        labels = sorted({*domain.leaves, *domain.intervals})
        if not labels and not domain.nulls:
            return possible()
        try:
            component = Component(terms, kind)
        except UnsupportedQueryError:
            if not self.by_leaves:
                raise
            return self._by_leaves(terms, kind, column, domain)
        judged = judge_labels(component, domain)
        entries: list[tuple[str | None, Judgement]] = [(x, judged[x]) for x in labels]
        if domain.nulls:
            entries.insert(0, (None, judge_null(component)))
        by_code: dict[Any, list[str | None]] = {}
        by_share: dict[Any, list[str | None]] = {}
        for label, found in entries:
            by_code.setdefault(found.code, []).append(label)
            if found.code not in (SURE, NEVER):  # whose fraction is not 1 or 0
                by_share.setdefault(found.fraction, []).append(label)
        # Components judged alike (``sex = 'F'`` in every term of an OR) share columns.
        key = (column, _frozen(by_code), _frozen(by_share))
        if key not in self.judged:
            code_column = self._add(self._by_label(column, by_code))
            # DOUBLE, not DECIMAL: products of a few fractions of 17 digits overflow
            # DuckDB's decimal scale (38)
            shares = by_share or {0.5: []}  # no share: every known label is SURE or NEVER
            share: exp.Expr = exp.Cast(this=self._by_label(column, shares), to=_DOUBLE.copy())
            if len(by_share) > 1:  # a CASE over labels: computed once per row
                share = self._add(share)
            self.judged[key] = (code_column, share)
        code_column, share = self.judged[key]
        return _coded(code_column, share, self._known(column, labels, domain.nulls))

    def _known(self, column: str, labels: list[str], nulls: bool) -> exp.Column:
        """The lab column telling whether the row's label of ``column`` is one of
        ``labels`` or, in a column holding NULLs, NULL (one per column, shared by its
        components)."""
        if column not in self.known:
            found = exp.In(
                this=_col(self.row, column), expressions=[exp.Literal.string(x) for x in labels]
            )
            known = exp.func("COALESCE", found, exp.Boolean(this=nulls)) if labels else None
            self.known[column] = self._add(known or exp.Boolean(this=nulls))
        return self.known[column]

    def _by_label(self, column: str, groups: dict[Any, list[str | None]]) -> exp.Expr:
        """``CASE WHEN t.column IN (labels) THEN value ... ELSE value END``, the value
        with the most labels being the ELSE (the literal alone if there is one value);
        ``None`` among the labels is a NULL label (``t.column IS NULL``)."""
        values = sorted(groups, key=lambda v: len(groups[v]))
        ifs = [
            exp.If(this=self._label_in(column, groups[value]), true=exp.Literal.number(repr(value)))
            for value in values[:-1]
        ]
        default = exp.Literal.number(repr(values[-1]))
        return exp.Case(ifs=ifs, default=default) if ifs else default

    def _label_in(self, column: str, labels: list[str | None]) -> exp.Expr:
        texts = [exp.Literal.string(label) for label in labels if label is not None]
        row = _col(self.row, column)
        tests: list[exp.Expr] = [exp.In(this=row, expressions=texts)] if texts else []
        if None in labels:
            tests.insert(0, exp.Is(this=row.copy(), expression=exp.Null()))
        return exp.or_(*tests, copy=False)

    def _by_leaves(
        self, terms: list[exp.Expr], kind: type[exp.Expr], column: str, domain: LabelDomain
    ) -> Flags:
        """The component judged by the database on every leaf (see the module doc)."""
        join = exp.and_ if kind is exp.And else exp.or_
        condition = join(*[t.copy() for t in terms], copy=False)
        text = condition.sql()
        if (column, text) in self.by_sql:
            return copied(self.by_sql[(column, text)])
        body = leaf_judge(condition, self.key, column, domain)
        if body is None:
            return possible()
        alias = f"j{len(self.judges)}"
        self.judges.append(LeafJudge(f"judge{len(self.judges)}", body, alias, column))

        def read(name: str) -> exp.Column:
            return self._add(exp.column(name, table=alias))

        all_t, any_t, all_f, any_f = (read(n) for n in ("all_t", "any_t", "all_f", "any_f"))
        share = read("share")
        found = Flags(
            _f(f"COALESCE({any_t.sql()} = 1, TRUE)"),
            _f(f"COALESCE({all_t.sql()} = 1, FALSE)"),
            _f(f"COALESCE({any_f.sql()} = 1, TRUE)"),
            _f(f"COALESCE({all_f.sql()} = 1, FALSE)"),
            _f(f"COALESCE({share.sql()}, 0.5)"),
        )
        self.by_sql[(column, text)] = found
        return copied(found)

    def join_to(self, select: exp.Select) -> exp.Select:
        """``select`` (reading the release rows) LEFT JOINed to every leaf judge."""
        for judge in self.judges:
            label = exp.column("label", table=judge.alias)
            on = exp.NullSafeEQ(this=label, expression=_col(self.row, judge.column))
            table = exp.alias_(_cte(judge.name), judge.alias, table=True)
            select = select.join(table, on=on, join_type="LEFT", copy=False)
        return select


def leaf_judge(
    condition: exp.Expr, key: ColumnKey, column: str, domain: LabelDomain
) -> exp.Select | None:
    """Per label: whether ``condition`` holds on all / some leaves, fails on all / some,
    and the share of leaves it holds on; None when no label lists a leaf."""
    pairs: list[tuple[str | None, str | None]] = [
        (label, leaf) for label, leaves in domain.leaves.items() for leaf in sorted(leaves)
    ]
    pairs += [
        (label, repr(low))
        for label, (low, high) in domain.intervals.items()
        if low == high and label not in domain.leaves
    ]
    if not pairs:
        return None
    if domain.nulls:
        pairs += [(None, None), ("*", None)]
    numeric = not domain.leaves or all(_is_number(leaf) for _, leaf in pairs if leaf is not None)
    leaf: exp.Expr = exp.column("leaf", table="lv")
    if numeric and all(float(x).is_integer() for _, x in pairs if x is not None):
        # Whole numbers are read as integers, as an integer column is: PostgreSQL divides
        # them as integers (age / 10) and has no % for doubles.
        pairs = [(label, x if x is None else str(int(float(x)))) for label, x in pairs]
        leaf = exp.Cast(this=leaf, to=exp.DataType.build("BIGINT"))
    elif numeric:
        leaf = exp.Cast(this=leaf, to=_DOUBLE.copy())

    def on_leaf(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and key(node) == column:
            return leaf.copy()
        return node

    holds = condition.transform(on_leaf)
    fails = exp.not_(holds.copy(), copy=False)

    def share(test: exp.Expr, yes: str, no: str) -> exp.Expr:
        return exp.Case(ifs=[exp.If(this=test.copy(), true=_f(yes))], default=_f(no))

    values = exp.values(
        [
            exp.tuple_(
                *[exp.Null() if x is None else exp.Literal.string(x) for x in (label, leaf_text)]
            )
            for label, leaf_text in pairs
        ],
        alias="lv",
        columns=["label", "leaf"],
    )
    return (
        exp.select(
            exp.alias_(exp.column("label", table="lv"), "label"),
            exp.alias_(exp.func("MIN", share(holds, "1", "0")), "all_t"),
            exp.alias_(exp.func("MAX", share(holds, "1", "0")), "any_t"),
            exp.alias_(exp.func("MIN", share(fails, "1", "0")), "all_f"),
            exp.alias_(exp.func("MAX", share(fails, "1", "0")), "any_f"),
            exp.alias_(exp.func("AVG", share(holds, "1.0", "0.0")), "share"),
        )
        .from_(values, copy=False)
        .group_by(exp.column("label", table="lv"), copy=False)
    )


def copied(flags: Flags) -> Flags:
    return Flags(
        *(e.copy() for e in (flags.may_t, flags.must_t, flags.may_f, flags.must_f, flags.frac))
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _coded(code_column: exp.Column, share: exp.Expr, known: exp.Column) -> Flags:
    """The flags of a component from its code column, share and label-known column."""

    def code_in(*values: int) -> exp.Expr:
        listed = [exp.Literal.number(v) for v in values]
        if len(listed) == 1:
            return exp.EQ(this=code_column.copy(), expression=listed[0])
        return exp.In(this=code_column.copy(), expressions=listed)

    frac = exp.Case(
        ifs=[
            exp.If(this=exp.not_(known.copy(), copy=False), true=_f("0.5")),
            exp.If(this=code_in(SURE), true=_f("1.0")),
            exp.If(this=code_in(NEVER), true=_f("0.0")),
        ],
        default=share.copy(),
    )
    unknown = exp.not_(known.copy(), copy=False)
    return Flags(
        exp.or_(code_in(*MAY_BE_TRUE), unknown, copy=False),
        exp.and_(code_in(SURE), known.copy(), copy=False),
        exp.or_(code_in(*MAY_BE_FALSE), unknown.copy(), copy=False),
        exp.and_(code_in(NEVER), known.copy(), copy=False),
        frac,
    )


def combine(flags: list[Flags], kind: type[exp.Expr]) -> Flags:
    """The AND (``kind``) or OR of several flags, by Kleene logic; fractions as
    independent events (AND: their product; OR: 1 - the product of the complements)."""
    if len(flags) == 1:
        return flags[0]
    every, some = (exp.and_, exp.or_) if kind is exp.And else (exp.or_, exp.and_)

    def joined(join: Callable[..., exp.Expr], field: str) -> exp.Expr:
        return join(*[getattr(f, field) for f in flags], copy=False)

    if kind is exp.And:
        frac = _product([f.frac for f in flags])
    else:
        frac = _one_minus(_product([_one_minus(f.frac) for f in flags]))
    return Flags(
        joined(every, "may_t"),
        joined(every, "must_t"),
        joined(some, "may_f"),
        joined(some, "must_f"),
        frac,
    )


def _frozen(groups: dict[Any, list[str | None]]) -> tuple[tuple[Any, tuple[str | None, ...]], ...]:
    return tuple(sorted((value, tuple(labels)) for value, labels in groups.items()))


def _product(factors: list[exp.Expr]) -> exp.Expr:
    result: exp.Expr = exp.paren(factors[0], copy=False)
    for factor in factors[1:]:
        result = exp.Mul(this=result, expression=exp.paren(factor, copy=False))
    return result


def _one_minus(frac: exp.Expr) -> exp.Expr:
    return exp.Sub(this=_f("1.0"), expression=exp.paren(frac, copy=False))
