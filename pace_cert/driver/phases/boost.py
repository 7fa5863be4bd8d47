"""Step (PACE): totally corrective boosting for a support smaller than the best.

Boosting (``pace_cert/learners/boost.py``) as the master: a support of at most
``best - 1`` learners mixing pool and newly priced trees, certified by the oracle like
any other candidate. It restarts from each of the best model's first
``pace.boost_restarts`` trees; every new tree a run used joins the pool (the enriched
L0 may combine them even when no run meets the budget). Gives up (uncertified) when no
run meets the size budget.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.result import Offer, PhaseResult
from pace_cert.driver.state import RunState
from pace_cert.driver.step import BaseStep
from pace_cert.learners.boost import boost
from pace_cert.master.rows import MasterSolution
from pace_cert.plumbing.budget import Budget


def boost_support(state: RunState, max_size: int, budget: Budget) -> PhaseResult:
    """The faithful loop on boosting's support of at most ``max_size`` learners."""
    depth = state.learner_depth()
    keep = [] if state.best is None else list(state.best[0].keep)
    starts: list[int | None] = [None, *keep[: state.cfg.tuning.pace.boost_restarts]]

    def solve(A: np.ndarray) -> MasterSolution | None:
        """Boost from several starts; the smallest support that meets the budget."""
        pool_n = len(state.learners)
        best = None
        for i, st in enumerate(starts):
            if budget.expired():
                break
            res = boost(
                state.X,
                state.y0,
                state.learners[:pool_n],
                state.domain,
                depth,
                state.original.n_classes,
                max_size,
                start=st,
                seed=state.cfg.seed + 101 * i,
                budget=budget,
                pool_cols=A[:, :pool_n],  # the loop's matrix: pool columns, once
            )
            if res is None:
                continue
            at = len(state.learners)
            state.learners.extend(res.new_trees)
            state.origin.extend(["new"] * len(res.new_trees))
            fits = res.feasible and res.support <= max_size
            if fits and (best is None or res.support < best[0]):
                w = np.zeros(at + len(res.new_trees))
                w[:pool_n] = res.weights[:pool_n]
                w[at:] = res.weights[pool_n:]
                best = (res.support, w, res.offsets)
        if best is None:
            return None
        w = np.r_[best[1], np.zeros(len(state.learners) - len(best[1]))]
        return MasterSolution(w, best[2], float(best[0]), None, False, "boost")

    res = faithful_loop(state, "boost", solve, state.learners, budget)
    if res.gave_up:
        state.say(f"[boost] no support of at most {max_size} learners on the samples")
        return PhaseResult.nothing()
    return res


class Boost(BaseStep):
    """PACE, after pruning: when a certified model of more than one tree exists."""

    name = "boost"

    def applies(self, state: RunState) -> bool:
        size = state.best_size()
        first = state.l1 is not None and state.l1.first_certified
        return first and size is not None and size > 1

    def share(self, state: RunState) -> float:
        return state.cfg.tuning.pace.boost_share

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        size = state.best_size()
        assert size is not None
        yield Offer(boost_support(state, size - 1, budget), "boost")
