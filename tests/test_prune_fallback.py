"""Mode tree falls back on mode prune's steps when no single tree is certified: the
result is then the best certified pruning (never the original when pruning certifies
something smaller), the certificate says so, and verify re-proves it."""

from __future__ import annotations

import numpy as np
import pytest

import pace_cert
from pace_cert.driver.phases.prune_fallback import PruneFallback
from pace_cert.driver.plans import PLANS


@pytest.fixture(scope="module")
def raw_forest():
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :6].astype(np.float32)
    return RandomForestClassifier(8, max_depth=2, random_state=0).fit(X, y), X, y


RUN = dict(mode="tree", eta=0.4, time_limit=120, threads=1, quiet=True)


def test_no_tree_within_the_caps_gives_the_best_certified_pruning(raw_forest):
    est, X, y = raw_forest
    res = pace_cert.compress(est, X, y, max_leaves=2, **RUN)
    t = res.certificate.summary.single_tree
    assert t.fallback == "prune" and t.none_within_caps
    assert res.certified and 1 < res.certificate.compressed.trees < 8
    assert "the best certified pruning" in str(res)
    assert pace_cert.verify(res).verified


def test_a_certified_tree_skips_the_fallback(raw_forest):
    est, X, y = raw_forest
    res = pace_cert.compress(est, X, y, **{**RUN, "eta": 0.8})
    assert res.certified and res.certificate.compressed.trees == 1
    assert res.certificate.summary.single_tree.fallback is None


def test_the_tree_plan_ends_with_mode_prunes_steps_wrapped():
    tail = PLANS["tree"].steps[3:]  # start-from, tree, leaf-bound, then the fallback
    assert all(isinstance(s, PruneFallback) for s in tail)
    assert [s.name for s in tail] == [s.name for s in PLANS["prune"].steps[1:]]


def test_mode_tree_on_raw_features_warns_what_to_expect(raw_forest):
    est, X, _y = raw_forest
    said: list[str] = []
    from pace_cert.driver.runner import compress
    from pace_cert.export import estimator_to_onnx
    from pace_cert.model.onnx_reader import ensemble_from_model
    from pace_cert.settings import CompressConfig

    ens, _ = ensemble_from_model(estimator_to_onnx(est))
    cfg = CompressConfig.of(
        mode="tree", eta=0.4, time_limit=60, threads=1, max_leaves=2, enum_cells=10
    )
    compress(ens, X, cfg, progress=said.append)
    assert any("warning:" in m and "frontier" in m for m in said), said[:5]
