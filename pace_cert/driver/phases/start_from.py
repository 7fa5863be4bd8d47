"""Step: certify a model given from outside first (a frontier's outer rung).

A model certified faithful on a region is faithful on every region inside it, so the
best model of an enclosing frontier rung is expected to pass this region's oracle at
once. It is certified again all the same -- one round, CP-SAT on every label pair --
since a certificate only states what its own proof shows; a separating sample (none is
expected) is kept like any other and the step gives up. Once certified it is the
incumbent, and the plan's later steps only replace it with a smaller model: the inner
rung is never larger than the outer one.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.result import Offer, PhaseResult
from pace_cert.driver.state import RunState
from pace_cert.driver.step import BaseStep
from pace_cert.master.rows import MasterSolution
from pace_cert.plumbing.budget import Budget


def start_from(state: RunState, budget: Budget) -> PhaseResult:
    """``state.start`` certified in one oracle round (no screen: it is expected to be
    faithful). The result keeps no pool learners (``keep`` empty: the model is not a
    weighting of this run's pool), so later steps do not warm-start from it; the
    certificate names its trees' provenance as the start's own run did."""
    assert state.start is not None
    start = state.start.model
    n, k = len(state.learners), state.original.n_classes
    # a placeholder solution of the right shape: ``make`` ignores it and returns the
    # start model; the loop only reads its objective for the progress line
    sol = MasterSolution(np.zeros(n), np.zeros(k), float(start.n_trees), None, True, "start")
    res = faithful_loop(
        state,
        "start",
        lambda _A: sol,
        state.learners,
        budget,
        make=lambda _sol: (start, []),
        screen=False,
        max_rounds=1,
    )
    res.offsets = None
    s = state.start
    res.sources = (list(s.weights), list(s.merged), [list(t) for t in s.original_trees])
    if res.certified:
        state.say(f"[start] certified the outer rung's model here: {start.n_trees} trees")
    else:
        state.say("[start] the outer rung's model was not certified in its round; continuing")
    return res


class StartFrom(BaseStep):
    """First, when the run was given a start model."""

    name = "start-from"

    def applies(self, state: RunState) -> bool:
        start = state.start
        return start is not None and start.model.n_trees < state.original.n_trees

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        yield Offer(start_from(state, budget), "start")
