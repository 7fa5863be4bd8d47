"""Step (mode tree): a leaf lower bound for every faithful decision tree, from leaf
witnesses (:mod:`pace_cert.region.leaf_witness`) among the known region points.

Runs after the tree step, on the points it left: the run's samples (its separating
samples included: they sit in the region's pockets) and the screening pool's points
inside the region. The set is checked here with the same function verify uses before it
is stated; verify re-checks it from the certificate's numbers. It says how many leaves
any faithful tree needs, whether or not a tree was certified: where that exceeds what
pruning reaches, one tree cannot be the smaller model.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from pace_cert.driver.phases.single_tree import known_points
from pace_cert.driver.result import Offer
from pace_cert.driver.state import RunState
from pace_cert.driver.step import BaseStep
from pace_cert.learners.leaf_witnesses import LeafWitnessSet, find_leaf_witnesses
from pace_cert.plumbing.budget import Budget
from pace_cert.region.leaf_witness import check_leaf_witnesses
from pace_cert.region.masks import region_mask


def leaf_witness_set(state: RunState, budget: Budget) -> LeafWitnessSet | None:
    """A checked leaf witness set among the known region points (None when the check
    fails: nothing is stated then)."""

    def in_region(Z: np.ndarray) -> np.ndarray:
        return state.domain.contains(Z) & region_mask(
            state.original, state.region.margin, state.plausibility, Z
        )

    X, y = known_points(state)
    inside = in_region(X)
    X, first = np.unique(X[inside], axis=0, return_index=True)
    y = y[inside][first]

    def label_of(Z: np.ndarray) -> np.ndarray:
        return np.where(in_region(Z), state.original.predict_index(Z), -1)

    tries = state.cfg.tuning.tree.bound_tries
    found = find_leaf_witnesses(
        X, y, label_of, budget.expired, max_tries=tries, seed=state.cfg.seed
    )

    problems = check_leaf_witnesses(
        found.points, list(found.labels), found.separators, found.pairs,
        state.original.predict_index, in_region,
    )  # fmt: skip
    if problems:
        state.say(f"[leaf-bound] not stated: {problems[0]}")
        return None
    return found


class LeafBound(BaseStep):
    """Mode tree, after the tree step: at most ``tree.bound_share`` of the time limit."""

    name = "leaf-bound"
    bookkeeping = True  # never the reason a run ends

    def applies(self, state: RunState) -> bool:
        return state.tree is not None and state.cfg.tuning.tree.bound_share > 0

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        limit = state.cfg.time_limit
        share = state.cfg.tuning.tree.bound_share
        found = leaf_witness_set(state, budget.cap(None if limit is None else share * limit))
        if found is None or state.tree is None:
            return
        state.tree.leaf_witnesses = found
        state.say(
            f"[leaf-bound] {found.bound} region points no faithful tree can put two of in "
            f"one leaf: every faithful decision tree has at least {found.bound} leaves"
        )
        yield from ()
