"""The learner pool's arrays and the candidate the oracle certifies.

:func:`leaf_values` evaluates learners on samples; :func:`fold` turns master weights over
the pool into the exact float32 model that is certified and written (weights folded into
leaf values, learners that share every split merged).
"""

from __future__ import annotations

import numpy as np

from pace_cert.learners import merge
from pace_cert.model.ensemble import Ensemble, FlatForest, Tree, float32_sum_guard


def fold(
    learners: list[Tree],
    weights: np.ndarray,
    offsets: np.ndarray,
    base_classes,
    origin: list[str],
    n_features: int,
    tol: float,
) -> tuple[Ensemble, list[int]]:
    """The exact float32 model to certify and write: w_t folded into leaf values.

    Weights below ``tol * max(w)`` are dropped *before* the proof. Kept learners that
    share every split are merged into one tree (``merge.py``: the same scores on every
    input, one tree fewer each); tree i of the model is group i of
    ``merge.group_by_structure([learners[t] for t in keep])``, "new" if any learner in
    it is. Returns the model and the indices of the learners it keeps (at least as many
    as the model has trees).
    """
    wmax = float(weights.max()) if len(weights) else 0.0
    keep = [t for t in range(len(learners)) if weights[t] > tol * wmax and weights[t] > 0]
    kept = [learners[t] for t in keep]
    kept_w = [float(weights[t]) for t in keep]
    trees, tree_origin = [], []
    for g in merge.group_by_structure(kept):
        tr = kept[g[0]]
        v = merge.merged_leaf_values(kept, kept_w, g)
        trees.append(Tree(tr.feature, tr.threshold, tr.left, tr.right, v))
        tree_origin.append("new" if any(origin[keep[i]] == "new" for i in g) else "original")
    base = np.asarray(offsets, np.float32).astype(np.float64)
    model = Ensemble(
        trees=tuple(trees),
        weights=np.ones(len(trees)),
        base=base,
        classes=base_classes,
        n_features=n_features,
        kind="margin",
        margin_scale=1.0,
        pattern="pace-cert-argmax",
        runtime_guard=float32_sum_guard(trees, base),
        origin=tuple(tree_origin),
    )
    return model, keep


def leaf_values(learners: list[Tree], X: np.ndarray) -> np.ndarray:
    """H[i, t, k] = h_t,k(x_i) for float32 rows X."""
    K = learners[0].value.shape[1] if learners else 0
    H = np.zeros((len(X), len(learners), K))
    leaves = FlatForest.of(learners).apply(X)
    for t, tr in enumerate(learners):
        H[:, t, :] = tr.value[leaves[:, t]]
    return H
