"""Tests for pace_cert.plausibility: sklearn agreement, float32 thresholds, delta, artifact."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from sklearn.ensemble import IsolationForest
from sklearn.ensemble._iforest import _average_path_length

from pace_cert.model.ensemble import LEAF, float32_floor, next_float32
from pace_cert.oracle.score_model import ScoreModel
from pace_cert.region.plausibility import (
    FORMAT_TAG,
    PlausibilityForest,
    average_path_length,
    fit_plausibility,
    from_json_dict,
    from_sklearn,
    in_region,
    load_artifact,
    plausibility_scores,
    save_artifact,
    threshold_for_delta,
    to_json_dict,
)

SEEDS_CSV = Path(__file__).resolve().parents[1] / "pace_cert" / "data" / "seeds.csv"


def _gaussian() -> np.ndarray:
    return np.random.default_rng(1).normal(size=(300, 4)).astype(np.float32)


def _seeds() -> np.ndarray:
    data = np.genfromtxt(SEEDS_CSV, delimiter=",", skip_header=1)
    return data[:, :-1].astype(np.float32)


DATASETS = {"gaussian": _gaussian, "seeds": _seeds}
ISO_CONFIGS = {
    "default": {},
    "max_features": {"max_features": 0.5},
    "max_samples": {"max_samples": 64},
}


def _far_points(X: np.ndarray, n: int = 200) -> np.ndarray:
    rng = np.random.default_rng(7)
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = hi - lo
    far = rng.uniform(lo - 50 * span, hi + 50 * span, size=(n, X.shape[1]))
    extremes = np.array([np.full(X.shape[1], v) for v in (-3.0e38, 3.0e38, -1e6, 1e6, 0.0)])
    return np.vstack([far, extremes]).astype(np.float32)


@pytest.fixture(scope="module", params=[(d, c) for d in DATASETS for c in ISO_CONFIGS])
def fitted(request):
    dname, cname = request.param
    X = DATASETS[dname]()
    iso = IsolationForest(n_estimators=25, random_state=3, **ISO_CONFIGS[cname]).fit(X)
    return X, iso, from_sklearn(iso, X, 0.1)


def test_average_path_length_matches_sklearn():
    s = np.arange(0, 600)
    ours = np.array([average_path_length(int(v)) for v in s])
    np.testing.assert_array_equal(ours, _average_path_length(s))
    assert average_path_length(1) == 0.0 and average_path_length(2) == 1.0
    gamma = 0.5772156649015329
    assert average_path_length(10) == pytest.approx(2 * (math.log(9) + gamma) - 2 * 9 / 10)


def test_scores_match_sklearn(fitted):
    X, iso, forest = fitted
    assert forest.n_trees == len(iso.estimators_)
    assert forest.max_samples_used == iso.max_samples_
    c_max = average_path_length(forest.max_samples_used)
    for pts in (X, _far_points(X)):
        a = plausibility_scores(forest, pts)
        ours = -(2.0 ** (-a / forest.n_trees / c_max))
        np.testing.assert_allclose(ours, iso.score_samples(pts), rtol=1e-9, atol=0)


def test_oracle_score_model_sums_the_forest(fitted):
    """The oracle's ScoreModel of the forest (base 0) gives plausibility_scores exactly:
    the screen and the CP-SAT condition share one definition of A(x)."""
    X, _, forest = fitted
    model = ScoreModel.sum_of(forest.trees)
    assert model.base.tolist() == [0.0]
    for pts in (X, _far_points(X)):
        np.testing.assert_array_equal(model.scores(pts)[:, 0], plausibility_scores(forest, pts))


def test_leaf_values_are_depth_plus_correction(fitted):
    _, iso, forest = fitted
    for est, t in zip(iso.estimators_, forest.trees):
        st = est.tree_
        leaves = np.flatnonzero(st.children_left == -1)
        np.testing.assert_array_equal(t.leaves, leaves)
        depth = st.compute_node_depths()[leaves] - 1
        expected = depth + _average_path_length(st.n_node_samples[leaves])
        np.testing.assert_allclose(t.value[leaves, 0], expected, rtol=1e-15)
        assert np.all(t.value[t.left != LEAF] == 0.0)


def test_feature_mapping_uses_original_indices(fitted):
    _, iso, forest = fitted
    for est, feats, t in zip(iso.estimators_, iso.estimators_features_, forest.trees):
        internal = est.tree_.children_left != -1
        np.testing.assert_array_equal(t.feature[internal], feats[est.tree_.feature[internal]])
        assert np.all(t.feature[~internal] == LEAF)


def test_leaf_assignment_at_thresholds_matches_sklearn(fitted):
    X, iso, forest = fitted
    rng = np.random.default_rng(11)
    n_rounded_up = 0
    for est, feats, t in zip(iso.estimators_, iso.estimators_features_, forest.trees):
        st = est.tree_
        rows = []
        for i in np.flatnonzero(st.children_left != -1):
            thr = float(st.threshold[i])
            f = int(feats[st.feature[i]])
            lo = float32_floor(thr)
            assert float(lo) <= thr < float(next_float32(lo))
            assert t.threshold[i] == lo
            if float(np.float32(thr)) > thr:
                n_rounded_up += 1  # naive rounding would send x = fl32(thr) left
            for v in (lo, next_float32(lo), np.float32(thr)):
                base = X[rng.integers(len(X))].copy()
                base[f] = v
                rows.append(base)
        P = np.vstack([np.asarray(rows, np.float32), X, _far_points(X, 20)])
        np.testing.assert_array_equal(t.apply(P), est.apply(P[:, feats]))
    assert n_rounded_up > 0  # the test exercises thresholds not representable in float32


def test_delta_semantics():
    X = np.random.default_rng(5).normal(size=(400, 3)).astype(np.float32)
    f0 = fit_plausibility(X, 0.0, n_estimators=40, seed=2)
    assert in_region(f0, X).all()
    assert f0.delta_abs == plausibility_scores(f0, X).min()

    f2 = fit_plausibility(X, 0.2, n_estimators=40, seed=2)
    outside = 1.0 - in_region(f2, X).mean()
    assert 0.15 <= outside <= 0.25
    assert f2.params == {"n_estimators": 40, "max_samples": "auto", "seed": 2}

    a = plausibility_scores(f0, X)
    np.testing.assert_array_equal(a, plausibility_scores(f2, X))  # same seed, same forest
    prev = np.ones(len(X), bool)
    for delta in (0.0, 0.05, 0.1, 0.2, 0.35, 0.5, 0.8, 1.0):
        mask = a >= threshold_for_delta(a, delta)
        assert not (mask & ~prev).any()  # nested: larger delta, smaller region
        assert (~mask).sum() <= delta * len(X)  # never flags more than delta
        assert mask.any()  # never empty, even for delta = 1
        prev = mask


@pytest.mark.parametrize("delta", [-0.01, 1.01, float("nan"), float("inf")])
def test_bad_delta_rejected(delta):
    with pytest.raises(ValueError, match="delta"):
        fit_plausibility(np.zeros((10, 2), np.float32), delta, n_estimators=2)


def test_bad_training_data_rejected():
    with pytest.raises(ValueError, match="at least 2"):
        fit_plausibility(np.zeros((1, 3)), 0.1, n_estimators=2)
    X = np.random.default_rng(0).normal(size=(20, 2))
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        fit_plausibility(X, 0.1, n_estimators=2)
    X[3, 1] = 1e39  # finite in float64, inf in float32
    with pytest.raises(ValueError, match="non-finite"):
        fit_plausibility(X, 0.1, n_estimators=2)


def test_scoring_rejects_nan_and_wrong_width():
    X = _gaussian()
    f = fit_plausibility(X, 0.1, n_estimators=5)
    with pytest.raises(ValueError):
        plausibility_scores(f, np.full((1, 4), np.nan))
    with pytest.raises(ValueError):
        in_region(f, X[:, :3])


# ---------------------------------------------------------------------------
# artifact


@pytest.fixture(scope="module")
def small_forest() -> tuple[np.ndarray, PlausibilityForest]:
    X = _seeds()
    return X, fit_plausibility(X, 0.1, n_estimators=10, seed=4)


def _assert_bit_equal(f: PlausibilityForest, g: PlausibilityForest) -> None:
    assert f.n_features == g.n_features and f.max_samples_used == g.max_samples_used
    assert f.delta == g.delta and f.delta_abs == g.delta_abs and f.params == g.params
    assert len(f.trees) == len(g.trees)
    for s, t in zip(f.trees, g.trees):
        for name in ("feature", "left", "right"):
            np.testing.assert_array_equal(getattr(s, name), getattr(t, name))
        assert t.threshold.dtype == np.float32 and t.value.dtype == np.float64
        np.testing.assert_array_equal(s.threshold.view(np.uint32), t.threshold.view(np.uint32))
        np.testing.assert_array_equal(s.value.view(np.uint64), t.value.view(np.uint64))


def test_artifact_round_trip_bit_exact(tmp_path, small_forest):
    X, forest = small_forest
    path = tmp_path / "plausibility.json"
    save_artifact(forest, path)
    assert [p.name for p in tmp_path.iterdir()] == ["plausibility.json"]  # no temp left
    loaded = load_artifact(path)
    _assert_bit_equal(forest, loaded)
    pts = np.vstack([X, _far_points(X)])
    np.testing.assert_array_equal(
        plausibility_scores(forest, pts), plausibility_scores(loaded, pts)
    )
    np.testing.assert_array_equal(in_region(forest, X), in_region(loaded, X))
    assert json.loads(path.read_text())["format"] == FORMAT_TAG
    _assert_bit_equal(forest, from_json_dict(json.loads(json.dumps(to_json_dict(forest)))))
    save_artifact(forest, path)  # overwriting works too
    _assert_bit_equal(forest, load_artifact(path))


def _load_tampered(tmp_path: Path, d: dict) -> PlausibilityForest:
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(d))
    return load_artifact(path)


def _scores_change_or_rejected(tmp_path, d, X, reference):
    try:
        g = _load_tampered(tmp_path, d)
    except ValueError:
        return
    assert not np.array_equal(plausibility_scores(g, X), reference)


def test_tampered_threshold_or_value_detected(tmp_path, small_forest):
    X, forest = small_forest
    ref = plausibility_scores(forest, X)
    d = to_json_dict(forest)
    d["trees"][0]["threshold"][0] = float(np.finfo(np.float32).max).hex()  # root: all go left
    _scores_change_or_rejected(tmp_path, d, X, ref)

    d = to_json_dict(forest)
    leaf = int(np.bincount(forest.trees[2].apply(X)).argmax())  # a leaf training rows reach
    d["trees"][2]["value"][leaf] = (forest.trees[2].value[leaf, 0] + 1.0).hex()
    _scores_change_or_rejected(tmp_path, d, X, ref)

    d = to_json_dict(forest)
    d["trees"][1]["value"][int(forest.trees[1].leaves[0])] = (-1.0).hex()
    with pytest.raises(ValueError, match="path lengths"):
        _load_tampered(tmp_path, d)


def test_wrong_format_and_truncation_rejected(tmp_path, small_forest):
    _, forest = small_forest
    d = to_json_dict(forest)
    d["format"] = "pace-cert-plausibility/2"
    with pytest.raises(ValueError, match="format"):
        _load_tampered(tmp_path, d)

    path = tmp_path / "p.json"
    save_artifact(forest, path)
    text = path.read_bytes()
    for cut in (0, 1, len(text) // 2, len(text) - 3):
        path.write_bytes(text[:cut])
        with pytest.raises(ValueError):
            load_artifact(path)


def _mutations():
    def drop_key(d):
        del d["delta_abs"]

    def drop_tree_key(d):
        del d["trees"][0]["left"]

    def short_array(d):
        d["trees"][0]["threshold"].pop()

    def short_value(d):
        d["trees"][1]["value"].pop()

    def cycle(d):
        t = d["trees"][0]
        t["left"][0] = 0  # points back at the root

    def non_float32_threshold(d):
        t = d["trees"][0]
        t["threshold"][0] = (float(np.float32(0.1)) + 2.0**-40).hex()

    def bad_hex(d):
        d["trees"][0]["value"][0] = "zz"

    def float_feature(d):
        d["trees"][0]["feature"][0] = 0.5

    def feature_out_of_range(d):
        t = d["trees"][0]
        i = next(k for k, f in enumerate(t["feature"]) if f != LEAF)
        t["feature"][i] = d["n_features"]

    def bad_delta(d):
        d["delta"] = 2.0

    def no_trees(d):
        d["trees"] = []

    def not_object(d):
        d.clear()
        d["format"] = FORMAT_TAG
        d["trees"] = "nope"

    return [
        drop_key,
        drop_tree_key,
        short_array,
        short_value,
        cycle,
        non_float32_threshold,
        bad_hex,
        float_feature,
        feature_out_of_range,
        bad_delta,
        no_trees,
        not_object,
    ]


@pytest.mark.parametrize("mutate", _mutations(), ids=lambda f: f.__name__)
def test_malformed_artifacts_rejected(tmp_path, small_forest, mutate):
    _, forest = small_forest
    d = to_json_dict(forest)
    mutate(d)
    with pytest.raises(ValueError):
        _load_tampered(tmp_path, d)


def test_loaded_forest_needs_no_sklearn(small_forest):
    _, forest = small_forest
    text = json.dumps(to_json_dict(forest))
    assert "sklearn" not in text and "pickle" not in text
    d = json.loads(text)
    assert set(d) == {
        "format",
        "n_features",
        "delta",
        "delta_abs",
        "max_samples_used",
        "params",
        "trees",
    }
