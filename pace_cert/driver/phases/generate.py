"""Step: column generation on the L1 duals (paper Figure 1, phase 1).

Price -> add the improving learners -> L1 loop with separation, until no learner
improves (a proof when pricing is exact: depth <= 2), progress stalls, or a limit is
hit. Pricing is ``pace_cert/learners/pricing.py``.

On small domains the separation of intermediate L1 models is the enumeration screen
only (exact, no CP-SAT); whatever the mode returns is certified afterwards (generate: a
final certified L1 loop; pace: the enriched L0 loop). On domains too large to
enumerate, the screening pool is not exact: there ``generate`` certifies every L1
model with CP-SAT, as in the paper's Figure 1, so its samples stay honest and the last
certified model is the anytime result; ``pace`` only screens (its intermediate models
serve to enrich the pool).
"""

from __future__ import annotations

from collections.abc import Iterator

from pace_cert.driver.phases.l1 import l1_loop
from pace_cert.driver.result import Offer, PhaseResult
from pace_cert.driver.state import L1State, RunState
from pace_cert.driver.step import BaseStep
from pace_cert.learners.pricing import TOL, price_all
from pace_cert.master.rows import MasterSolution
from pace_cert.plumbing.budget import Budget


def generate(
    state: RunState, l1: PhaseResult, l1_sol: MasterSolution, budget: Budget
) -> tuple[PhaseResult, MasterSolution]:
    """Column generation from the L1 result ``l1`` and its solution (duals). Returns
    the last L1 result and solution; sets ``state.stats.pricing`` and ``.stop``."""
    cfg = state.cfg
    gen = cfg.tuning.generation
    depth = state.learner_depth()
    k = state.original.n_classes
    kind = "exact" if depth <= 2 else "heuristic"
    stop = "learner limit"
    prev_obj, stalled = l1_sol.objective, 0
    certified_last = l1.certified
    certify = cfg.mode == "generate" and not state.screen.can_enumerate()
    for it in range(1, gen.max_learners + 1):
        if len(l1_sol.duals) != len(state.X) * (k - 1):
            raise AssertionError("dual vector does not match the sample set")
        if budget.expired():
            stop = "time limit"
            break
        cands, kind = price_all(
            state.X,
            state.y0,
            l1_sol.duals,
            state.domain,
            depth,
            k,
            cfg.seed + it,
            gen.pricing_candidates,
        )
        improving = [c for c in cands if c.reduced_cost < -TOL][: gen.columns_per_round]
        improving += [  # the imitation tree joins whenever it improves at all
            c
            for c in cands
            if c.source == "mimic" and c.reduced_cost < -TOL and all(c is not i for i in improving)
        ]
        state.reduced_costs.append(cands[0].reduced_cost if cands else 0.0)
        if not improving:
            stop = "no improving learner" + (" (proved: exact pricing)" if kind == "exact" else "")
            break
        for c in improving:
            state.learners.append(c.tree)
            state.origin.append("new")
        state.say(
            f"[generate] round {it}: +{len(improving)} learners "
            f"(best reduced cost {improving[0].reduced_cost:.6g}, {improving[0].source}), "
            f"{len(state.learners)} in the pool"
        )
        new_l1, new_sol = l1_loop(state, state.learners, budget, certify=certify)
        if new_sol is None or new_l1.objective is None or not (new_l1.certified or new_l1.screened):
            stop = (
                "time limit"
                if budget.expired()
                else "separation round cap"
                if new_l1.rounds >= cfg.tuning.master.max_rounds
                else "separation inconclusive (UNKNOWN pairs)"
            )
            del state.learners[-len(improving) :]
            del state.origin[-len(improving) :]
            break
        # progress: the new columns' gain on the samples they were priced on (the loop's
        # first solve); samples the loop adds afterwards may raise the value again
        first = new_l1.first_objective
        gained = first is not None and first < prev_obj - 1e-9 * max(1.0, abs(prev_obj))
        l1, l1_sol, certified_last = new_l1, new_sol, new_l1.certified
        prev_obj = new_sol.objective
        stalled = 0 if gained else stalled + 1
        if stalled >= gen.stall_rounds:
            stop = f"stalled ({gen.stall_rounds} rounds without L1 progress)"
            break
    if not certified_last and cfg.mode == "generate":
        l1, l1_sol = l1_loop(state, state.learners, budget)  # generate's result is certified
    state.stats.pricing, state.stats.stop = kind, stop
    return l1, l1_sol


class Generate(BaseStep):
    """After a certified first L1 loop, from the last L1 duals (screened or certified).
    In generate mode its certified L1 model is the answer (offered as
    ``l1-generated``, whatever its size)."""

    name = "generate"

    def applies(self, state: RunState) -> bool:
        l1 = state.l1
        return (
            l1 is not None
            and l1.first_certified
            and (l1.result.certified or l1.result.screened)
            and l1.solution is not None
        )

    def share(self, state: RunState) -> float:
        pace = state.cfg.mode == "pace"
        return state.cfg.tuning.pace.generate_share if pace else 1.0

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        assert state.l1 is not None and state.l1.solution is not None
        res, sol = generate(state, state.l1.result, state.l1.solution, budget)
        state.l1 = L1State(res, sol, first_certified=True)
        if state.cfg.mode == "generate" and res.certified:
            yield Offer(res, "l1-generated", replace=True)
