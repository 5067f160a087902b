"""The rewrite's work grows linearly with the query (issue 23): counted, never timed.

Wall-clock assertions are flaky on a shared machine, so the work of one rewrite is the
number of Python function calls it makes (``sys.setprofile``), deterministic once the
caches a first rewrite fills (dialects, fixed SQL fragments) are warm. Doubling an OR
chain, an AND chain or an IN list may at most double that work, plus 10% for what does
not double; a run past that budget is stopped, so an exponential rewrite fails quickly
instead of running for minutes. On an lHD release the work per listed value does not
grow with the number of labels the column has (each label's leaves used to be compared
with each listed value); on a widths hierarchy, whose labels are judged at the query's
numbers, a chain of ranges used to cost its length squared. ``bench/rewrite_speed.py`` measures the times.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from sqlanon.rewriter import LabelDomain, ReleaseInfo, rewrite
from tests.test_rewrite_refusals import CATALOG as KE_CATALOG

GROWTH = 2.2  # doubling the query may at most double the work, plus 10%


class OverBudget(BaseException):  # not an Exception: the rewriter maps those to its errors
    pass


def calls(work: Callable[[], object], budget: float = float("inf")) -> int:
    """Python function calls made by ``work()``; OverBudget once they pass ``budget``."""
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call":
            count += 1
            if count > budget:
                raise OverBudget

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def lhd_catalog(labels: int, widths: bool = False) -> dict[str, ReleaseInfo]:
    """An lHD release whose ``age`` has ``labels`` leaf labels, one per 10 and ``*`` (an
    ARX hierarchy of three levels; with ``widths``, a widths hierarchy: points, intervals
    of 10 and the whole line), and whose ``sex`` has two labels and ``*``."""
    if widths:
        intervals = {str(i): (float(i), float(i)) for i in range(labels)}
        intervals |= {f"[{i}, {i + 10})": (float(i), i + 10.0) for i in range(0, labels, 10)}
        age = LabelDomain(intervals=intervals | {"*": (-math.inf, math.inf)})
    else:
        leaves = [str(i) for i in range(labels)]
        ages = {v: frozenset({v}) for v in leaves}
        ages |= {f"{i}-{i + 9}": frozenset(leaves[i : i + 10]) for i in range(0, labels, 10)}
        age = LabelDomain(leaves=ages | {"*": frozenset(leaves)})
    sex = {"F": frozenset({"F"}), "M": frozenset({"M"}), "*": frozenset({"F", "M"})}
    domains = {"age": age, "sex": LabelDomain(leaves=sex)}
    info = ReleaseInfo("p", 1, "p_v1", "lhd", ("age", "sex"), ("loss",), domains=domains)
    return {"p": info, "p_v1": info}


def chain(joiner: str, term: Callable[[int], str], n: int) -> str:
    return f" {joiner} ".join(term(i) for i in range(n))


WHERES: dict[str, Callable[[int], str]] = {
    "ORs of equalities": lambda n: chain("OR", lambda i: f"age = {i}", n),
    "ANDs of inequalities": lambda n: chain("AND", lambda i: f"age <> {i}", n),
    "ORs over two columns": lambda n: chain(
        "OR", lambda i: f"age = {i}" if i % 2 else f"sex = '{'FM'[i % 4 // 2]}'", n
    ),
    "ORs of ANDs over two columns": lambda n: chain(
        "OR", lambda i: f"(age = {i} AND sex = 'F')", n
    ),
    "ORs of BETWEENs": lambda n: chain("OR", lambda i: f"age BETWEEN {i} AND {i + 1}", n),
    "IN list": lambda n: f"age IN ({', '.join(str(i) for i in range(n))})",
    "IN list on the sensitive column": lambda n: f"loss IN ({', '.join(map(str, range(n)))})",
}


def _check_linear(sql_of: Callable[[int], str], catalog: Any, n: int) -> None:
    rewrite(sql_of(n), catalog)  # warm the caches
    small = calls(lambda: rewrite(sql_of(n), catalog))
    try:
        calls(lambda: rewrite(sql_of(2 * n), catalog), budget=GROWTH * small)
    except OverBudget:
        pytest.fail(f"{n} -> {2 * n} terms: more than {GROWTH}x the {small:,} calls")


@pytest.mark.parametrize("hierarchy", ["ARX", "widths"])
@pytest.mark.parametrize("shape", sorted(WHERES))
def test_lhd_rewrite_work_is_linear(shape: str, hierarchy: str) -> None:
    where = WHERES[shape]
    catalog = lhd_catalog(40, widths=hierarchy == "widths")
    # ORs over two columns were exponential: 12 terms took 1.5 s, 18 three minutes
    n = 10 if "two columns" in shape else 200
    _check_linear(lambda k: f"SELECT SUM(loss) AS s FROM p WHERE {where(k)}", catalog, n)


@pytest.mark.parametrize(
    "shape", ["ORs of equalities", "ANDs of inequalities", "ORs of BETWEENs", "IN list"]
)
def test_ke_rewrite_work_is_linear(shape: str) -> None:
    where = WHERES[shape]
    _check_linear(
        lambda k: f"SELECT SUM(capital_loss) AS s FROM adult_ke WHERE {where(k)}", KE_CATALOG, 200
    )


def test_lhd_work_per_listed_value_does_not_grow_with_the_labels() -> None:
    def per_value(labels: int) -> float:
        catalog = lhd_catalog(labels)

        def sql(n: int) -> str:
            return f"SELECT SUM(loss) AS s FROM p WHERE {WHERES['IN list'](n)}"

        rewrite(sql(400), catalog)
        return (
            calls(lambda: rewrite(sql(400), catalog)) - calls(lambda: rewrite(sql(200), catalog))
        ) / 200

    few, many = per_value(40), per_value(160)
    assert many <= 1.25 * few, (few, many)
