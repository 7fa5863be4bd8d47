"""benchmarks/studies/l0_bound.py: its lower bound never exceeds the true minimum pruning.

On a grid small enough to list every input, brute force over all subsets of trees
gives the smallest faithful pruning (some weighting meets every input in the region);
the bound computed from a run's samples must not exceed it, the certified result must
not be smaller, and an ``l0_optimal`` result must equal it.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from benchmarks.studies import l0_bound
from pace_cert import zoo
from pace_cert.driver.runner import compress
from pace_cert.learners.pool import leaf_values
from pace_cert.master.rows import margin_rows
from pace_cert.model.onnx_reader import ensemble_from_model
from pace_cert.region.masks import margin_mask, plausibility_mask
from pace_cert.settings import CompressConfig

from .helpers import small_problem
from .test_l0_cover import _min_support_brute


def _true_minimum(original, res) -> int:
    """Smallest set of original trees some weighting of which meets every grid point
    of the region (values 0..3 per feature reach every cell: thresholds lie inside)."""
    grid = np.array(list(itertools.product(range(4), repeat=original.n_features)), np.float32)
    inside = margin_mask(original, grid, res.region.margin)
    if res.plausibility is not None:
        inside &= plausibility_mask(res.plausibility, grid)
    X = grid[inside]
    A = margin_rows(leaf_values(list(original.trees), X), original.predict_index(X))
    return _min_support_brute(A, original.n_trees)


@pytest.mark.parametrize("seed", [1, 2, 5, 6, 7])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_bound_is_below_the_true_minimum_pruning(seed, n_classes):
    X, y = small_problem(seed, n_features=4, n_classes=n_classes, n_rows=200)
    m = zoo.make_model("rf", 10, 2, seed).fit(X, y)
    original, _ = ensemble_from_model(zoo.export_onnx(m, 4))
    cfg = CompressConfig.of(mode="prune", eta=0.1, delta=0.1, iforest_estimators=5, seed=seed)
    res = compress(original, X, cfg)
    assert res.certified
    rows, _ = l0_bound.region_rows(SimpleNamespace(X_train=X, original=original), res)
    bound, optimal, _ = l0_bound.lower_bound(original, rows, 60.0)
    truth = _true_minimum(original, res)
    assert optimal
    assert bound <= truth <= res.compressed.n_trees
    if res.l0_optimal:
        assert res.compressed.n_trees == truth
