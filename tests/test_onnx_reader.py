"""The IR's labels equal onnxruntime's on every supported exporter pattern (SPEC §3)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pace_cert.domain import build_domain
from pace_cert.onnx_reader import UnsupportedModel, ensemble_from_model
from pace_cert.runtime import labels, session

from .helpers import small_problem, tec_model, trained


def _agreement_points(ens, X, seed=0):
    rng = np.random.default_rng(seed)
    lo, hi = X.min(axis=0) - 2, X.max(axis=0) + 2
    rand = rng.uniform(lo, hi, size=(3000, X.shape[1])).astype(np.float32)
    dom = build_domain(ens.trees, ens.n_features)
    cells = [r for r in dom.reps]
    n_cells = int(np.prod([len(c) for c in cells]))
    pts = [X, rand]
    if n_cells <= 50_000:
        pts.append(np.array(list(itertools.product(*cells)), np.float32))
    else:  # random cell representatives
        idx = [rng.integers(0, len(c), 5000) for c in cells]
        pts.append(np.stack([c[i] for c, i in zip(cells, idx)], axis=1).astype(np.float32))
    return np.vstack(pts)


@pytest.mark.parametrize("kind", ["rf", "et", "ada", "gb"])
@pytest.mark.parametrize("dataset", ["compas", "seeds"])  # binary / 3 classes
@pytest.mark.parametrize("depth", [1, 3])
def test_ir_matches_onnxruntime_on_bundled(kind, dataset, depth):
    _, model, X, _ = trained(kind, dataset, 15, depth)
    ens, _ = ensemble_from_model(model)
    P = _agreement_points(ens, X)
    ort_labels = labels(session(model.SerializeToString()), P)
    assert np.array_equal(ens.predict(P), ort_labels)


@pytest.mark.parametrize("kind", ["rf", "ada", "gb"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_ir_matches_onnxruntime_every_cell_small(kind, n_classes):
    """Every cell representative of small models (exhaustive)."""
    for seed in range(3):
        X, y = small_problem(seed, n_features=3, n_classes=n_classes)
        from pace_cert import zoo

        m = zoo.make_model(kind, 7, 2, seed).fit(X, y)
        model = zoo.export_onnx(m, 3)
        ens, _ = ensemble_from_model(model)
        dom = build_domain(ens.trees, 3)
        grid = np.array(list(itertools.product(*dom.reps)), np.float32)
        assert np.array_equal(ens.predict(grid), labels(session(model.SerializeToString()), grid))


def test_string_labels_rf_and_adaboost():
    for kind in ("rf", "ada"):
        _, model, X, _ = trained(kind, "seeds", 10, 2, labels=np.array(["kama", "rosa", "cana"]))
        ens, info = ensemble_from_model(model)
        assert info.label_is_string
        P = _agreement_points(ens, X)
        assert list(ens.predict(P)) == list(labels(session(model.SerializeToString()), P))


# --- onnxruntime's binary quirks, measured on 1.32 and pinned here ---------------------

GRID = np.array([[-1.0], [0.0], [1.0]], np.float32)


@pytest.mark.parametrize(
    "class_ids,weights,base,expected_rule",
    [
        ([0, 0], [0.4, 0.6], None, "binary_threshold_0.5"),  # all weights >= 0: s > 0.5
        ([0, 0], [0.5, 0.50000006], None, "binary_threshold_0.5"),  # tie at 0.5 -> class 0
        ([0, 0], [-0.1, 0.1], None, "binary_threshold_0"),  # a negative weight: s > 0
        ([0, 0], [0.3, 0.6], [0.3], "binary_threshold_0.5"),  # base added before the test
        ([0, 0], [0.3, -0.6], [0.2], "binary_threshold_0"),
        ([0, 1, 0, 1], [0.9, 0.1, 0.1, 0.9], None, "binary_class1_positive"),  # both named
        ([0, 1, 0, 1], [0.9, -5.0, 0.1, 0.2], None, "binary_class1_positive"),
    ],
)
def test_binary_quirks(class_ids, weights, base, expected_rule):
    model = tec_model(class_ids, weights, base=base)
    ens, _ = ensemble_from_model(model)
    assert ens.pattern.endswith(expected_rule)
    assert np.array_equal(ens.predict(GRID), labels(session(model.SerializeToString()), GRID))


@pytest.mark.parametrize("mode", ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GT", "BRANCH_GTE"])
def test_split_modes_at_the_threshold(mode):
    th = np.float32(0.3)  # not exactly representable: the float32 value decides
    model = tec_model([0, 0], [0.2, 0.9], modes=(mode,), threshold=float(th))
    ens, _ = ensemble_from_model(model)
    pts = np.array(
        [[np.nextafter(th, -np.inf)], [th], [np.nextafter(th, np.inf)], [-5], [5]], np.float32
    )
    assert np.array_equal(ens.predict(pts), labels(session(model.SerializeToString()), pts))


def test_rejects_what_it_cannot_model():
    with pytest.raises(UnsupportedModel):
        ensemble_from_model(tec_model([0, 0], [0.4, 0.6], modes=("BRANCH_EQ",)))
    with pytest.raises(UnsupportedModel):  # two base values on a single score column
        ensemble_from_model(tec_model([0, 0], [0.4, 0.6], base=[0.1, 0.2]))
