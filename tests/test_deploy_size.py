"""The size in what deployment pays for (pace_cert/deploy_size.py): structural counts
against hand-built trees, comparisons per prediction against a row-by-row walk, and a
latency measurement that is bounded and returns positive numbers (never their speed)."""

from __future__ import annotations

import numpy as np
import pytest

from pace_cert import deploy_size, zoo
from pace_cert.deploy_size import comparisons, measure_latency, node_depths, structure
from pace_cert.model.ensemble import LEAF, Ensemble, Tree

from .helpers import small_problem, stump


def _chain() -> Tree:
    """x0 <= 1 ? leaf : (x1 <= 2 ? leaf : (x0 <= 3 ? leaf : leaf)): depth 3, 3 splits,
    4 leaves; nodes numbered out of order (children before the root's other side)."""
    feature = np.array([0, LEAF, 1, LEAF, 0, LEAF, LEAF])
    threshold = np.array([1, 0, 2, 0, 3, 0, 0], np.float32)
    left = np.array([1, LEAF, 3, LEAF, 5, LEAF, LEAF])
    right = np.array([2, LEAF, 4, LEAF, 6, LEAF, LEAF])
    return Tree(feature, threshold, left, right, np.zeros((7, 2)))


def _ensemble(trees) -> Ensemble:
    return Ensemble(tuple(trees), np.ones(len(trees)), np.zeros(2), np.array([0, 1]), n_features=2)


def test_structure_counts_hand_built_trees():
    ens = _ensemble([_chain(), stump(1, 0.5), _chain()])
    s = structure(ens, np.zeros((0, 2), np.float32))
    assert (s.trees, s.leaves, s.internal_nodes, s.max_depth) == (3, 4 + 2 + 4, 3 + 1 + 3, 3)
    assert (s.mean_comparisons, s.rows) == (0.0, 0)
    assert node_depths(_chain()).tolist() == [0, 1, 1, 2, 2, 3, 3]


def test_comparisons_follow_each_rows_path():
    """Per row: the chain makes 1 (x0 <= 1), 2 (x1 <= 2) or 3 comparisons, the stump 1."""
    ens = _ensemble([_chain(), stump(1, 0.5)])
    X = np.array([[0, 9], [2, 1], [2, 5], [5, 0]], np.float32)
    assert comparisons(ens, X).tolist() == [1 + 1, 2 + 1, 3 + 1, 2 + 1]
    assert structure(ens, X).mean_comparisons == 12 / 4


def _walk(tree: Tree, x: np.ndarray) -> int:
    """Comparisons on the path of ``x``, one node at a time."""
    node, n = 0, 0
    while tree.left[node] != LEAF:
        n += 1
        go_left = x[tree.feature[node]] <= tree.threshold[node]
        node = tree.left[node] if go_left else tree.right[node]
    return n


@pytest.mark.parametrize("chunk", [64, deploy_size.CHUNK_ROWS])
def test_comparisons_equal_a_brute_force_walk(monkeypatch, chunk):
    """A trained forest of uneven trees (chunked or not): the vectorised count is the
    per-row, per-tree walk, row by row."""
    monkeypatch.setattr(deploy_size, "CHUNK_ROWS", chunk)
    from pace_cert.model.onnx_reader import ensemble_from_model

    X, y = small_problem(3, n_features=4, n_rows=200)
    model = zoo.make_model("rf", 6, 4, 0).fit(X, y)
    ens, _ = ensemble_from_model(zoo.export_onnx(model, 4))
    rng = np.random.default_rng(0)
    Z = np.vstack([X, rng.uniform(-1, 5, size=(50, 4)).astype(np.float32)])
    want = np.array([sum(_walk(t, z) for t in ens.trees) for z in Z])
    assert comparisons(ens, Z).tolist() == want.tolist()
    s = structure(ens, Z)
    assert s.mean_comparisons == pytest.approx(want.mean(), rel=1e-15)
    assert s.internal_nodes == sum(int((t.left != LEAF).sum()) for t in ens.trees)
    assert s.leaves == s.internal_nodes + s.trees  # binary trees


def test_a_model_without_trees_makes_no_comparison():
    ens = Ensemble((), np.zeros(0), np.zeros(2), np.array([0, 1]), n_features=2)
    s = structure(ens, np.ones((5, 2), np.float32))
    assert (s.trees, s.leaves, s.internal_nodes, s.max_depth, s.mean_comparisons) == (
        0,
        0,
        0,
        0,
        0.0,
    )


@pytest.fixture(scope="module")
def two_models():
    X, y = small_problem(1, n_features=3, n_rows=300)
    big = zoo.export_onnx(zoo.make_model("rf", 8, 3, 0).fit(X, y), 3).SerializeToString()
    small = zoo.export_onnx(zoo.make_model("rf", 2, 2, 0).fit(X, y), 3).SerializeToString()
    return big, small, X


def test_latency_is_measured_for_both_models(two_models):
    """Only that the numbers exist and are positive: no test depends on speed."""
    big, small, X = two_models
    lat = measure_latency(big, small, X, seconds=0.5)
    assert lat is not None and not lat.same_model
    for v in (*lat.batch1_us, *lat.per_row_us):
        assert np.isfinite(v) and v > 0
    assert 1 <= lat.repeats <= deploy_size.MAX_REPEATS
    assert deploy_size.MIN_CALLS <= lat.calls <= deploy_size.MAX_CALLS
    assert 1 <= lat.batch_rows <= len(X)
    assert lat.threads == 1 and lat.onnxruntime


def test_the_same_file_is_measured_once(two_models):
    big, _, X = two_models
    lat = measure_latency(big, big, X, seconds=0.5)
    assert lat is not None and lat.same_model
    assert lat.batch1_us[0] == lat.batch1_us[1] and lat.per_row_us[0] == lat.per_row_us[1]


@pytest.mark.parametrize("seconds", [0.0, -1.0, float("nan"), deploy_size.MIN_LATENCY_SECONDS / 2])
def test_no_time_no_latency(two_models, seconds):
    big, small, X = two_models
    assert measure_latency(big, small, X, seconds) is None
    assert measure_latency(big, small, X[:0]) is None
