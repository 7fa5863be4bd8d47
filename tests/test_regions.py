"""Faithfulness regions η and δ (SPEC §4): every disagreement lies outside the region.

Points are drawn at random and at cell representatives; margin and plausibility are
computed independently from the original IR and the plausibility artifact (not from the
oracle), and onnxruntime labels both written models.
"""

from __future__ import annotations

import numpy as np
import pytest

from pace_cert import zoo
from pace_cert.app import run_compress
from pace_cert.cert.certificate import Certificate
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.model.runtime import labels, session
from pace_cert.region.plausibility import load_artifact, plausibility_scores
from pace_cert.settings import CompressConfig

from .helpers import trained


def _write(tmp_path, kind, dataset, n, depth):
    _, model, X, y = trained(kind, dataset, n, depth)
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    names = [f"f{i}" for i in range(X.shape[1])]
    zoo.write_csv(tmp_path / "train.csv", X, y, names)
    return path, X


def _independent_margin(ens, X):
    S = ens.scores(X)
    top = np.sort(S, axis=1)
    return (top[:, -1] - top[:, -2]) / ens.margin_scale


def _points(X, ens, rng, n=4000):
    from pace_cert.region.domain import build_domain

    dom = build_domain(ens.trees, ens.n_features)
    idx = [rng.integers(0, len(r), n) for r in dom.reps]
    reps = np.stack([r[i] for r, i in zip(dom.reps, idx)], axis=1).astype(np.float32)
    lo, hi = X.min(axis=0), X.max(axis=0)
    rand = rng.uniform(lo - 1, hi + 1, size=(n, X.shape[1])).astype(np.float32)
    binary = np.all((X == 0) | (X == 1), axis=0)
    integer = np.all(np.round(X) == X, axis=0) & ~binary
    for P in (reps, rand):  # respect the inferred binary and integer domain
        P[:, binary] = np.round(np.clip(P[:, binary], 0, 1))
        P[:, integer] = np.round(P[:, integer])
    return np.vstack([X, reps, rand])


FAST = dict(iforest_estimators=25, l0_time_limit=5.0)  # keeps the default suite quick


@pytest.mark.parametrize(
    "kind,dataset,n,depth,eta,delta",
    [
        pytest.param("rf", "compas", 30, 2, 0.1, 0.0, marks=pytest.mark.slow),
        ("rf", "compas", 30, 2, 0.0, 0.2),
        pytest.param("rf", "seeds", 10, 2, 0.2, 0.1, marks=pytest.mark.slow),
        ("ada", "cancer", 15, 1, 0.1, 0.1),
        pytest.param("rf", "seeds", 20, 2, 0.2, 0.1, marks=pytest.mark.slow),
        pytest.param("ada", "cancer", 30, 1, 0.05, 0.2, marks=pytest.mark.slow),
    ],
)
def test_disagreements_lie_outside_the_region(
    tmp_path, request, kind, dataset, n, depth, eta, delta
):
    path, X = _write(tmp_path, kind, dataset, n, depth)
    slow = request.node.get_closest_marker("slow") is not None
    cfg = CompressConfig.of(mode="prune", eta=eta, delta=delta, **({} if slow else FAST))
    res = run_compress(path, tmp_path / "train.csv", tmp_path / "out", cfg)
    assert res.exit_code == 0
    ens, _ = read_ensemble(path)
    P = _points(X, ens, np.random.default_rng(0))
    lo = labels(session(path.read_bytes()), P)
    lc = labels(session((tmp_path / "out" / "compressed.onnx").read_bytes()), P)
    inside = _independent_margin(ens, P) > eta
    if delta > 0:
        forest = load_artifact(tmp_path / "out" / "plausibility.json")
        inside &= plausibility_scores(forest, P) >= forest.delta_abs
    disagree = lo != lc
    assert not np.any(disagree & inside), "a disagreement inside the certified region"
    cert = Certificate.model_validate_json((tmp_path / "out" / "certificate.json").read_text())
    assert cert.region.eta == eta and cert.region.delta == delta
    assert cert.region.samples_kept + cert.region.samples_dropped == len(X)
    if eta > 0 or delta > 0:
        assert cert.summary.trees_after < cert.summary.trees_before


@pytest.mark.parametrize(
    "kind,dataset,n,depth",
    [
        pytest.param("rf", "compas", 20, 2, marks=pytest.mark.slow),  # a size property
        ("rf", "seeds", 15, 1),
        pytest.param("rf", "compas", 40, 2, marks=pytest.mark.slow),
        pytest.param("rf", "seeds", 30, 1, marks=pytest.mark.slow),
    ],
)
def test_relaxed_regions_never_need_more_trees(tmp_path, request, kind, dataset, n, depth):
    path, _ = _write(tmp_path, kind, dataset, n, depth)
    slow = request.node.get_closest_marker("slow") is not None
    sizes = {}
    for eta, delta in [(0.0, 0.0), (0.1, 0.0), (0.0, 0.1)]:
        out = tmp_path / f"out-{eta}-{delta}"
        cfg = CompressConfig.of(mode="prune", eta=eta, delta=delta, **({} if slow else FAST))
        res = run_compress(path, tmp_path / "train.csv", out, cfg)
        assert res.exit_code == 0
        sizes[(eta, delta)] = res.certificate.summary.trees_after
    assert sizes[(0.1, 0.0)] <= sizes[(0.0, 0.0)]
    assert sizes[(0.0, 0.1)] <= sizes[(0.0, 0.0)]
