"""Pipelines: per-feature monotone transforms in front of the trees (skl2onnx's Imputer
and Scaler) are folded into the split thresholds as float32 boundaries on the raw input,
confirmed with onnxruntime on both sides; the IR labels as onnxruntime labels the whole
pipeline; the compressed model reads the raw input; anything else in front of the trees
is rejected saying what to export instead (issue 39)."""

from __future__ import annotations

import copy
import itertools
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from pace_cert import zoo
from pace_cert.model.ensemble import next_float32
from pace_cert.model.input_transform import find_prefix, float_key, key_float, prefix_model
from pace_cert.model.onnx_reader import UnsupportedModel, ensemble_from_model
from pace_cert.model.runtime import labels, session
from pace_cert.region.domain import build_domain

from . import booster_models as bm
from .helpers import small_problem, tec_model


def _ort(model, P):
    return labels(session(model.SerializeToString()), np.asarray(P, np.float32))


def _scalers():
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import MaxAbsScaler, RobustScaler, StandardScaler

    return {
        "standard": [StandardScaler()],
        "imputer+standard": [SimpleImputer(), StandardScaler()],
        "robust": [RobustScaler()],
        "maxabs": [MaxAbsScaler()],
        "imputer": [SimpleImputer(strategy="median")],
    }


def _points(ens, X, seed=0):
    rng = np.random.default_rng(seed)
    reps = build_domain(ens.trees, ens.n_features).reps
    idx = [rng.integers(0, len(c), 20_000) for c in reps]
    return np.vstack(
        [
            X,
            rng.uniform(X.min(0) - 1, X.max(0) + 1, (3000, X.shape[1])).astype(np.float32),
            np.stack([c[i] for c, i in zip(reps, idx)], axis=1).astype(np.float32),
        ]
    )


@pytest.mark.parametrize("steps", list(_scalers()))
@pytest.mark.parametrize("kind", ["rf", "gb", "ada", "hgb"])
@pytest.mark.parametrize("dataset", ["diabetes", "seeds"])
def test_pipeline_matches_onnxruntime(steps, kind, dataset):
    """Raw features, the transforms folded: the IR labels the training rows, random
    points and (random) cell representatives of its raw-input domain as onnxruntime
    labels the exported pipeline."""
    X, y, _ = zoo.load_dataset(dataset)
    X = X.astype(np.float32)
    if kind == "hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier

        final = HistGradientBoostingClassifier(max_iter=10, max_depth=3, random_state=0)
    else:
        final = zoo.make_model(kind, 10, 3 if kind != "ada" else 2, 0)
    _, model = bm.pipeline(X, y, _scalers()[steps], final)
    ens, info = ensemble_from_model(model)
    assert ens.input_folding is not None
    assert len(ens.input_folding.ops) == len(_scalers()[steps])
    P = _points(ens, X)
    assert list(ens.predict(P)) == list(_ort(model, P))
    # the boundaries, as onnxruntime computes the transform alone: x <= raw holds exactly
    # when transform(x) <= threshold, on both sides of every boundary
    prefix = find_prefix(model)
    sess = session(prefix_model(model, prefix).SerializeToString())
    for s in ens.input_folding.splits:
        assert s.how == "same"  # these scalers increase
        pts = np.zeros((2, X.shape[1]), np.float32)
        pts[:, s.feature] = [s.raw, next_float32(s.raw)]
        y = sess.run(None, {info.input_name: pts})[0][:, s.feature]
        assert list(y <= np.float32(s.threshold)) == [True, False]


@pytest.mark.parametrize("n_classes", [2, 3])
def test_pipeline_every_cell_small(n_classes):
    from sklearn.preprocessing import StandardScaler

    for seed in range(3):
        X, y = small_problem(seed, n_features=3, n_classes=n_classes)
        _, model = bm.pipeline(X, y, [StandardScaler()], zoo.make_model("gb", 5, 2, seed))
        ens, _ = ensemble_from_model(model)
        grid = np.array(list(itertools.product(*build_domain(ens.trees, 3).reps)), np.float32)
        assert list(ens.predict(grid)) == list(_ort(model, grid))


def _scaled_stump(offset, scale, threshold=0.5, mode="BRANCH_LEQ"):
    """Scaler(offset, scale) -> one stump TreeEnsembleClassifier on x0 (two classes)."""
    model = tec_model([0, 1, 0, 1], [0.9, 0.1, 0.2, 0.8], modes=(mode,), threshold=threshold)
    g = model.graph
    g.node.insert(
        0,
        helper.make_node(
            "Scaler", ["X"], ["scaled"], domain="ai.onnx.ml", offset=offset, scale=scale
        ),
    )
    g.node[1].input[0] = "scaled"
    return model


@pytest.mark.parametrize("scale", [3.0, -3.0, 1e-30, -7.5e12])
@pytest.mark.parametrize("mode", ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GT", "BRANCH_GTE"])
def test_scaler_boundaries_on_both_sides(scale, mode):
    """Hand-made Scalers, increasing and decreasing (children swapped): onnxruntime's labels
    of the float32 values around the folded boundary are the IR's."""
    model = _scaled_stump([0.1], [scale], threshold=0.3, mode=mode)
    ens, _ = ensemble_from_model(model)
    (s,) = ens.input_folding.splits
    assert s.how == ("same" if scale > 0 else "swapped")
    k = float_key(np.float32(s.raw))
    pts = key_float(np.arange(k - 3, k + 4))[:, None]
    pts = np.vstack([pts, [[-np.inf], [np.inf], [0.0], [-0.0]]]).astype(np.float32)
    assert list(ens.predict(pts)) == list(_ort(model, pts))
    assert ens.trees[0].threshold[0] == np.float32(s.raw)


def test_a_split_only_minus_inf_reaches_is_rejected():
    """A tiny scale maps every finite input above a threshold far below zero: only -inf
    goes left, which the IR's x <= t split cannot say with a finite t."""
    with pytest.raises(UnsupportedModel, match="only for x = -inf"):
        ensemble_from_model(_scaled_stump([0.0], [1e-30], threshold=-1e9))


@pytest.mark.parametrize(
    "offset,scale,needle",
    [
        ([0.0], [0.0], "zero scale"),
        ([float("inf")], [1.0], "non-finite"),
        ([0.0, 1.0], [1.0], "offset and scale"),
    ],
)
def test_scalers_that_cannot_be_folded_are_rejected(offset, scale, needle):
    with pytest.raises(UnsupportedModel, match=needle):
        ensemble_from_model(_scaled_stump(offset, scale))


def test_minmax_scaler_normalizer_and_number_imputer_are_rejected_with_advice():
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import MinMaxScaler, Normalizer

    X, y = small_problem(0, n_features=3, n_classes=2)
    rf = zoo.make_model("rf", 3, 2, 0)
    cases = [
        ([MinMaxScaler()], ["Mul", "MinMaxScaler", "StandardScaler"]),
        ([Normalizer()], ["Normalizer", "export the final estimator alone"]),
        ([SimpleImputer(missing_values=0.0)], ["Imputer", "replaced_value_float 0.0"]),
    ]
    for steps, needles in cases:
        _, model = bm.pipeline(X, y, steps, rf)
        with pytest.raises(UnsupportedModel) as e:
            ensemble_from_model(model)
        msg = str(e.value)
        assert "\n" not in msg
        for needle in needles:
            assert needle in msg, (needle, msg)


def test_transformed_input_read_by_anything_else_is_rejected():
    model = _scaled_stump([0.0], [2.0])
    model.graph.node.append(helper.make_node("Identity", ["scaled"], ["leak"]))
    model.graph.output.append(helper.make_tensor_value_info("leak", TensorProto.FLOAT, None))
    with pytest.raises(UnsupportedModel, match="read by 2 nodes"):
        ensemble_from_model(model)


def test_compressed_pipeline_reads_the_raw_input(tmp_path):
    """compress a StandardScaler pipeline: the certificate records the folding, the
    compressed model has no Scaler and reads the raw input under the original's name,
    and verify (fresh proof, onnxruntime replay of the data and 2,000 probes) agrees."""
    from sklearn.preprocessing import StandardScaler

    from pace_cert.app import run_compress
    from pace_cert.cert.verify import run_verify
    from pace_cert.settings import CompressConfig

    X, y, names = zoo.load_dataset("seeds")
    X = X.astype(np.float32).astype(np.float64)
    _, model = bm.pipeline(
        X.astype(np.float32), y, [StandardScaler()], zoo.make_model("rf", 10, 2, 0)
    )
    (tmp_path / "model.onnx").write_bytes(model.SerializeToString())
    zoo.write_csv(tmp_path / "train.csv", X, y, names)
    cfg = CompressConfig.of(mode="prune", eta=0.1, time_limit=60, threads=2)
    res = run_compress(tmp_path / "model.onnx", tmp_path / "train.csv", tmp_path / "out", cfg)
    assert res.exit_code == 0
    comp = onnx.load(tmp_path / "out" / "compressed.onnx")
    # labels 0..K-1: ArgMax's index is the label (no Gather)
    assert [n.op_type for n in comp.graph.node] == ["TreeEnsembleRegressor", "ArgMax"]
    assert comp.graph.input[0].name == model.graph.input[0].name
    assert comp.graph.node[0].input[0] == comp.graph.input[0].name
    cert = json.loads((tmp_path / "out" / "certificate.json").read_text())
    fold = cert["original"]["input_transform"]
    assert fold["ops"] == ["Scaler((x - offset) * scale)"] and fold["folded"]
    assert cert["compressed"]["input_transform"] is None
    rep = run_verify(
        tmp_path / "model.onnx",
        tmp_path / "out" / "compressed.onnx",
        tmp_path / "out" / "certificate.json",
        data_path=tmp_path / "train.csv",
        probe=2000,
    )
    assert rep.verified, rep.to_json()
    # a certificate stating another boundary is refuted
    bad = copy.deepcopy(cert)
    bad["original"]["input_transform"]["folded"][0]["raw_threshold"] += 1.0
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    rep = run_verify(
        tmp_path / "model.onnx", tmp_path / "out" / "compressed.onnx", tmp_path / "bad.json"
    )
    assert not rep.verified and rep.exit_code == 1
    assert "original.input_transform" in json.dumps(rep.to_json())
    ens, _ = ensemble_from_model(comp)
    P = _points(ens, X.astype(np.float32))
    assert np.mean(ens.predict(P) == _ort(comp, P)) == 1.0


def test_lightgbm_behind_a_scaler_in_a_skl2onnx_pipeline():
    """skl2onnx converts a Pipeline ending in LightGBM through onnxmltools' registered
    converter: the Scaler is folded and the classifier read as LightGBM."""
    for m in ("lightgbm", "onnxmltools"):
        pytest.importorskip(m, reason=f"{m} is not installed (pip install -e '.[boosters]')")
    from lightgbm import LGBMClassifier
    from onnxmltools.convert.lightgbm.operator_converters.LightGbm import convert_lightgbm
    from skl2onnx import to_onnx, update_registered_converter
    from skl2onnx.common.shape_calculator import calculate_linear_classifier_output_shapes
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    update_registered_converter(
        LGBMClassifier,
        "LightGbmLGBMClassifier",
        calculate_linear_classifier_output_shapes,
        convert_lightgbm,
        options={"nocl": [True, False], "zipmap": [True, False, "columns"]},
    )
    X, y, _ = zoo.load_dataset("seeds")
    X = X.astype(np.float32)
    final = LGBMClassifier(n_estimators=10, max_depth=3, verbose=-1, n_jobs=1)
    p = make_pipeline(StandardScaler(), final).fit(X, y)
    model = to_onnx(
        p, X[:1], options={id(final): {"zipmap": False}}, target_opset={"": 17, "ai.onnx.ml": 3}
    )
    ens, _ = ensemble_from_model(model)
    assert ens.pattern == "onnxmltools-lightgbm/argmax" and ens.input_folding is not None
    P = _points(ens, X)
    assert list(ens.predict(P)) == list(_ort(model, P))


@pytest.mark.parametrize(
    "kind, own, admitted",
    [
        ("rf", "RandomForestClassifier", "RandomForestClassifier, ExtraTreesClassifier or"),
        ("et", "ExtraTreesClassifier", "RandomForestClassifier, ExtraTreesClassifier or"),
        ("gb", "GradientBoostingClassifier", "GradientBoostingClassifier or HistGradient"),
    ],
)
def test_a_family_is_named_in_scikit_learns_class_names(kind, own, admitted):
    """The same forest is a RandomForestClassifier alone and, behind a Scaler where
    skl2onnx does not name the estimator, one of the classes its rule admits: never
    another word ("forest or decision tree") for the same thing (issue 47, item 5)."""
    from skl2onnx import to_onnx
    from sklearn.preprocessing import StandardScaler

    from pace_cert.model.ensemble import family_of

    X, y, _ = zoo.load_dataset("seeds")
    X = X.astype(np.float32)
    alone = zoo.make_model(kind, 3, 2, 0).fit(X, y)
    ens, _ = ensemble_from_model(to_onnx(alone, X[:1]))
    assert family_of(ens) == f"scikit-learn {own} (skl2onnx)"
    _, model = bm.pipeline(X, y, [StandardScaler()], zoo.make_model(kind, 3, 2, 0))
    ens, _ = ensemble_from_model(model)
    assert family_of(ens).startswith(f"scikit-learn Pipeline ending in a {admitted}")
    assert "forest or decision tree" not in family_of(ens)
