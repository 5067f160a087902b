"""The report's privacy sections: what the audit of the family's domain exposes, and
the rows a version left out (held back or suppressed) with why.

Both read private state (the audit, ``sqlanon.members``): the report is for the data
owner. The exposure block goes first on the page when any release of the domain
exposes a record, naming the attack, the counts and the releases.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlanon import sqltext
from sqlanon.errors import SqlanonError
from sqlanon.session import Session
from sqlanon.state import catalog
from sqlanon.state.audit_reads import audit_family

#: What each check of the audit does, for the reader of the report.
ATTACKS = {
    "by_cell": (
        "cell",
        "the worst case: records whose group was the same in every release of the domain "
        "(absent included) cannot be told apart, and at best the attacker learns their "
        "multiset of values, which holds too few distinct values (or too small a spread)",
    ),
    "by_subtraction": (
        "subtraction",
        "published multisets subtracted from the groups that contain them, repeated, "
        "narrow these records' candidate values below the requirement",
    ),
    "by_comparison": (
        "comparison",
        "intersecting the values of every group or class a record was published in "
        "narrows it below the requirement",
    ),
    "by_chain": (
        "chain",
        "the worst case of changed values: knowing which published records changed which "
        "attributes links the cells of their old and new values, and these records' cells "
        "(counting only members that never changed) leave too few candidates",
    ),
}

HELD_BACK_WHY = (
    "never published by a release of the domain (new rows, new values of changed records) "
    "and left out of this version: too few distinct values (or too small a spread) among "
    "them to form a valid piece yet, or the chain rule holds them. They are offered again "
    "at every release"
)
SUPPRESSED_WHY = (
    "published by an earlier release of the domain (this family or another), absent from "
    "this version (the attacker sees them disappear, and the audit counts that)"
)
CHAIN_WHY = (
    "of the rows held back or suppressed, those the chain rule left out (counted in them, "
    "not on top): the new value of a changed record, or every row of a cell of earlier "
    "releases that holds a changed record"
)


@dataclass(frozen=True)
class AuditSection:
    """The family's exposed records per version, and the HTML shown for the audit: the
    warning block (empty when nothing is exposed) and a one-line note."""

    exposed: dict[int, int]
    warning: str
    note: str


def audit_section(session: Session, family: str) -> AuditSection:
    """The audit of ``family``'s domain, as the report shows it."""
    try:
        rows = audit_family(session, family)
    except SqlanonError as exc:
        note = f'<p class="note">The audit could not run: {html.escape(str(exc))}</p>'
        return AuditSection({}, "", note)
    exposed = {int(r["version"]): int(r["exposed"]) for r in rows if r["family"] == family}
    domain = html.escape(str(rows[0]["domain"])) if rows else ""
    families = len({r["family"] for r in rows})
    scope = (
        f"the {len(rows)} release(s) of domain <code>{domain}</code> "
        f"({families} famil{'y' if families == 1 else 'ies'}, every model)"
    )
    incomplete = [r for r in rows if not r.get("subtraction_complete", True)]
    budget = (
        f" The subtraction stopped at its work budget at {len(incomplete)} release(s) "
        f"(first {_name(incomplete[0])}): its counts there are a lower bound (the cell "
        "check, the worst case, is exact)."
        if incomplete
        else ""
    )
    seeded = _seeded_warning(session, rows)
    if not any(r["exposed"] for r in rows):
        note = f'<p id="audit">The audit of {scope} finds no exposed record.{budget}</p>'
        return AuditSection(exposed, seeded, note)
    return AuditSection(exposed, seeded + _warning(rows, scope, budget), "")


def _seeded_warning(session: Session, rows: Sequence[dict[str, Any]]) -> str:
    """A block naming the domain's releases made with a ``seed`` by an sqlanon that still
    took one: their row order and shuffle came from the seed, so whoever guesses it links
    every row to its key. The audit's attacker knows memberships anyway; this one needs
    no knowledge at all."""
    if not rows:
        return ""
    domain = str(rows[0]["domain"])
    seeded = [r for r in catalog.domain_releases(session, domain) if r.parameters.get("seeded")]
    if not seeded:
        return ""
    names = ", ".join(f"{html.escape(r.family)} v{r.version}" for r in seeded)
    return f"""<div class="warning" id="seeded">
<h2>Warning: {len(seeded)} release(s) made with a seed</h2>
<p>{names} took a <code>seed</code> (earlier sqlanon versions allowed it for tests): its
row order and which record shows which value follow from the seed, so anyone who
guesses it links every row to its key. Withdraw these tables
(<code>DROP TABLE</code>, keeping the catalog) and release again.</p>
</div>
"""


def _name(row: dict[str, Any]) -> str:
    return f"{html.escape(str(row['family']))} v{row['version']}"


def _warning(rows: Sequence[dict[str, Any]], scope: str, budget: str) -> str:
    last = rows[-1]
    attacks = []
    for check, (name, what) in ATTACKS.items():
        hit = [r for r in rows if r.get(check, 0)]
        if hit:
            attacks.append(
                f"<li><b>{name}</b>: {what}. {last.get(check, 0):,} record(s) with every release "
                f"in hand, first at {_name(hit[0])}.</li>"
            )
    header = "".join(
        f"<th>{c}</th>"
        for c in (
            "release",
            "seq",
            "exposed",
            "newly exposed",
            "cell",
            "subtraction",
            "comparison",
            "chain",
        )
    )
    # The releases that exposed someone new, and the last one (exposure is cumulative).
    shown = [r for r in rows[:-1] if r["newly_exposed"]] + [last]
    body = "\n".join(
        f"<tr><td>{_name(r)}</td><td>{r['seq']}</td><td>{r['exposed']:,}</td>"
        f"<td>{r['newly_exposed']:,}</td><td>{r['by_cell']:,}</td>"
        f"<td>{r['by_subtraction']:,}</td><td>{r['by_comparison']:,}</td>"
        f"<td>{r.get('by_chain', 0):,}</td></tr>"
        for r in shown
    )
    return f"""<div class="warning" id="exposed">
<h2>Warning: {last["exposed"]:,} record(s) exposed</h2>
<p>An attacker holding {scope} pins {last["exposed"]:,} record(s) below the requirement
of a release that published them:</p>
<ul>
{"".join(attacks)}
</ul>
<table id="exposed-releases">
<thead><tr>{header}</tr></thead>
<tbody>
{body}
</tbody>
</table>
<p>The releases that exposed records first, and the last release; each row counts for
the attacker holding the releases up to it. The keys behind the counts:
<code>sqlanon audit --records</code> (owner only).{budget}</p>
</div>"""


def waiting_section(session: Session, versions: Sequence[catalog.Release]) -> str:
    """Per version of the family: rows held back (and since which version each has been
    waiting) and rows suppressed, with why; empty when every version published all."""
    family = versions[0].family
    counts = session.query(sqltext.load(session.dialect, "report_waiting"), [family])
    held: dict[int, dict[int, int]] = {}
    suppressed: dict[int, int] = {}
    for version, status, since, n in counts:
        if status == "held_back":
            held.setdefault(int(version), {})[int(since)] = int(n)
        else:
            suppressed[int(version)] = suppressed.get(int(version), 0) + int(n)
    if not held and not suppressed:
        return ""
    rows = []
    for r in versions:
        waiting = held.get(r.version, {})
        since = ", ".join(
            f"{n:,} since v{v}" if v < r.version else f"{n:,} new"
            for v, n in sorted(waiting.items())
        )
        rows.append(
            f"<tr><td>{r.version}</td><td>{sum(waiting.values()):,}</td>"
            f"<td>{since or '–'}</td><td>{suppressed.get(r.version, 0):,}</td></tr>"
        )
    return f"""<h2>Rows left out of a version</h2>
<table id="waiting">
<thead><tr><th>version</th><th>held back</th><th>waiting</th><th>suppressed</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody>
</table>
<p><b>Held back</b>: {HELD_BACK_WHY}. <b>Suppressed</b>: {SUPPRESSED_WHY}. <b>Chain
rule</b> (the table of versions): {CHAIN_WHY}. An lHD version leaves out at most its
<code>max_suppression</code> of its records (held back and suppressed together).</p>"""
