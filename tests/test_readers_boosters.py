"""LightGBM and XGBoost (onnxmltools) and HistGradientBoosting (skl2onnx) exports: the
IR's labels equal onnxruntime's on training rows, random points and every cell of small
models, binary and multi-class; the label never depends on the post transform; what the
readers cannot model is rejected with the attribute named (issue 39)."""

from __future__ import annotations

import copy
import itertools
import json

import numpy as np
import pytest
from onnx import helper

from pace_cert import zoo
from pace_cert.model.ensemble import family_of
from pace_cert.model.onnx_reader import UnsupportedModel, ensemble_from_model
from pace_cert.model.runtime import labels, session
from pace_cert.model.tree_ensemble_op import POST_TRANSFORMS
from pace_cert.region.domain import build_domain

from . import booster_models as bm
from .helpers import small_problem, tec_model


def _needs(*modules):
    for m in modules:
        pytest.importorskip(m, reason=f"{m} is not installed (pip install -e '.[boosters]')")


def _ort(model, P) -> np.ndarray:
    return labels(session(model.SerializeToString()), P)


def _points(ens, X, seed=0, n=3000):
    """Training rows, random points around them, and every cell representative of the
    IR's domain (random representatives when there are more than 50,000 cells)."""
    rng = np.random.default_rng(seed)
    X = np.asarray(X, np.float32)
    lo, hi = X.min(axis=0) - 2, X.max(axis=0) + 2
    pts = [X, rng.uniform(lo, hi, size=(n, X.shape[1])).astype(np.float32)]
    reps = build_domain(ens.trees, ens.n_features).reps
    if int(np.prod([float(len(c)) for c in reps])) <= 50_000:
        pts.append(np.array(list(itertools.product(*reps)), np.float32))
    else:
        idx = [rng.integers(0, len(c), 20_000) for c in reps]
        pts.append(np.stack([c[i] for c, i in zip(reps, idx)], axis=1).astype(np.float32))
    return np.vstack(pts)


def _agrees(model, X, seed=0):
    ens, info = ensemble_from_model(model)
    P = _points(ens, X, seed)
    assert list(ens.predict(P)) == list(_ort(model, P))
    return ens, info


def _raw(dataset):
    X, y, _ = zoo.load_dataset(dataset)
    return X.astype(np.float32), y


def _every_cell(ens, model):
    grid = np.array(list(itertools.product(*build_domain(ens.trees, ens.n_features).reps)))
    grid = grid.astype(np.float32)
    assert list(ens.predict(grid)) == list(_ort(model, grid))
    return len(grid)


# --- LightGBM ----------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", ["compas", "seeds", "diabetes"])  # binary / 3 classes / raw
@pytest.mark.parametrize("depth", [1, 3])
def test_lightgbm_matches_onnxruntime_on_bundled(dataset, depth):
    _needs("lightgbm", "onnxmltools")
    X, y = _raw(dataset)
    _, model = bm.lgbm(X, y, 20, depth)
    ens, _ = _agrees(model, X)
    k = len(np.unique(y))
    assert ens.pattern.startswith("onnxmltools-lightgbm/")
    assert ens.pattern.endswith("argmax" if k > 2 else "binary_threshold_0")
    assert family_of(ens) == "LightGBM LGBMClassifier (onnxmltools)"
    assert ens.n_estimators == 20 and ens.n_trees == 20 * (k if k > 2 else 1)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("zipmap", [False, True])
def test_lightgbm_every_cell_small(n_classes, zipmap):
    """Every cell representative of small models (exhaustive), both output tails."""
    _needs("lightgbm", "onnxmltools")
    for seed in range(3):
        X, y = small_problem(seed, n_features=3, n_classes=n_classes)
        _, model = bm.lgbm(X, y, 7, 2, seed=seed, zipmap=zipmap)
        ens, _ = ensemble_from_model(model)
        assert ens.pattern.startswith("onnxmltools-lightgbm/")
        assert _every_cell(ens, model) > 1


def test_lightgbm_string_labels():
    _needs("lightgbm", "onnxmltools")
    X, y = _raw("seeds")
    _, model = bm.lgbm(X, np.array(["kama", "rosa", "cana"])[y], 10, 2)
    ens, info = _agrees(model, X)
    assert info.label_is_string and ens.classes.dtype == object


def test_lightgbm_categorical_and_rf_exports_are_rejected():
    """Categorical splits become BRANCH_EQ chains; boosting_type='rf' takes the label from
    an ArgMax over transformed probabilities: neither is modelled, and the line says so."""
    _needs("lightgbm", "onnxmltools")
    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 6, 300), rng.normal(size=300)].astype(np.float32)
    y = ((X[:, 0] % 2 == 0) ^ (X[:, 1] > 0)).astype(np.int64)
    _, model = bm.lgbm(
        X, y, 5, 3, fit={"categorical_feature": [0]}, min_data_per_group=1, cat_smooth=1
    )
    with pytest.raises(UnsupportedModel, match="BRANCH_EQ"):
        ensemble_from_model(model)
    _, model = bm.lgbm(
        X, y, 5, 2, boosting_type="rf", bagging_freq=1, bagging_fraction=0.5, subsample=0.5
    )
    with pytest.raises(UnsupportedModel, match="boosting_type='rf'"):
        ensemble_from_model(model)


# --- XGBoost -----------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", ["compas", "seeds", "diabetes"])
@pytest.mark.parametrize("depth", [1, 3])
def test_xgboost_matches_onnxruntime_on_bundled(dataset, depth):
    _needs("xgboost", "onnxmltools")
    X, y = _raw(dataset)
    _, model = bm.xgb(X, y, 20, depth)
    ens, _ = _agrees(model, X)
    k = len(np.unique(y))
    assert ens.pattern.startswith("onnxmltools-xgboost/")
    assert family_of(ens) == "XGBoost XGBClassifier (onnxmltools)"
    assert ens.n_estimators == 20 and ens.n_trees == 20 * (k if k > 2 else 1)


@pytest.mark.parametrize(
    "n_classes,objective",
    [(2, "default"), (3, "default"), (2, "binary:hinge"), (3, "multi:softmax")],
)
def test_xgboost_every_cell_small(n_classes, objective):
    """Every cell of small models, for the objectives whose exports differ in base values
    and post transforms (BRANCH_LT splits, read as x <= prev_float32(t); binary with
    base_score 0.3, a non-zero margin base value)."""
    _needs("xgboost", "onnxmltools")
    kw = {} if objective == "default" else {"objective": objective}
    for seed in range(3):
        X, y = small_problem(seed, n_features=3, n_classes=n_classes)
        base = {"base_score": 0.3} if n_classes == 2 else {}
        _, model = bm.xgb(X, y, 7, 2, seed=seed, **base, **kw)
        ens, _ = ensemble_from_model(model)
        assert ens.pattern.startswith("onnxmltools-xgboost/")
        assert _every_cell(ens, model) > 1


def test_xgboost_categorical_is_rejected():
    _needs("xgboost", "onnxmltools")
    pd = pytest.importorskip("pandas", reason="pandas is not installed")

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"f0": pd.Categorical(rng.integers(0, 5, 200)), "f1": rng.normal(size=200)})
    y = (X["f0"].cat.codes.to_numpy() % 2).astype(np.int64)
    import xgboost
    from onnxmltools.convert import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    m = xgboost.XGBClassifier(n_estimators=3, max_depth=2, enable_categorical=True).fit(X, y)
    try:
        model = convert_xgboost(m, initial_types=[("X", FloatTensorType([None, 2]))])
    except Exception as e:  # a converter that refuses categorical splits is fine too
        pytest.skip(f"onnxmltools refuses categorical XGBoost: {e}")
    with pytest.raises(UnsupportedModel, match="BRANCH_EQ"):
        ensemble_from_model(model)


# --- HistGradientBoosting ------------------------------------------------------------------


@pytest.mark.parametrize("dataset", ["compas", "seeds", "diabetes"])
@pytest.mark.parametrize("depth", [1, 3])
def test_hist_gradient_boosting_matches_onnxruntime_on_bundled(dataset, depth):
    X, y = _raw(dataset)
    _, model = bm.hgb(X, y, 20, depth)
    ens, _ = _agrees(model, X)
    k = len(np.unique(y))
    assert ens.pattern.startswith("skl2onnx-tree-ensemble-classifier/")
    assert family_of(ens) == "scikit-learn HistGradientBoostingClassifier (skl2onnx)"
    assert ens.n_estimators == 20 and ens.n_trees == 20 * (k if k > 2 else 1)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_hist_gradient_boosting_every_cell_small(n_classes):
    for seed in range(3):
        X, y = small_problem(seed, n_features=3, n_classes=n_classes)
        _, model = bm.hgb(X, y, 7, 2, seed=seed, min_samples_leaf=2)
        ens, _ = ensemble_from_model(model)
        assert _every_cell(ens, model) > 1


def _mvtt(model):
    node = next(n for n in model.graph.node if n.op_type == "TreeEnsembleClassifier")
    return next(a for a in node.attribute if a.name == "nodes_missing_value_tracks_true")


def test_missing_value_tracks_true_changes_nothing_but_nan():
    """LightGBM / XGBoost / HistGradientBoosting set nodes_missing_value_tracks_true; on
    every non-NaN input onnxruntime compares as the split mode says: with the attribute
    set on every node or on none, the IR (which reads it past) is the same and labels
    every cell (thresholds and the next float32 above them) as onnxruntime does. Only
    NaN inputs, outside every domain, can tell the two apart."""
    X, y = small_problem(2, n_features=3, n_classes=2)
    _, model = bm.hgb(X, y, 5, 2, min_samples_leaf=2)
    ens, _ = ensemble_from_model(model)
    for flag in (0, 1):
        m = copy.deepcopy(model)
        a = _mvtt(m)
        n = len(a.ints)
        del a.ints[:]
        a.ints.extend([flag] * n)
        got, _ = ensemble_from_model(m)
        assert all(
            np.array_equal(t.threshold, u.threshold) and np.array_equal(t.value, u.value)
            for t, u in zip(got.trees, ens.trees)
        )
        assert _every_cell(got, m) > 1


# --- onnxruntime takes the label before the post transform ---------------------------------


def _with_post(model, post: str):
    m = copy.deepcopy(model)
    node = next(n for n in m.graph.node if n.op_type == "TreeEnsembleClassifier")
    for a in list(node.attribute):
        if a.name == "post_transform":
            node.attribute.remove(a)
    node.attribute.append(helper.make_attribute("post_transform", post))
    return m


LAYOUTS = {
    # (class_ids, weights, base, labels): a stump, half the entries on each leaf
    "binary one column, negative weights (LightGBM)": ([0, 0], [-0.7, 0.4], None, (0, 1)),
    "binary one column + base (XGBoost, HistGB)": ([0, 0], [-0.2, 0.3], [-0.05], (0, 1)),
    "binary one column, weights >= 0 + base": ([0, 0], [0.2, 0.45], [0.1], (0, 1)),
    "binary both classes": ([0, 1, 0, 1], [0.6, -0.6, -0.3, 0.3], None, (0, 1)),
    "multi-class (GB/LightGBM)": (
        [0, 1, 2, 0, 1, 2],
        [2.0, 30.0, 31.0, 40.0, 39.0, 1.0],
        None,
        (0, 1, 2),
    ),
    "multi-class + base": (
        [0, 1, 2, 0, 1, 2],
        [2.0, 30.0, 31.0, 40.0, 39.0, 1.0],
        [0.0, 1.5, 0.0],
        (0, 1, 2),
    ),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("post", POST_TRANSFORMS)
def test_label_ignores_post_transform(layout, post):
    """For every layout the boosters' exports use and every post transform, onnxruntime's
    label is the rule on the raw scores: the IR does not depend on post_transform, and its
    labels are onnxruntime's (saturating transforms included: LOGISTIC maps 30 and 31 to
    the same float32 1.0, yet the label stays the raw argmax)."""
    class_ids, weights, base, labs = LAYOUTS[layout]
    model = _with_post(tec_model(class_ids, weights, base=base, labels=labs), post)
    ens, _ = ensemble_from_model(model)
    ref, _ = ensemble_from_model(_with_post(model, "NONE"))
    grid = np.array([[-1.0], [0.0], [1.0]], np.float32)
    assert list(ens.predict(grid)) == list(_ort(model, grid))
    assert ens.pattern == ref.pattern and np.array_equal(ens.base, ref.base)


# --- inspect and the certificate count estimators and trees ---------------------------------


def test_inspect_names_family_and_counts_estimators(tmp_path):
    from typer.testing import CliRunner

    from pace_cert.cli.main import app

    X, y = _raw("seeds")
    model = zoo.export_onnx(zoo.make_model("gb", 100, 1).fit(X, y), X.shape[1])
    path = tmp_path / "gb.onnx"
    path.write_bytes(model.SerializeToString())
    res = CliRunner().invoke(app, ["inspect", str(path), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["family"] == "scikit-learn GradientBoostingClassifier (skl2onnx)"
    assert d["estimators"] == 100 and d["trees"] == 300
    res = CliRunner().invoke(app, ["inspect", str(path)])
    fields = {
        k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in res.stdout.splitlines())
    }
    assert fields["trees"] == "300"
    assert fields["estimators"].startswith("100 (x 3 classes")
    from pace_cert.cert.records import model_summary

    s = model_summary("gb.onnx", "0" * 64, ensemble_from_model(model)[0])
    assert (s.family, s.estimators, s.trees) == (d["family"], 100, 300)
