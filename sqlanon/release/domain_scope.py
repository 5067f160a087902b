"""A release's place in its domain (:mod:`sqlanon.state.domains`): which releases it
composes with, and what the domain's cells constrain before and after it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlanon import sqltext
from sqlanon.session import Session
from sqlanon.state import catalog, domains
from sqlanon.state.source import Source, idents


@dataclass(frozen=True)
class DomainScope:
    """A release's place in its domain (:mod:`sqlanon.state.domains`): the domain's latest
    release ``last`` (None: the first), this release's ``seq``, and the attributes the
    domain's cells constrain before it and after it (``attributes``, source columns)."""

    name: str
    last: catalog.Release | None
    seq: int
    before: list[str]
    attributes: list[str]

    def linked(self, session: Session) -> set[str]:
        """Every incarnation (key or ghost id) of a chain of the domain (changed values)."""
        if self.last is None:
            return set()
        links = session.query(sqltext.load(session.dialect, "live_links"), [self.name])
        return {str(x) for link in links for x in link}

    def paper_releases(self, session: Session) -> list[str]:
        """``family vN`` of each release of the domain made under the seeds' unsafe
        policy ``paper``."""
        return [
            f"{r.family} v{r.version}"
            for r in catalog.domain_releases(session, self.name)
            if r.model == "ke" and r.parameters.get("policy") == "paper"
        ]

    def hashes(self, session: Session, key: str) -> dict[str, str]:
        """The read's fingerprint columns: ``value_hashed`` over the attributes after
        this release, ``old_hashed`` over those before (the key when there are none:
        then no record has a stored fingerprint to compare)."""
        return {
            "value_hashed": idents(session, self.attributes, "src"),
            "old_hashed": idents(session, self.before or [key], "src"),
        }

    def read_parameters(self, family: str, last: catalog.Release | None) -> list[Any]:
        # Version NULL when there is nothing before: the join to sqlanon.members is
        # constant false and never reads it (with version 0 PostgreSQL would scan the
        # BRIN ranges that autovacuum has not summarized yet).
        own = last is not None and self.last is not None and self.last.family == family
        other = None if own else self.last
        return [
            family,
            None if last is None else last.version,
            None if other is None else other.family,
            None if other is None else other.version,
            1 if own else 0,
        ]


def open_domain(
    session: Session,
    src: Source,
    key: str,
    family_last: catalog.Release | None,
    requested: str | None,
    sensitive: Sequence[str],
    dataset: str | None = None,
) -> DomainScope:
    """Decide the release's domain and serialize the domain's releases (each must see
    the one before: on PostgreSQL an advisory lock; DuckDB refuses the second to commit,
    ``sqlanon.releases`` holding one row per (domain, seq))."""
    name = domains.resolve(session, src, key, family_last, requested, dataset)
    session.lock_family(f"domain {name}")
    last = domains.latest(session, name)
    before = domains.require_columns(src, name, domains.attributes(last))
    after = sorted(set(before) | set(sensitive))
    return DomainScope(name, last, 1 if last is None else last.seq + 1, before, after)
