"""The plan runner: the PACE driver's whole control flow.

``compress`` builds the run state, runs the mode's plan step by step -- each within
its share of the one budget, each result offered to the incumbent as it comes -- and
stops once the incumbent is proved minimal. The result is the smallest certified model,
or the original when nothing was certified.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from pace_cert.driver.phases.pruning_bound import prove_bound
from pace_cert.driver.phases.witness_bound import update_witness_bound
from pace_cert.driver.plans import PLANS, Plan
from pace_cert.driver.result import STEP_PRUNING_BOUND, CompressResult, StartModel, StopReason
from pace_cert.driver.state import Progress, RunState
from pace_cert.model.ensemble import Ensemble
from pace_cert.plumbing.budget import Budget
from pace_cert.region.margins import required_margin
from pace_cert.settings import CompressConfig


def run_plan(state: RunState, plan: Plan) -> StopReason:
    """Run ``plan``'s steps in order on ``state``; returns why the run ended: proved
    minimal (the step that made it so), the time limit (the step it ran out in), else
    the reason the last step that ran recorded (:meth:`RunState.record_stop`)."""
    expired_in: str | None = None
    for step in plan.steps:
        if not step.applies(state):
            continue
        _starting(state, step.name)
        if not getattr(step, "bookkeeping", False):  # the step's own record overrides
            state.record_stop(step.name, "it ran to its end, and no later step applies")
        budget = state.budget.share(step.share(state))
        for offer in step.run(state, budget):
            state.offer(offer)
            if _stop(state, plan):
                return _minimal(state, step.name)
        if _stop(state, plan):
            return _minimal(state, step.name)
        if expired_in is None and state.budget.expired():
            expired_in = step.name
    if expired_in is not None:
        limit = state.cfg.time_limit
        return StopReason(
            expired_in,
            "the time limit" + ("" if limit is None else f" ({round(limit, 1):g} s)") + " ran out",
            time_limit=True,
        )
    if state.stop_reason is not None:
        return state.stop_reason
    return StopReason(plan.mode, "no step of the plan applies")


def _starting(state: RunState, step: str) -> None:
    """Tell ``state.on_step`` that ``step`` starts; the test hook
    ``hooks.hang_step`` makes that step hang (sleep) instead, so the process guard's
    deadline ends the run there."""
    if state.on_step is not None:
        state.on_step(step)
    if state.cfg.tuning.hooks.hang_step == step:
        time.sleep(state.cfg.tuning.hooks.hang_seconds)


def _minimal(state: RunState, step: str) -> StopReason:
    return StopReason(
        step,
        f"the {state.best_size()}-tree model is proved minimal: no faithful model of fewer "
        "trees exists in this region",
    )


def _stop(state: RunState, plan: Plan) -> bool:
    """Whether the plan ends here: its incumbent is proved minimal."""
    if not (plan.stop_when_minimal and state.minimal()):
        return False
    if plan.minimal_stop is not None and state.stats.pricing == "none":
        state.stats.stop = plan.minimal_stop
    state.say_minimal()
    return True


def compress(
    original: Ensemble,
    X: np.ndarray,
    cfg: CompressConfig,
    progress: Progress | None = None,
    budget: Budget | None = None,
    on_improve: Callable[[CompressResult], None] | None = None,
    on_bound: Callable[[int], None] | None = None,
    plausibility: object | None = None,
    start: StartModel | None = None,
    on_step: Callable[[str], None] | None = None,
) -> CompressResult:
    """Run PACE in ``cfg.mode`` on ``original`` with training rows ``X`` (float32).

    ``budget``: the time the run may spend (default: ``cfg.time_limit`` from now).
    ``on_improve``: called with the run's result so far once the region is built (the
    original, uncertified) and whenever a smaller certified model is found, so a
    caller can keep the best one on disk. ``on_bound``: called with each higher proved
    size lower bound. ``plausibility``: a forest fitted already, its threshold set for
    ``cfg.delta`` (None: fitted here). ``start``: a model certified on a region around
    this one, the plan's first candidate (``phases/start_from.py``). ``on_step``: called
    with each step's name as it starts (the pruning bound's too). Raises
    :class:`~pace_cert.errors.EmptyRegion` when no training row lies in the region."""
    if budget is None:
        budget = Budget.seconds(cfg.time_limit)
    plan = PLANS[cfg.mode]
    share = cfg.tuning.bound.pruning_share if plan.pruning_bound else 0.0
    # the plan leaves the pruning bound its share of the limit
    state = RunState.create(
        original, X, cfg, budget.share(1.0 - share), progress or (lambda _m: None), plausibility
    )
    state.start = start
    state.on_bound = on_bound
    state.on_step = on_step
    if on_improve is not None:
        state.on_improve = lambda: on_improve(snapshot(state))
        on_improve(snapshot(state))
    state.say(
        f"original: {original.n_trees} trees, {original.n_classes} classes; "
        f"{len(state.X)} distinct samples in the region ({state.samples_dropped} rows dropped)"
    )
    stop = run_plan(state, plan)
    if share > 0:
        _starting(state, STEP_PRUNING_BOUND)
        state.pruning_bound = prove_bound(state, budget)
    return result(state, stop)


def result(state: RunState, stop: StopReason | None = None) -> CompressResult:
    """The run's result: the smallest certified model, or the original; the boundary
    witnesses among the last samples are counted first. ``stop``: why the run ended."""
    update_witness_bound(state)
    return replace(snapshot(state), stop=stop)


def snapshot(state: RunState) -> CompressResult:
    """The result as it stands: the smallest certified model so far, or the original."""
    best, original = state.best, state.original
    in_family = best is not None and best[0].model.max_depth <= state.original.max_depth
    if best is not None and in_family and (state.size_bound or 0) > best[0].model.n_trees:
        # two proofs contradict each other: one of them is wrong; write neither
        raise RuntimeError(
            f"internal error: a certified model of {best[0].model.n_trees} trees and a "
            f"proved lower bound of {state.size_bound} trees; please report this"
        )
    k = original.n_classes
    certified = best is not None
    model = best[0].model if certified else original
    if certified:
        weights, merged, originals = state.tree_sources(best[0])
    else:  # the original is written: each tree is itself
        weights = [float(w) for w in original.weights]
        merged, originals = [1] * model.n_trees, [[t] for t in range(model.n_trees)]
    st = state.stats
    return CompressResult(
        original=original,
        compressed=model,
        certified=certified,
        status="certified" if certified else "inconclusive",
        proof=best[0].proof if certified else [],
        history=state.history,
        domain=state.domain,
        region=state.region,
        l1_values=state.l1_values,
        reduced_costs=state.reduced_costs,
        pricing=st.pricing,
        generation_stop=st.stop,
        samples_kept=state.samples_kept,
        samples_dropped=state.samples_dropped,
        e_req=required_margin(model) if certified else 0.0,
        big_m=st.big_m,
        l0_optimal=(None if st.l0_optimal is None else certified and st.l0_proved == model.n_trees),
        seconds=time.perf_counter() - state.t0,
        plausibility=state.plausibility,
        weights=weights,
        merged=merged,
        original_trees=originals,
        phase=best[1] if certified else "",
        gurobi_used=st.used_gurobi,
        schedule=state.oracle.schedule_for(state.cfg.threads, k * (k - 1)),
        race_linearization=state.oracle.race_linearization(),
        size_bound=state.size_bound,
        witnesses=list(state.witnesses.values()),
        witness_bound=state.witness_bound,
        pruning_bound=state.pruning_bound,
        objective=state.cfg.objective,
        tree=state.tree,
    )
