"""The stacked-forest evaluation (FlatForest) against the tree-by-tree reference."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pace_cert import zoo
from pace_cert.model.ensemble import FlatForest
from pace_cert.model.onnx_reader import ensemble_from_model
from pace_cert.oracle.score_model import ScoreModel
from pace_cert.oracle.screen import cell_product
from pace_cert.region.plausibility import fit_plausibility, plausibility_scores


def _forests():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, size=(300, 4)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * rng.normal(size=300) > 3).astype(int) + (X[:, 2] > 3)
    out = []
    for family, n, depth in (("rf", 7, 3), ("ada", 9, 1), ("rf", 5, 5)):
        model = zoo.export_onnx(zoo.make_model(family, n, depth, 1).fit(X, y), 4)
        out.append(ensemble_from_model(model)[0])
    return X, out


def _rows(X: np.ndarray, rng) -> np.ndarray:
    """Training rows, random floats, the thresholds themselves (ties go left) and NaN."""
    noisy = rng.uniform(-1, 7, size=(200, X.shape[1])).astype(np.float32)
    ties = np.repeat(np.array([[0.5, 1.5, 2.5, 3.5]], np.float32), 4, axis=0).T
    nan = noisy[:5].copy()
    nan[:, 1] = np.nan
    return np.vstack([X, noisy, ties, nan])


@pytest.mark.parametrize("chunk", [FlatForest.CHUNK, 7])
def test_flat_forest_reaches_the_leaves_tree_apply_reaches(monkeypatch, chunk):
    monkeypatch.setattr(FlatForest, "CHUNK", chunk)  # 7: rows evaluated a few at a time
    X, forests = _forests()
    R = _rows(X, np.random.default_rng(1))
    for ens in forests:
        ref = np.stack([t.apply(R) for t in ens.trees], axis=1)
        assert np.array_equal(FlatForest.of(ens.trees).apply(R), ref)
        assert np.array_equal(ens.apply(R), ref)
        # scores: the same float64 sums as adding tree by tree, bit for bit
        s = np.tile(ens.base, (len(R), 1))
        for w, t in zip(ens.weights, ens.trees):
            s += w * t.value[t.apply(R)]
        assert np.array_equal(ens.scores(R), s)
        sm = ScoreModel.from_ensemble(ens)
        assert np.array_equal(sm.scores(R), s)
    assert FlatForest.of([]).apply(R).shape == (len(R), 0)


def test_isolation_forest_scores_are_the_tree_by_tree_sums():
    X, _ = _forests()
    forest = fit_plausibility(X, 0.1, n_estimators=20, seed=3)
    R = _rows(X, np.random.default_rng(2))[:-5]  # no NaN: the forest rejects it
    a = np.zeros(len(R))
    for t in forest.trees:
        a += t.value[t.apply(R), 0]
    assert np.array_equal(plausibility_scores(forest, R), a)


def test_cell_product_is_itertools_product():
    vals = [np.array([0.5, 1.5]), np.array([2.0]), np.array([-1.0, 0.0, 3.0])]
    ref = np.array(list(itertools.product(*vals)), np.float32)
    assert np.array_equal(cell_product(vals), ref)
    assert cell_product([np.array([1.0]), np.zeros(0)]).shape == (0, 2)
