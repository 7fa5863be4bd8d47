"""Steps: certify the original itself with its trees that share every split merged.

Learners that share every split (feature, float32 threshold, shape) are summed into
one tree (``pace_cert/learners/merge.py``): the original's own function in exact
arithmetic, fewer trees. Boosted stumps repeat splits often, so this is often the
answer. :class:`MergeFirst` tries it before the L1 loop when the size lower bound
already equals its size (or, failing that, the same without its trees that split no
witnessed gap, when that is as small as the bound); :class:`MergeAfter` offers it
after the L1 loop when it is smaller than the best model so far.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.result import Offer, PhaseResult
from pace_cert.driver.state import RunState
from pace_cert.driver.step import BaseStep
from pace_cert.learners import merge
from pace_cert.master.rows import MasterSolution
from pace_cert.plumbing.budget import Budget
from pace_cert.region import witness


def merged_size(state: RunState) -> int:
    """Trees of the merged original; 0 when merging is off or no two trees share
    their splits."""
    cfg = state.cfg
    if cfg.mode == "generate" or not cfg.tuning.pace.merge_original:
        return 0
    n = state.original.n_trees
    size = len(merge.group_by_structure(state.learners[:n]))
    return 0 if size == n else size


def unwitnessed(state: RunState) -> list[int]:
    """Indices of the original trees that split no witnessed gap."""
    originals = state.learners[: state.original.n_trees]
    return witness.unwitnessed_trees(originals, state.witnesses.values())


def trimmed_size(state: RunState) -> int | None:
    """Trees of the merged original without its unwitnessed trees; None when no tree
    is unwitnessed, merging is off or no witness is known."""
    cfg = state.cfg
    if cfg.mode == "generate" or not cfg.tuning.pace.merge_original or not state.witnesses:
        return None
    n = state.original.n_trees
    drop = set(unwitnessed(state))
    if not drop or len(drop) == n:
        return None
    kept = [t for i, t in enumerate(state.learners[:n]) if i not in drop]
    return len(merge.group_by_structure(kept))


def merge_original(state: RunState, budget: Budget, trim: bool = False) -> PhaseResult:
    """The merged original, certified in one round. The weights are the original's,
    scaled so the smallest sample margin is 1 like a master solution's; the oracle
    certifies the float32 model like any candidate (a separating sample -- rounding at
    a near-tie -- is kept and the step gives up). Uncertified without a round when no
    two trees share their splits.

    ``trim``: also drop the trees that split no witnessed gap
    (:func:`witness.unwitnessed_trees`), each replaced by the mean of its leaf values
    (a constant, folded into the class offsets). A heuristic candidate, certified or
    refuted by the oracle like any other. Why it often holds: in a binary model whose
    dropped stump is the only split on its feature, the trimmed margin at x is the
    mean of the original's margins on the two sides of that split, which has the
    sign of every side inside the region unless the two sides carry opposite labels
    (a boundary witness, had the samples found it). Uncertified without a round when
    nothing is dropped or a sample disagrees. On domains small enough to enumerate,
    the trimmed candidate is screened on every cell before CP-SAT runs; the separating
    cells found are kept as samples."""
    n = state.original.n_trees
    learners = state.learners[:n]  # the pool starts with the original trees, in order
    w = np.asarray(state.original.weights, np.float64).copy()
    offsets = state.original.base - state.original.base[0]
    drop = unwitnessed(state) if trim else []
    same = len(merge.group_by_structure(learners)) == n
    if (same and not drop) or len(drop) == n or not len(state.X) or (w <= 0).any():
        return PhaseResult.nothing()
    for i in drop:
        mean = learners[i].value[learners[i].leaves].mean(axis=0)
        offsets = offsets + w[i] * (mean - mean[0])
        w[i] = 0.0
    margins = state.matrix(learners) @ np.r_[w, offsets[1:]]
    low = float(margins.min())
    what = "the merged original" + (f" without {len(drop)} unwitnessed tree(s)" if drop else "")
    if low <= 0:  # merged only: cannot happen for samples inside the region
        state.say(f"[merge] {what} disagrees with the original on a sample; skipped")
        return PhaseResult.nothing()
    sol = MasterSolution(w / low, offsets / low, float(np.sum(w / low)), None, True, "")
    # a trimmed candidate is a guess: on a small domain every cell is screened with
    # numpy first, so a refuted guess costs no CP-SAT round (the exact merge is the
    # original's own function: straight to the proof)
    screen = bool(drop) and state.screen.can_enumerate()
    res = faithful_loop(
        state, "merge", lambda _A: sol, learners, budget, screen=screen, max_rounds=1
    )
    if not res.certified:
        state.say(f"[merge] {what} was not certified in its round; continuing")
    elif res.model is not None:
        state.say(f"[merge] certified {what}: {res.model.n_trees} trees")
    return res


class MergeFirst(BaseStep):
    """Before the L1 loop, when the merged original (or the trimmed one) would be
    proved minimal at once."""

    name = "merge-first"

    def applies(self, state: RunState) -> bool:
        merged, bound = merged_size(state), state.size_bound or 0
        trimmed = trimmed_size(state)
        return bool(merged and bound >= merged) or (
            trimmed is not None and trimmed == state.size_bound
        )

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        merged = merged_size(state)
        if merged and (state.size_bound or 0) >= merged:
            state.merge_tried = True  # not again after the L1 loop
            yield Offer(merge_original(state, budget), "merge")
        else:
            yield Offer(merge_original(state, budget, trim=True), "merge")


class MergeAfter(BaseStep):
    """After the L1 loop, a smaller certified fallback than the L1 model."""

    name = "merge-after"

    def applies(self, state: RunState) -> bool:
        merged = merged_size(state)
        size = state.best_size()
        return bool(merged) and not state.merge_tried and (size is None or size > merged)

    def run(self, state: RunState, budget: Budget) -> Iterator[Offer]:
        yield Offer(merge_original(state, budget), "merge")
