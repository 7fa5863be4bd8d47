"""Steps: the L0 loop (problem P with separation), with anytime fallbacks.

:class:`L0Loop` ``"l0"`` prunes the original trees from the certified L1 solution;
``"l0-enriched"`` (PACE) runs on the pool enriched by boosting and generation, warm
from the smallest certified model.

Under a time limit, and when a certified model with more than one learner exists, the
L0 loop first gets ``l0.share`` of the time left. On large domains it may not converge
(every optimal support of the samples is falsified in turn); unless it has certified a
support proved optimal on the samples by then, the fallbacks run in order (reweighted
L1, column growth from the last L0 candidate's support, then, when
``l0.shrink_rounds`` > 0, shrinking the smallest certified model a learner at a time),
each offering certified, smaller models. A support the loop certified without proving
it optimal no longer skips them: it can be far larger than what they reach (a seeds
50 run with ``master.l0_stall`` = 1: 30 trees from the cover). The L0 loop then
continues on the same master (its cuts, last support and samples kept) with the time
still left; after a certified support its MILP had not proved optimal (a per-solve
limit stopped it), that is the improve re-solve, which runs until it proves optimality
or nothing improves.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from pace_cert.driver.l0_master import L0Master
from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.phases.descent import Descent
from pace_cert.driver.phases.grow import ColumnGrowth
from pace_cert.driver.phases.reweight import ReweightedL1
from pace_cert.driver.phases.shrink import Shrink
from pace_cert.driver.result import Offer, PhaseResult
from pace_cert.driver.state import RunState
from pace_cert.driver.step import BaseStep
from pace_cert.master.highs import OutOfTime
from pace_cert.model.ensemble import Tree
from pace_cert.plumbing.budget import Budget

#: the fallbacks of an L0 loop that did not certify in its share, in order; each has
#: ``suffix``, ``applies(state, guide)`` and ``run(state, learners, guide, budget)``,
#: which yields the results to offer
FALLBACKS = (ReweightedL1(), ColumnGrowth(), Descent(), Shrink())


def _offer_l0(state: RunState, res: PhaseResult, name: str) -> Offer:
    """An L0 loop's result to offer; remember its size when its support was proved
    optimal on the samples (no faithful weighting of the pool has fewer learners)."""
    if res.certified and res.optimal and res.model is not None:
        state.stats.l0_proved = res.model.n_trees
        state.record_stop(
            name,
            f"its {res.model.n_trees}-learner support is proved optimal on the samples: "
            "no weighting of fewer of these learners meets them",
        )
    return Offer(res, name)


def _loop(
    state: RunState, master: L0Master, learners: list[Tree], solve_budget: Budget,
    budget: Budget,
) -> PhaseResult:  # fmt: skip
    """The faithful loop on ``master`` (each solve within ``solve_budget``), its refuted
    candidates' one-swap family screened too (``search.family_size``)."""
    return faithful_loop(
        state, "l0", lambda A: master.solve(A, solve_budget), learners, budget,
        family=lambda A, s: master.family(A, s, budget),
    )  # fmt: skip


def _improve(
    state: RunState, res: PhaseResult, master: L0Master, learners: list[Tree], name: str,
    budget: Budget,
) -> Iterator[Offer]:  # fmt: skip
    """Re-solve a certified but not optimal support with the time left, the certified
    support as the incumbent: a smaller support goes through the faithful loop again,
    the same one proved optimal sets ``l0_optimal``. Under a time limit it goes on until
    the support is proved optimal or the time is spent (a re-solve stopped by its
    per-solve limit is not the end: the master keeps its cuts and samples); without a
    limit it stops when a re-solve brings neither a smaller nor a proved support."""
    while res.certified and not res.optimal and res.model is not None:
        left = budget.left()
        if left is not None and left <= 1.0:
            return
        size = res.model.n_trees
        master.again = True
        state.say(
            f"[l0] {size} learners certified but not proved minimal; re-solving the L0 "
            "master" + ("" if left is None else f" with up to {left:.0f} s")
        )
        nxt = _loop(state, master, learners, budget, budget)
        yield _offer_l0(state, nxt, name)
        if not nxt.certified or nxt.model is None:
            return
        if nxt.model.n_trees >= size and not nxt.optimal:
            # a per-solve limit stopped the master before it found a smaller support
            # or proved this one minimal; under a time limit its cuts and samples stay
            # and the next re-solve gets the whole time left (an unlimited run stops)
            if not budget.limited:
                return
            continue
        state.say(
            f"[l0] re-solved: {nxt.model.n_trees} learners"
            + (" (optimal on the samples)" if nxt.optimal else "")
        )
        res = nxt


#: a solve of the first L0 loop gets at least this much of the run's time, even when
#: the loop's share is spent (``l0.share`` 0: one solve), so the fallbacks have its
#: candidate to start from
FIRST_SOLVE_SECONDS = 1.0


def _solve_budget(first: Budget, run: Budget) -> Budget:
    """The first L0 loop's master budget: its share ``first``, or
    ``FIRST_SOLVE_SECONDS`` of the ``run``'s budget (never past it) if that ends later."""
    floor = run.cap(FIRST_SOLVE_SECONDS)
    if first.deadline is None or floor.deadline is None or first.deadline >= floor.deadline:
        return first
    return floor


def l0_loops(
    state: RunState,
    learners: list[Tree],
    l1_value: float,
    warm: np.ndarray | None,
    name: str,
    budget: Budget,
) -> Iterator[Offer]:
    """The L0 loop on ``learners`` with its fallbacks and the improve re-solve;
    certified models offered as ``name`` and ``name + fallback suffix``."""
    master = L0Master(state, learners, l1_value, warm)
    size = state.best_size()
    if budget.limited and size is not None and size > 1:
        first = budget.share(state.cfg.tuning.l0.share)
        l0 = _loop(state, master, learners, _solve_budget(first, budget), first)
        if l0.certified:
            yield _offer_l0(state, l0, name)
            if l0.optimal:
                return
        guide = master.last.weights > 0 if master.last is not None else None
        for fallback in FALLBACKS:
            if not budget.expired() and fallback.applies(state, guide):
                for res in fallback.run(state, learners, guide, budget):
                    yield Offer(res, name + fallback.suffix)
        if l0.certified:  # the master's cuts and samples kept: improve on its support
            yield from _improve(state, l0, master, learners, name, budget)
            return
    l0 = _loop(state, master, learners, budget, budget)
    yield _offer_l0(state, l0, name)
    yield from _improve(state, l0, master, learners, name, budget)


class L0Loop(BaseStep):
    """``"l0"``: prune the original trees from the certified L1 solution (prune, pace;
    PACE gives it ``pace.prune_share`` of the time). ``"l0-enriched"`` (PACE): the L0
    loop on the enriched pool, warm from the smallest certified model."""

    def __init__(self, name: str = "l0", enriched: bool = False) -> None:
        self.name = name
        self.enriched = enriched

    def applies(self, state: RunState) -> bool:
        """After a certified L1 loop; on the original trees also after one that did not
        certify (large domains, where elimination then runs first): its last solution
        is the warm start and the big-M reference as after a certified one, and the
        samples it left are the L0 master's rows."""
        l1 = state.l1
        if l1 is None or l1.solution is None:
            return False
        return l1.first_certified or not self.enriched

    def share(self, state: RunState) -> float:
        pace = state.cfg.mode == "pace"
        if not pace or self.enriched:
            return 1.0
        return state.cfg.tuning.pace.prune_share * state.prune_scale()

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        assert state.l1 is not None and state.l1.solution is not None
        sol = state.l1.solution
        if not self.enriched:
            warm = np.r_[sol.weights, sol.offsets[1:]]
            yield from l0_loops(state, state.learners, sol.objective, warm, self.name, budget)
            return
        warm = state.warm_from_best()
        if warm is None:
            warm = np.r_[sol.weights, sol.offsets[1:]]
        A = state.matrix(state.learners)
        try:
            l1_value = state.l1_master.solve(A, len(state.learners), budget).objective
        except OutOfTime:
            state.record_stop(self.name, "its share of the time ran out")
            return
        finally:
            state.l1_master.release()  # a large LP: not kept beside the L0 loops' own
        yield from l0_loops(state, state.learners, l1_value, warm, self.name, budget)
