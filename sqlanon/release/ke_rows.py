"""The row path of a (k,e) release, for the seeds' ``paper`` policy (which plans record
by record): the release table, its bounds and the members' state from arrays of rows."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sqlanon.models import ke_shuffle
from sqlanon.models.cells import Cells
from sqlanon.release.state import joinable_keys, load_members, random_order
from sqlanon.session import Session
from sqlanon.state import bounds, live
from sqlanon.state.source import Source, bounds_relation, idents, relation, render_sql


def write_rows(
    session: Session,
    src: Source,
    key: str,
    quasi: Sequence[str],
    sensitive: str,
    table: str,
    keys: np.ndarray,
    values: np.ndarray,
    group: np.ndarray,
    cells: Cells,
    rows: dict[str, np.ndarray],
    live_rows: int,
    ghosts: live.Ghosts,
) -> None:
    """Write the release table and its bounds, and load the records' state for
    :func:`write_members`. Records ``live_rows`` and after are ghosts."""
    q = session.quote_ident
    chosen = group >= 0
    donor = ke_shuffle.permute_within_groups(group, ke_shuffle.secure_rng())
    published = np.flatnonzero(chosen)
    order = random_order(published.size)
    # The rows go into the temporary table in the release's order, held-back ones
    # last: the join streams them so and the sort by ord finds them sorted (10^6
    # rows: 0.3 s less). The ORDER BY alone decides the published order.
    layout = np.empty(published.size, dtype=np.int64)
    layout[order] = published
    layout = np.concatenate([layout, np.flatnonzero(~chosen)])
    ord_ = np.full(len(chosen), -1, dtype=np.int64)
    ord_[published] = order
    if ghosts.count:
        # Ghost slots take part in the shuffle; every value is looked up by record
        # (key as text or ghost id) among the source's and the ghosts' kept values.
        live_layout = layout[layout < live_rows]
        ghost_layout = layout[layout >= live_rows]
        load_members(
            session,
            keys[live_layout],
            "VARCHAR",
            group[live_layout],
            cells.cell[live_layout],
            rows["row_hash"][live_layout],
            rows["value_hash"][live_layout],
            extra={
                "s_key": (keys[donor][live_layout], "VARCHAR"),
                "ord": (ord_[live_layout], "BIGINT"),
            },
        )
        session.load_temp(
            "_sqlanon_ghost_members",
            {
                "record_key": keys[ghost_layout],
                "group_id": group[ghost_layout],
                "cell_id": cells.cell[ghost_layout],
                "s_key": keys[donor][ghost_layout],
                "ord": ord_[ghost_layout],
            },
            {
                "record_key": "VARCHAR",
                "group_id": "INTEGER",
                "cell_id": "BIGINT",
                "s_key": "VARCHAR",
                "ord": "BIGINT",
            },
        )
        session.execute("DROP TABLE IF EXISTS _sqlanon_values")
        session.execute(
            render_sql(
                session,
                "ke_ghost_values",
                key=q(key),
                sensitive=q(sensitive),
                source=src.qualified(session),
            )
        )
        session.execute(
            render_sql(
                session,
                "ke_write_release_ghosts",
                release=relation(session, table),
                quasi_q=idents(session, quasi, "q"),
                sensitive=q(sensitive),
                source=src.qualified(session),
                key=q(key),
            )
        )
        session.execute("DROP TABLE _sqlanon_values")
    else:
        join_keys, key_type = joinable_keys(keys, src.columns[key])
        # Exact integer values travel with the assignment; others are read back from the
        # source record they belong to, in the column's own type. Held-back records
        # (group -1) carry their own key, no value and no place in the release.
        exact = bounds.exact_integers(src.columns[sensitive], values)
        if exact:
            donor_values = np.where(chosen, values[donor], 0).astype(np.int64)
            donated = {"s": (donor_values[layout], src.columns[sensitive])}
        else:
            donated = {"s_key": (join_keys[donor][layout], key_type)}
        load_members(
            session,
            join_keys[layout],
            key_type,
            group[layout],
            cells.cell[layout],
            rows["row_hash"][layout],
            rows["value_hash"][layout],
            extra={**donated, "ord": (ord_[layout], "BIGINT")},
        )
        session.execute(
            render_sql(
                session,
                "ke_write_release_values" if exact else "ke_write_release",
                release=relation(session, table),
                quasi_q=idents(session, quasi, "q"),
                sensitive=q(sensitive),
                source=src.qualified(session),
                key=q(key),
            )
        )
    by_group = _by_group_and_value(values, group)
    bounds.write_bounds_rows(
        session,
        bounds_relation(session, table),
        relation(session, table),
        q(sensitive),
        src.columns[sensitive],
        values[by_group],
        group[by_group],
    )


def _by_group_and_value(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Indices of the published records (group >= 0) sorted by (group, value).

    The bounds table depends only on each group's multiset of values and sorts its input
    by (group, value): handed over in that order, its sort is one pass over sorted data
    (an unstable sort by value and a 16-bit radix sort by group cost about half of a
    lexsort; the order of equal values of a group does not matter).
    """
    published = np.flatnonzero(group >= 0)
    by_value = published[np.argsort(values[published])]
    g = group[by_value]
    small = len(g) == 0 or int(g.max()) <= np.iinfo(np.int16).max
    return by_value[np.argsort(g.astype(np.int16) if small else g, kind="stable")]
