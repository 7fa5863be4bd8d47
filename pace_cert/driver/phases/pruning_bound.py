"""Step after the plan: a pruning lower bound on the samples the run collected.

Every model that keeps a subset of the original trees (weights >= 0, any class offsets)
and is faithful in the region meets every region point the run has seen: the training
rows in the region and the separating samples (the points that refuted candidates,
which are what make the bound tight). :func:`pace_cert.master.pruning_bound.prove_pruning_bound`
turns them into cuts with Farkas multipliers and a CP-SAT hitting-set bound; the
certificate carries the points and cuts (``summary.pruning_bound``) and verify
re-checks all of it. It runs on the time the runner keeps back for it
(``bound.pruning_share`` of the limit, at most ``bound.pruning_seconds``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pace_cert.cert.pruning_check import leaf_table
from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.result import Offer
from pace_cert.driver.state import RunState
from pace_cert.master.max_margin import max_margin_on_support
from pace_cert.master.pruning_bound import Aim, Aimed, BoundResult, prove_pruning_bound
from pace_cert.master.rows import MasterSolution
from pace_cert.plumbing.budget import Budget
from pace_cert.region.masks import region_mask

#: the name of the aimed faithful loop (its samples' history phase is ``l0``)
AIM_PHASE = "l0-bound"


@dataclass(frozen=True)
class PruningBoundResult:
    """The bound with what proves it: the float32 points (original label index ``y0``
    at each) and the cuts, whose rows index ``points``."""

    value: int
    points: np.ndarray  # float32 [n, features]
    y0: np.ndarray  # int64 [n]
    result: BoundResult


def region_points(state: RunState, limit: int) -> np.ndarray:
    """The run's samples that lie in the region by the masks verify uses (a CP-SAT
    sample may sit in the rounding slack just outside), newest first, at most
    ``limit``: separating samples before training rows."""
    return inside(state, np.asarray(state.X, np.float32)[::-1])[:limit]


def inside(state: RunState, X: np.ndarray) -> np.ndarray:
    """The float32 rows of ``X`` inside the region by the masks verify uses."""
    return X[region_mask(state.original, state.region.margin, state.plausibility, X, state.domain)]


def stop_size(state: RunState) -> int | None:
    """The size of the best certified model when it is a pruning (every tree one
    original tree): no larger pruning bound can be proved."""
    if state.best is None:
        return state.original.n_trees
    _w, merged, originals = state.tree_sources(state.best[0])
    if all(m == 1 for m in merged) and all(len(o) == 1 for o in originals):
        return state.best[0].model.n_trees
    return state.original.n_trees


def prove_bound(state: RunState, budget: Budget) -> PruningBoundResult | None:
    """The pruning lower bound within ``budget`` (None when the region holds no point
    or the bound is 0)."""
    tuning = state.cfg.tuning.bound
    X = region_points(state, tuning.pruning_points)
    if not len(X) or budget.expired():
        return None
    y0 = state.original.predict_index(X)
    H = leaf_table(state.original.trees, X)
    found: list[np.ndarray] = []  # the aimed points, in the order the rows got them
    aim = _aimer(state, tuning.aim_rounds, found) if tuning.aim_rounds else None
    res = prove_pruning_bound(
        H, y0, budget.cap(tuning.pruning_seconds), stop_at=stop_size(state), seed=state.cfg.seed,
        threads=state.cfg.threads, progress=state.say, aim=aim,
    )  # fmt: skip
    if res.value <= 0:
        return None
    if found:
        X = np.concatenate([X, *found])
        y0 = np.r_[y0, state.original.predict_index(X[len(y0) :])]
    keep = np.array(res.points, np.int64)
    remap = {int(i): j for j, i in enumerate(keep)}
    cuts = [
        type(c)(c.keep_one_of, tuple(
            (tuple((remap[i], k) for i, k in rows), w) for rows, w in c.combos
        ))
        for c in res.cuts
    ]  # fmt: skip
    res.cuts = cuts
    exact = " (the minimum on them)" if res.meets == res.value else ""
    state.say(
        f"[pruning-bound] {len(X)} region points, {len(cuts)} cuts: every faithful "
        f"pruning keeps at least {res.value} of the {state.original.n_trees} trees{exact} "
        f"({res.seconds:.1f} s)"
    )
    return PruningBoundResult(res.value, X[keep], y0[keep], res)


def _aimer(state: RunState, rounds: int, found: list[np.ndarray]) -> Aim:
    """The bound's :data:`~pace_cert.master.pruning_bound.Aim`: the faithful loop on a
    support's original trees (max-margin weights on the run's samples, the screen, then
    CP-SAT) for at most ``rounds`` rounds. Its separating samples join the run's
    samples; those inside the region by verify's masks are returned (and appended to
    ``found``). A support it certifies is offered as the run's model (``l0-bound``)."""
    T = state.original.n_trees
    learners = state.learners[:T]

    def aim(support: np.ndarray, budget: Budget) -> Aimed:
        def solve(A: np.ndarray) -> MasterSolution | None:
            return max_margin_on_support(A, T, support, budget=budget, seed=state.cfg.seed)

        before = len(state.X)
        res = faithful_loop(state, AIM_PHASE, solve, learners, budget, max_rounds=rounds)
        if res.certified:
            state.offer(Offer(res, AIM_PHASE))
        new = inside(state, np.asarray(state.X[before:], np.float32))
        if len(new):
            found.append(new)
        H = leaf_table(state.original.trees, new)
        return Aimed(H, state.original.predict_index(new), res.certified)

    return aim
