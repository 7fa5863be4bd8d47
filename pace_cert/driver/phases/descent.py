"""L0 fallback: descend from the best certified size by bisection on robust supports.

The L0 master proposes the *sparsest* support meeting the samples; on domains too large
to enumerate CP-SAT refutes it round after round, and no size between the master's
bound and the certified incumbent is ever tried (a held-out Table 2 forest: candidates
of 9-11 trees refuted for 400 s beside a certified 22). The descent tries those sizes:
for a size k between ``lo`` (the last L0 candidate's size) and ``hi`` (the best
certified size), the faithful loop runs on a *robust* support of k learners, for at
most ``l0.descent_rounds`` rounds: from the support of the max-margin LP over the whole
pool, the learner whose removal keeps the largest normalised margin on the samples goes,
one at a time, down to k (:func:`robust_support`; max-margin weights). Measured on the
samples of a cancer 25-tree run: 0.4-1 s a support, and larger margins than a HiGHS
MILP maximising the margin under ``sum u <= k`` reached in 2 s (not kept: 10 s a
solve, refuted twice in a 100 s run). Certified: ``hi`` drops to its size and it is
offered; refuted, or no support of k learners keeps a margin of ``l0.grow_rho`` on the
samples: ``lo = k + 1``. k is the midpoint, so a run of refutations costs a logarithmic
number of tries.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.phases.shrink import best_is_pool_weighting, removal_margins
from pace_cert.driver.result import PhaseResult
from pace_cert.driver.state import RunState
from pace_cert.master.max_margin import margin_on_support
from pace_cert.master.rows import MasterSolution
from pace_cert.model.ensemble import Tree
from pace_cert.plumbing.budget import Budget


def robust_support(
    A: np.ndarray, n: int, k: int, budget: Budget, seed: int = 0
) -> tuple[list[int], float]:
    """A support of at most ``k`` of the ``n`` learners and its normalised max-margin
    ``rho`` on the margin rows ``A``: the max-margin LP's support over all learners,
    then one learner at a time the one whose removal keeps the largest margin
    (:func:`removal_margins`). Returns early (larger than k) when the budget ends."""
    mm, _ = margin_on_support(A, n, np.arange(n), budget=budget, seed=seed)
    S = [int(t) for t in np.flatnonzero(mm.weights > 0)]
    if len(S) < k:
        S = list(range(n))
    rho = float(mm.rho)
    while len(S) > k and not budget.expired():
        scores = removal_margins(A, n, S, set(), budget, seed)
        if not scores:
            break
        rho, t = scores[0]
        S.remove(t)
    return S, rho


def try_size(state: RunState, learners: list[Tree], k: int, budget: Budget) -> PhaseResult:
    """The faithful loop on a robust support of ``k`` learners, re-chosen on the
    samples every round, for at most ``l0.descent_rounds`` rounds; ``gave_up`` when the
    support found keeps no normalised margin of ``l0.grow_rho``."""
    tun, n, seed = state.cfg.tuning.l0, len(learners), state.cfg.seed

    def solve(A: np.ndarray) -> MasterSolution | None:
        S, rho = robust_support(A, n, k, budget, seed)
        if len(S) > k or rho < tun.grow_rho:
            return None
        mm, sol = margin_on_support(A, n, np.array(S), budget=budget, seed=seed)
        return sol if mm.rho >= tun.grow_rho else None

    return faithful_loop(
        state, f"l0-descent-{k}", solve, learners, budget, max_rounds=tun.descent_rounds
    )


def descend(
    state: RunState, learners: list[Tree], lo: int, budget: Budget
) -> Iterator[PhaseResult]:
    """Bisection between ``lo`` and the best certified model's support size; yields
    every certified model smaller than the last yielded."""
    assert state.best is not None
    best = state.best[0]
    hi = len(best.keep)
    size = best.model.n_trees if best.model is not None else hi
    lo = max(1, min(lo, hi))
    while lo < hi and not budget.expired():
        k = (lo + hi) // 2
        state.say(f"[l0-descent] trying {k} learners (between {lo} and {hi})")
        res = try_size(state, learners, k, budget)
        if res.certified and res.model is not None:
            hi = len(res.keep)
            if res.model.n_trees < size:
                size = res.model.n_trees
                state.say(f"[l0-descent] certified {size} trees")
                yield res
        else:
            lo = k + 1


class Descent:
    """Fallback (``l0.descent_rounds > 0``): from the smallest certified model, when it
    is a weighting of the pool (:func:`best_is_pool_weighting`)."""

    suffix = "-descent"

    def applies(self, state: RunState, guide: np.ndarray | None) -> bool:
        return state.cfg.tuning.l0.descent_rounds > 0 and best_is_pool_weighting(state)

    def run(
        self, state: RunState, learners: list[Tree], guide: np.ndarray | None, budget: Budget
    ) -> Iterator[PhaseResult]:
        lo = int(guide.sum()) if guide is not None and guide.any() else 1
        return descend(state, learners, lo, budget)
