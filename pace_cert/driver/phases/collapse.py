"""Step (PACE, objective leaves): fewer leaves by collapsing splits, one at a time.

From the best certified model, a split whose two children are leaves is replaced by one
leaf (a tree left with one leaf is a constant and goes), and every leaf value of the
model is re-fitted (the max-margin LP over the trees' partitions, as in
``refit.py``): a new learner of the family, certified by the oracle like any candidate.
The splits whose children score most alike come first; an LP that cannot meet the
samples rules a collapse out without any oracle call, and one refuted by the oracle
leaves its separating samples behind. Each certified collapse is offered (one leaf
fewer) and the next starts from it, until none certifies or the time is spent.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from pace_cert.driver.phases.refit import refit_loop
from pace_cert.driver.result import Offer
from pace_cert.driver.state import RunState
from pace_cert.driver.step import BaseStep
from pace_cert.learners.refit import partition_key
from pace_cert.model.ensemble import LEAF, Tree
from pace_cert.plumbing.budget import Budget


def collapse(tree: Tree, node: int) -> Tree | None:
    """``tree`` with internal ``node`` (both children leaves) made a leaf (value 0: the
    leaves are re-fitted); None when the tree is then a single leaf (a constant)."""
    if node == 0:
        return None
    drop = {int(tree.left[node]), int(tree.right[node])}
    keep = np.array([i for i in range(len(tree.feature)) if i not in drop], np.int64)
    new = np.full(len(tree.feature), -1, np.int64)
    new[keep] = np.arange(len(keep))

    def remap(a: np.ndarray) -> np.ndarray:
        out = np.where(a == LEAF, LEAF, new[np.maximum(a, 0)])
        return out[keep]

    feature, left, right = tree.feature[keep].copy(), remap(tree.left), remap(tree.right)
    at = int(new[node])
    feature[at] = left[at] = right[at] = LEAF
    threshold = tree.threshold[keep].copy()
    threshold[at] = np.float32(0.0)
    return Tree(feature, threshold, left, right, np.zeros((len(keep), tree.value.shape[1])))


def candidates(trees: list[Tree]) -> list[tuple[float, int, int]]:
    """(how unlike the two leaves score, tree, node) for every split whose children are
    both leaves, most alike first (the largest class-score difference between them)."""
    out = []
    for t, tree in enumerate(trees):
        for node in np.flatnonzero(tree.left != LEAF):
            a, b = int(tree.left[node]), int(tree.right[node])
            if tree.left[a] == LEAF and tree.left[b] == LEAF:
                gap = float(np.abs(tree.value[a] - tree.value[b]).max())
                out.append((gap, t, int(node)))
    return sorted(out)


class Collapse(BaseStep):
    """PACE with ``--objective leaves``: after pruning, while the best certified model
    has a split to collapse."""

    name = "collapse"

    def applies(self, state: RunState) -> bool:
        return state.cfg.objective == "leaves" and state.best is not None

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        assert state.best is not None
        k = state.original.n_classes
        trees = list(state.best[0].model.trees)
        failed: set[bytes] = set()
        while not budget.expired():
            done = False
            for _gap, t, node in candidates(trees):
                small = collapse(trees[t], node)
                chosen = [*trees[:t], *([small] if small is not None else []), *trees[t + 1 :]]
                key = b"|".join(partition_key(c) for c in chosen)
                if key in failed or not chosen:
                    continue
                res = refit_loop(
                    state, chosen, k, budget, max_rounds=state.cfg.tuning.pace.collapse_rounds
                )
                if budget.expired():
                    return
                if res is None or not res.certified or res.model is None:
                    failed.add(key)
                    continue
                state.say(
                    f"[collapse] {res.model.n_trees} trees, {res.model.n_leaves} leaves certified"
                )
                yield Offer(res, "collapse")
                trees, done = list(res.model.trees), True
                break
            if not done:
                return
