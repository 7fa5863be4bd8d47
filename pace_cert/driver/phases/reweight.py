"""L0 fallback: iteratively reweighted L1 from the smallest certified model.

An anytime route towards the L0 optimum (Candes, Wakin and Boyd 2008): the faithful
loop on min sum_t c_t w_t with c_t = 1 / (w_t + eps * max w) from the last certified
weights, so learners with small or no weight become expensive and drop out. Each round
is an ordinary L1 faithful loop (few separation rounds, as it moves the weights
smoothly); it stops when the support no longer shrinks, a loop does not certify, or
after ``l0.reweight_rounds``. Quick, but often little smaller than the L1 model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from pace_cert.budget import Budget
from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.result import PhaseResult
from pace_cert.driver.state import RunState
from pace_cert.master.l1 import L1Master
from pace_cert.master.rows import MasterSolution
from pace_cert.model.ensemble import Tree


def reweighted_l1(
    state: RunState,
    start: PhaseResult,
    learners: list[Tree],
    budget: Budget,
    guide: np.ndarray | None = None,
) -> PhaseResult:
    """Reweighted L1 from the certified ``start``. ``guide`` (a boolean mask over
    learners, e.g. the last L0 candidate's support) sets the first costs instead: 1 on
    the mask, 1 / eps elsewhere. Returns the smallest certified result (``start`` if
    none is smaller)."""
    tun = state.cfg.tuning.l0
    best = start
    n = len(learners)
    for k in range(tun.reweight_rounds):
        if budget.expired() or best.model.n_trees <= 1:
            break
        w = np.zeros(n)
        if k == 0 and guide is not None and guide.any():
            w[guide] = 1.0
        else:
            w[best.keep] = best.weights
        cost = 1.0 / (w + tun.reweight_eps * float(w.max()))
        cost /= cost.min()
        lp = L1Master(seed=state.cfg.seed)  # warm within the loop: costs fixed

        def solve(A: np.ndarray, lp: L1Master = lp, cost: np.ndarray = cost) -> MasterSolution:
            s = lp.solve(np.hstack([A[:, :n] / cost, A[:, n:]]), n, budget)  # w' = c w
            return dataclasses.replace(s, weights=s.weights / cost)

        res = faithful_loop(state, "l0-reweighted", solve, learners, budget)
        if not res.certified or res.model is None:
            break
        if res.model.n_trees >= best.model.n_trees:
            break
        state.say(f"[l0-reweighted] certified {res.model.n_trees} learners")
        best = res
    return best


class ReweightedL1:
    """First fallback of an L0 loop that did not certify in its share."""

    suffix = "-reweighted"

    def applies(self, state: RunState, guide: np.ndarray | None) -> bool:
        return state.best is not None

    def run(
        self, state: RunState, learners: list[Tree], guide: np.ndarray | None, budget: Budget
    ) -> Iterator[PhaseResult]:
        assert state.best is not None
        yield reweighted_l1(state, state.best[0], learners, budget, guide)
