"""L0 fallback: iteratively reweighted L1 from the smallest certified model.

An anytime route towards the L0 optimum (Candes, Wakin and Boyd 2008): the faithful
loop on min sum_t c_t w_t with c_t = 1 / (w_t + eps * max w) from the last certified
weights, so learners with small or no weight become expensive and drop out. Each round
is an ordinary L1 faithful loop (few separation rounds, as it moves the weights
smoothly); it stops when the support no longer shrinks (after one sharper retry), a
loop does not certify, or after ``l0.reweight_rounds`` loops. A guided start (the
refuted L0 candidate's support cheap, every other learner dear) that certifies nothing
smaller is not the end: the next loop starts from the certified weights (a 600 s
spambase 50 run stopped there at 46 trees, where unguided loops reach 39). Quick, but
often little smaller than the L1 model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.result import PhaseResult
from pace_cert.driver.state import RunState
from pace_cert.master.l1 import L1Master
from pace_cert.master.rows import MasterSolution
from pace_cert.model.ensemble import Tree
from pace_cert.plumbing.budget import Budget

#: a reweighted loop that certifies but does not shrink is tried once more with its
#: eps times this (costs of light learners up to 1 / (eps * STALL_EPS))
STALL_EPS = 0.1


def reweight_costs(w: np.ndarray, eps: float) -> np.ndarray:
    """Costs ``1 / (w + eps * max w)``, scaled so the cheapest is 1 (learners with weight
    0 cost ``1 / eps`` times the heaviest one's). ``w`` >= 0 needs a positive entry."""
    cost = 1.0 / (w + eps * float(w.max()))
    return cost / cost.min()


def reweighted_l1(
    state: RunState,
    start: PhaseResult,
    learners: list[Tree],
    budget: Budget,
    guide: np.ndarray | None = None,
) -> PhaseResult:
    """Reweighted L1 from the certified ``start``. ``guide`` (a boolean mask over
    learners, e.g. the last L0 candidate's support) sets the first costs instead: 1 on
    the mask, 1 / eps elsewhere; when that guided loop certifies nothing smaller, the
    next starts from ``start``'s weights. A loop that certifies but does not shrink is
    tried once more with eps times ``STALL_EPS`` (sharper costs). A ``start`` that is no
    weighting of the pool (``keep`` empty) has no weights to go on from: only a guided
    loop runs. Returns the smallest certified result (``start`` if none is smaller)."""
    tun = state.cfg.tuning.l0
    best = start
    n = len(learners)
    eps = tun.reweight_eps
    guided = guide is not None and bool(guide.any())
    for k in range(tun.reweight_rounds):
        if budget.expired() or best.model.n_trees <= 1:
            break
        w = np.zeros(n)
        if k == 0 and guided:
            w[guide] = 1.0
        else:
            w[best.keep] = best.weights
        if not w.any():  # ``best`` is no weighting of the pool (a start, refit or synth model)
            break
        cost = reweight_costs(w, eps)
        lp = L1Master(seed=state.cfg.seed)  # warm within the loop: costs fixed

        def solve(A: np.ndarray, lp: L1Master = lp, cost: np.ndarray = cost) -> MasterSolution:
            s = lp.solve(np.hstack([A[:, :n] / cost, A[:, n:]]), n, budget)  # w' = c w
            return dataclasses.replace(s, weights=s.weights / cost)

        res = faithful_loop(state, "l0-reweighted", solve, learners, budget)
        certified = res.certified and res.model is not None
        if not certified or res.model.n_trees >= best.model.n_trees:
            if k == 0 and guided:
                continue  # the guide's costs led nowhere: from the certified weights
            if certified and eps > tun.reweight_eps * STALL_EPS:  # stalled: once more, sharper
                eps *= STALL_EPS
                continue
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
