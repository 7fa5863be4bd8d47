"""Steps: the L1 loop (problem R with separation) on the learner pool.

:class:`L1Loop` certifies the L1 model on the original trees (the first certified
model, and the duals generation starts from); :class:`L1Refresh` re-solves it on the
samples added since, screened only (PACE: fresh duals before generation).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.result import Offer, PhaseResult
from pace_cert.driver.state import L1State, RunState
from pace_cert.driver.step import BaseStep
from pace_cert.master.l1 import solve_l1
from pace_cert.master.rows import MasterSolution
from pace_cert.model.ensemble import Tree
from pace_cert.plumbing.budget import Budget

#: the first L1 loop gives up when its support has covered this share of the trees for
#: ``STALL_ROUNDS`` rounds in a row on a large domain: its model would not be smaller
FULL_SUPPORT = 0.95
STALL_ROUNDS = 5


def l1_loop(
    state: RunState,
    learners: list[Tree],
    budget: Budget,
    certify: bool = True,
    stall: bool = False,
) -> tuple[PhaseResult, MasterSolution | None]:
    """The faithful loop on the L1 master (warm-started across calls unless the master
    tuning says otherwise); its value is logged. Returns the result and the last
    master solution (None if the master never ran). ``stall``: give up once the support
    has used ``FULL_SUPPORT`` of the learners for ``STALL_ROUNDS`` rounds in a row."""
    last: list[MasterSolution] = []
    full = [0]

    def solve(A: np.ndarray) -> MasterSolution | None:
        if state.cfg.tuning.master.l1_warm_start:
            s = state.l1_master.solve(A, len(learners), budget)
        else:
            s = solve_l1(A, len(learners), budget=budget, seed=state.cfg.seed)
        last[:] = [s]
        full[0] = full[0] + 1 if np.sum(s.weights > 0) >= FULL_SUPPORT * len(learners) else 0
        if stall and full[0] >= STALL_ROUNDS:
            state.say(
                f"[l1] the support has used {FULL_SUPPORT:.0%} of the {len(learners)} "
                f"learners for {STALL_ROUNDS} rounds; giving up"
            )
            return None
        return s

    res = faithful_loop(state, "l1", solve, learners, budget, certify=certify)
    state.l1_master.release()  # a large LP: not kept beside the next phase's
    if stall and full[0] >= STALL_ROUNDS:
        state.record_stop(
            "l1",
            f"its support used {FULL_SUPPORT:.0%} of the {len(learners)} learners for "
            f"{STALL_ROUNDS} rounds in a row: its model would not be smaller",
        )
    if res.objective is not None:
        state.l1_values.append(res.objective)
    return res, (last[0] if last else None)


class L1Loop(BaseStep):
    """The certified L1 loop on the pool; offered as ``offer_as``."""

    name = "l1"

    def __init__(self, offer_as: str = "l1") -> None:
        self.offer_as = offer_as

    def share(self, state: RunState) -> float:
        """All the time on small domains; ``search.l1_share`` on large ones."""
        return 1.0 if state.screen.can_enumerate() else state.cfg.tuning.search.l1_share

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        large = not state.screen.can_enumerate()
        res, sol = l1_loop(state, state.learners, budget, stall=large)
        state.l1 = L1State(res, sol, first_certified=res.certified)
        if res.certified:
            yield Offer(res, self.offer_as)


class L1Refresh(BaseStep):
    """PACE, before generation: the L1 master again on the samples added since its
    certified loop, for fresh duals; intermediate, so screened only."""

    name = "l1-refresh"

    def applies(self, state: RunState) -> bool:
        return state.l1 is not None and state.l1.first_certified

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        assert state.l1 is not None
        res, sol = l1_loop(state, state.learners, budget, certify=False)
        state.l1 = L1State(res, sol, first_certified=True)
        return iter(())
