"""Choose a release's parameters in one call: one dry run per setting of a sweep
(``{"k": [3, 5, 10]}``, ``{"l": [2, 3], "algorithm": ["greedy", "scalable"]}``), each
summed up in one row, as ARX users compare settings before they publish one.

Every row comes from :func:`~sqlanon.release.ke_release.release_ke` or
:func:`~sqlanon.release.lhd_release.release_lhd` with ``dry_run=True``: the same planner,
the same refusals, nothing written. A setting the data cannot meet
(:class:`~sqlanon.errors.InfeasibleError`) is a row too, with why in ``refused``.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from sqlanon.errors import ConfigError, InfeasibleError
from sqlanon.release import ke_release, lhd_release
from sqlanon.session import Session
from sqlanon.state import catalog

#: Per model: the parameters a sweep may vary, and the figures each row shows.
SWEEPABLE = {
    "ke": ("k", "e", "policy"),
    "lhd": ("l", "algorithm", "max_suppression", "recoding", "policy"),
}
_COMMON = ("rows_published", "held_back", "suppressed", "left_out", "chain_held")
FIGURES = {
    "ke": (*_COMMON, "groups", "sum_of_errors", "error_ratio"),
    "lhd": (*_COMMON, "classes", "precision_loss", "dm", "left_out_fraction"),
}


def settings(model: str, sweep: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the sweep's values, the first parameter varying slowest."""
    if model not in SWEEPABLE:
        raise ConfigError(f"model must be 'ke' or 'lhd', got {model!r}")
    if not isinstance(sweep, Mapping) or not sweep:
        raise ConfigError("sweep must map parameters to the values to try, e.g. {'k': [3, 5, 10]}")
    for name, values in sweep.items():
        if name not in SWEEPABLE[model]:
            raise ConfigError(f"a {model} sweep varies {', '.join(SWEEPABLE[model])}; got {name!r}")
        if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
            raise ConfigError(f"sweep {name!r} must list the values to try, got {values!r}")
    names = list(sweep)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*sweep.values())]


def preview(
    session: Session,
    source: str,
    family: str,
    *,
    model: str,
    sweep: Mapping[str, Sequence[Any]],
    **params: Any,
) -> list[dict[str, Any]]:
    """One dry run of the next version of ``family`` per setting of ``sweep`` (the
    other parameters from ``params``, as the model's release takes them); one row per
    setting, in order: the setting, then the figures of :data:`FIGURES` (``refused``:
    why the release would be refused, when it would)."""
    combos = settings(model, sweep)
    clash = set(params) & set(sweep)
    if clash:
        raise ConfigError(f"{sorted(clash)} given both as a parameter and in the sweep")
    if "dry_run" in params:
        raise ConfigError("preview always dry-runs; drop dry_run")
    verb = ke_release.release_ke if model == "ke" else lhd_release.release_lhd
    taken = set(inspect.signature(verb).parameters) - {"session", "source", "family", "dry_run"}
    unknown = sorted(set(params) - taken)
    if unknown:
        raise ConfigError(f"a {model} release takes no {', '.join(map(repr, unknown))}")
    rows = []
    for setting in combos:
        try:
            summary = verb(session, source, family, **params, **setting, dry_run=True)
        except InfeasibleError as exc:
            empty = {**dict.fromkeys(FIGURES[model]), "unchanged": False}
            rows.append({**setting, **empty, "refused": str(exc)})
            continue
        rows.append({**setting, **figures(model, summary), "refused": None})
    return rows


#: Per model: the parameters of a family's last release its next version is previewed with.
_KEPT = {
    "ke": ("key", "sensitive", "quasi", "k", "e", "policy", "dataset"),
    "lhd": (
        "key",
        "quasi",
        "sensitive",
        "l",
        "algorithm",
        "max_suppression",
        "recoding",
        "dataset",
    ),
}


def preview_next(
    session: Session, last: catalog.Release, sweep: Mapping[str, Sequence[Any]]
) -> list[dict[str, Any]]:
    """What the report compares (``last``: a family's newest release): the family's
    next version with its own parameters, then, per setting of ``sweep``, a new family
    with the other parameters of ``last`` on the same source in the same domain, which
    would compose with every release so far (a family keeps its privacy parameters:
    other settings need a new family). ``as`` says which each row is."""
    params = {n: last.parameters[n] for n in _KEPT[last.model] if n in last.parameters}
    domain = last.domain or None
    rows = []
    first = next(iter(sweep))
    if first in params:
        kept = {n: v for n, v in params.items() if n != first}
        for row in preview(
            session, last.source, last.family, model=last.model,
            sweep={first: [params[first]]}, domain_name=domain, **kept,
        ):  # fmt: skip
            rows.append({"as": "next version", **{n: params.get(n) for n in sweep}, **row})
    name = next(
        f"{last.family}_try{i}" for i in itertools.count(1)
        if catalog.latest(session, f"{last.family}_try{i}") is None
    )  # fmt: skip
    kept = {n: v for n, v in params.items() if n not in sweep}
    for row in preview(
        session, last.source, name, model=last.model, sweep=sweep, domain_name=domain, **kept
    ):
        rows.append({"as": "new family", **row})
    return rows


def figures(model: str, summary: Mapping[str, Any]) -> dict[str, Any]:
    """A dry run's summary as one row of figures (an ``unchanged`` release: its latest
    version's)."""
    found = {**summary, **(summary.get("utility") or {})}
    return {
        **{name: found.get(name) for name in FIGURES[model]},
        "unchanged": bool(summary.get("unchanged")),
    }
