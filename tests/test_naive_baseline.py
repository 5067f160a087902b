"""The bench's naive baseline (bench/naive_ke.py), checked against the seeds' rule and
an independent Definition 5 check, on small append histories (issue 15)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlanon.errors import InfeasibleError
from sqlanon.models.ke_paper import plan_paper
from tests.test_ke_paper import definition_5_failures

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from naive_ke import plan_naive  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 40), min_size=2, max_size=8), min_size=2, max_size=4),
    st.integers(2, 3),
    st.integers(0, 6),
)
def test_naive_checks_every_release(batches, k, e):
    """With the overlap test the naive baseline is the seeds' rule checked against every
    release, so its error is never below the seeds' (it refuses at least as much) when
    both answer; without it, Definition 5 against every earlier release holds."""
    values = np.zeros(0)
    history: list[np.ndarray] = []
    prev = np.zeros(0, dtype=np.int64)
    for batch in batches:
        values = np.r_[values, np.asarray(batch, dtype=float)]
        group = np.r_[prev, np.full(len(batch), -1, dtype=np.int64)]
        try:
            paper = plan_paper(values, group, group, k, e)
        except InfeasibleError:
            return
        strict = plan_naive(values, history, k, e, overlap=True)
        if strict is not None:
            assert strict.sum_of_errors >= paper.sum_of_errors - 1e-9
        loose = plan_naive(values, history, k, e)
        if loose is not None:
            for earlier in history:
                assert not definition_5_failures(earlier, loose.group, values, k, e)
        history.append(paper.group)
        prev = paper.group
