"""L0 fallback: shrink the smallest certified weighting one learner at a time.

The L0 master's sparsest supports sit at vertices of the samples' feasible cone: on a
domain too large to enumerate CP-SAT refutes them round after round (cancer, 25 trees
of depth 2, eta = delta = 0.1: ten refuted L0 candidates of 8-10 trees in 45 s), while
the fallbacks before this one certify from the robust side, well above them (column
growth: 18). Shrinking walks down from that certified side: every learner of the best
certified model is scored by the max-margin LP over the others on the samples
(normalised margin ``rho``); the removal that keeps the largest margin, at least
``l0.grow_rho``, goes through the faithful loop with the rest's max-margin weights for
at most ``l0.shrink_rounds`` rounds (a refuted rest is re-solved on its new samples).
A certified removal is offered and the walk goes on from it; a refuted one is not tried
again from that support. It ends when no removal keeps a margin on the samples or the
budget is spent. The idea: max-margin weights on a support that only loses one learner
at a time stay close to a certified weighting.

Off by default (``l0.shrink_rounds = 0``): side by side on the twelve Table 2 forests at
100 s it made no difference beyond the spread of 2-thread runs (348 trees against 349;
``benchmarks/results/studies/shrink.md``); on cancer 25 CP-SAT refuted every
one-learner removal from column growth's 18.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.result import Offer, PhaseResult
from pace_cert.driver.state import RunState
from pace_cert.driver.step import BaseStep
from pace_cert.master.highs import OutOfTime
from pace_cert.master.max_margin import margin_on_support
from pace_cert.master.rows import MasterSolution
from pace_cert.model.ensemble import Tree
from pace_cert.plumbing.budget import Budget


def removal_margins(
    A: np.ndarray, n: int, support: list[int], skip: set[frozenset[int]], budget: Budget,
    seed: int = 0,
) -> list[tuple[float, int]]:  # fmt: skip
    """(rho, t) for each learner t of ``support`` whose rest is not in ``skip``: the
    max-margin LP's normalised margin over the samples (margin rows ``A``, ``n``
    learner columns then the offsets) of the support without t; largest first. Stops
    scoring when the budget ends (the learners scored so far are returned)."""
    out = []
    for t in support:
        if budget.expired():
            break
        rest = [u for u in support if u != t]
        if frozenset(rest) in skip:
            continue
        try:
            mm, _ = margin_on_support(A, n, np.array(rest), budget=budget, seed=seed)
        except OutOfTime:
            break
        out.append((float(mm.rho), t))
    return sorted(out, key=lambda r: (-r[0], r[1]))


def shrink(
    state: RunState, learners: list[Tree], start: PhaseResult, budget: Budget
) -> Iterator[PhaseResult]:
    """Certified removals from ``start`` (a weighting of ``learners``), one learner at a
    time while the budget lasts; yields each whose model has fewer trees than the last
    yielded (learners sharing every split fold into one tree, so a removal can leave
    the tree count as it was)."""
    tun = state.cfg.tuning.l0
    n = len(learners)
    support = sorted(int(t) for t in start.keep)
    size = start.model.n_trees if start.model is not None else len(support)
    refuted: set[frozenset[int]] = set()
    while len(support) > 1 and not budget.expired():
        scores = removal_margins(
            state.matrix(learners), n, support, refuted, budget, state.cfg.seed
        )
        if not scores or scores[0][0] < tun.grow_rho:
            state.say(
                f"[l0-shrink] no removal from the {len(support)}-learner support keeps a "
                f"normalised margin of {tun.grow_rho:g} on the samples"
            )
            return
        rest = [u for u in support if u != scores[0][1]]
        refuted.add(frozenset(rest))

        def solve(A: np.ndarray, rest: list[int] = rest) -> MasterSolution | None:
            mm, sol = margin_on_support(A, n, np.array(rest), budget=budget, seed=state.cfg.seed)
            return sol if mm.rho >= tun.grow_rho else None

        res = faithful_loop(
            state, "l0-shrink", solve, learners, budget, max_rounds=tun.shrink_rounds
        )
        if res.certified and res.model is not None:
            support = rest
            if res.model.n_trees < size:
                size = res.model.n_trees
                state.say(f"[l0-shrink] certified {size} trees")
                yield res


def best_is_pool_weighting(state: RunState) -> bool:
    """The smallest certified model is a weighting of more than one pool learner (not
    refitted or synthesised trees, not a start model): what shrinking and the descent
    start from."""
    best = state.best[0] if state.best is not None else None
    return best is not None and best.sources is None and len(best.keep) > 1


class Shrink:
    """Fallback (``l0.shrink_rounds > 0``): from the smallest certified model, when it
    is a weighting of the pool (:func:`best_is_pool_weighting`)."""

    suffix = "-shrink"

    def applies(self, state: RunState, guide: np.ndarray | None) -> bool:
        return state.cfg.tuning.l0.shrink_rounds > 0 and best_is_pool_weighting(state)

    def run(
        self, state: RunState, learners: list[Tree], guide: np.ndarray | None, budget: Budget
    ) -> Iterator[PhaseResult]:
        assert state.best is not None
        return shrink(state, learners, state.best[0], budget)


class ShrinkStep(BaseStep):
    """Plan step after elimination (large domains, the L1 loop not certified): shrink
    the smallest certified model with max-margin weights, where elimination's own
    weights could remove no more. The L0 loop runs after it with the time left
    (decision 0019)."""

    name = "shrink"

    def applies(self, state: RunState) -> bool:
        l1_certified = state.l1 is not None and state.l1.first_certified
        return not l1_certified and Shrink().applies(state, None)

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        assert state.best is not None
        learners = state.learners[: state.original.n_trees]
        for res in shrink(state, learners, state.best[0], budget):
            yield Offer(res, "shrink")
