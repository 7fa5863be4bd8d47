"""Step (PACE): one to three tree partitions with re-fitted leaf values.

Supports of at most ``pace.refit_size`` (at most 3) tree partitions with free leaf
values (``pace_cert/learners/refit.py``), smallest size first. Size 1 and 2: sets of
pool partitions; size 2 also each partition with partners; size 3 pairs of the best
model's partitions, then one of them with any pool partition, each pair with partners.
Partitions of the best certified model come first, partners are built from the pool's
splits. A set is tried when its joint partition is label-pure on the samples: the
faithful loop on its indicator columns (max-margin LP over leaf values), until
certified or the LP cannot meet the samples; a refuted set leaves its separating
samples behind, which rule out others.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

import numpy as np

from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.result import Offer, PhaseResult
from pace_cert.driver.state import RunState
from pace_cert.driver.step import BaseStep
from pace_cert.learners import refit
from pace_cert.learners.pool import fold
from pace_cert.master.max_margin import max_margin_on_support
from pace_cert.master.rows import MasterSolution
from pace_cert.model.ensemble import Ensemble, Tree
from pace_cert.plumbing.budget import Budget


def refit_loop(
    state: RunState, chosen: list[Tree], k: int, budget: Budget, max_rounds: int | None = None
) -> PhaseResult | None:
    """The faithful loop over the free leaf values of the partitions ``chosen`` (at most
    ``max_rounds`` rounds; None: the master tuning's); None when the max-margin LP cannot
    meet the samples (at once or after some). A certified result's trees are marked new,
    their leaf values folded (weight 1 each); ``keep`` is empty (not a weighting of the
    pool)."""
    ind = [x for t in chosen for x in refit.indicators(t, k)]
    n = len(ind)

    def solve(A: np.ndarray) -> MasterSolution | None:
        sol = max_margin_on_support(A, n, np.arange(n), budget=budget, seed=state.cfg.seed)
        if sol is None:
            return None
        return dataclasses.replace(sol, objective=float(len(chosen)))

    def make(sol: MasterSolution) -> tuple[Ensemble, list[int]]:
        built, kept = refit.assemble(chosen, sol.weights, k)
        model, _ = fold(
            built,
            np.ones(len(built)),
            sol.offsets,
            state.original.classes,
            ["new"] * len(built),
            state.original.n_features,
            0.0,
        )
        return model, kept

    res = faithful_loop(state, "refit", solve, ind, budget, make=make, max_rounds=max_rounds)
    if res.gave_up:
        return None
    if not res.certified or res.model is None:
        return res
    n_out = res.model.n_trees
    return dataclasses.replace(res, weights=[1.0] * n_out, keep=[], offsets=None)


def refit_partitions(state: RunState, max_size: int, budget: Budget) -> PhaseResult:
    """The first certified support of at most ``max_size`` partitions (uncertified if
    none in time)."""
    t0 = time.perf_counter()
    k = state.original.n_classes
    best = list(state.best[0].model.trees) if state.best is not None else []
    trees: list[Tree] = []  # one per distinct partition: the best model's, then the pool's
    seen: set[bytes] = set()
    for t in [*best, *state.learners]:
        if refit.partition_key(t) not in seen:
            seen.add(refit.partition_key(t))
            trees.append(t)
    n_best = len({refit.partition_key(t) for t in best})
    splits = refit.pool_splits(trees, state.domain.thresholds)
    depth = state.learner_depth()
    tried: set[bytes] = set()

    def pending(chosen: list[Tree]) -> bool:
        key = b"|".join(refit.partition_key(t) for t in chosen)
        if key in tried:
            return False
        tried.add(key)
        return True

    def first_certified(sets) -> PhaseResult | None:
        """Try sets from the generator ``sets()`` (re-run after every refuted set,
        as the samples grow) until one certifies or none is left."""
        while not budget.expired():
            chosen = next((c for c in sets() if pending(c)), None)
            if chosen is None:
                return None
            res = refit_loop(state, chosen, k, budget)
            if res is not None and res.certified:
                return res
        return None

    def pool_sets(size: int):
        ids = refit.leaf_ids(trees, state.X)
        for c in refit.pure_sets(ids, state.y0, k, size):
            yield [trees[j] for j in c]

    def with_partners(base: list[Tree]):
        ids = refit.leaf_ids(base, state.X)
        joint = np.unique(ids.T, axis=0, return_inverse=True)[1].ravel()
        cells = state.domain.cell_index(state.X)
        th = state.domain.thresholds
        for c in refit.partners(joint, state.y0, cells, splits, th, k, depth, stop=budget.expired):
            yield [*base, c]

    def bases(size: int):
        if size == 2:
            yield from ([a] for a in trees)
        else:
            yield from ([trees[i], trees[j]] for i in range(n_best) for j in range(i + 1, n_best))
            yield from (
                [trees[i], trees[j]] for i in range(n_best) for j in range(n_best, len(trees))
            )

    res = None
    top = min(max_size, 3)
    for size in range(1, top + 1):
        if size <= 2:
            res = first_certified(lambda size=size: pool_sets(size))
        if res is None and size >= 2:
            reported = time.perf_counter()
            for i, base in enumerate(bases(size)):
                res = first_certified(lambda base=base: with_partners(base))
                if res is not None or budget.expired():
                    break
                if time.perf_counter() - reported >= state.cfg.tuning.master.progress_seconds:
                    reported = time.perf_counter()
                    state.say(
                        f"[refit] {size} partitions: partners searched for {i + 1} "
                        f"bases, {len(tried)} sets tried, {reported - t0:.0f} s"
                    )
        if res is not None:
            state.say(f"[refit] certified {res.model.n_trees} learners with re-fitted leaves")
            return res
        if budget.expired():
            break
    state.say(
        f"[refit] no certified support of at most {top} partition{'s' if top > 1 else ''} "
        f"({len(tried)} sets tried, {time.perf_counter() - t0:.1f} s)"
    )
    return PhaseResult.nothing()


class Refit(BaseStep):
    """PACE: when the best certified model has more than one tree and is not proved
    minimal."""

    name = "refit"

    def applies(self, state: RunState) -> bool:
        size = state.best_size()
        return (
            state.cfg.tuning.pace.refit_size > 0
            and size is not None
            and size > 1
            and not state.minimal()
        )

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        size = state.best_size()
        assert size is not None
        max_size = min(state.cfg.tuning.pace.refit_size, size - 1)
        yield Offer(refit_partitions(state, max_size, budget), "refit")
