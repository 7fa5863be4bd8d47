"""Property-based end-to-end soundness (issue 40; slow): hypothesis draws small random
ensembles of every supported family -- random forest, ExtraTrees, a decision tree,
gradient boosting (binary and three classes), AdaBoost -- and regions, compresses each
through the public use case, and replays every cell of the domain through onnxruntime
on both ONNX files: inside the certified region the labels are equal; an unchanged
original is the original's bytes; verify agrees with compress's status.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is a dev extra")
from hypothesis import HealthCheck, Phase, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pace_cert import zoo  # noqa: E402

from .helpers import small_problem  # noqa: E402

FAMILIES = ("rf", "et", "dt", "gb", "gb3", "ada")
MAX_CELLS = 200_000


def _fit(family: str, n: int, depth: int, seed: int, n_features: int):
    from sklearn.tree import DecisionTreeClassifier

    n_classes = 3 if family == "gb3" or (family in ("rf", "et", "dt") and seed % 2) else 2
    X, y = small_problem(seed, n_features=n_features, n_classes=n_classes, n_rows=120)
    if family == "dt":
        model = DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(X, y)
    else:
        model = zoo.make_model("gb" if family == "gb3" else family, n, depth, seed).fit(X, y)
    return X, y, zoo.export_onnx(model, n_features)


def _every_cell(cert, orig, comp, forest):
    from pace_cert.cert.claims import domain_arrays
    from pace_cert.region.domain import build_domain

    binary, integer, lower, upper = domain_arrays(cert["region"]["domain"], orig.n_features)
    trees = [*orig.trees, *comp.trees, *(forest.trees if forest else [])]
    dom = build_domain(trees, orig.n_features, binary, lower, upper, integer)
    reps = [dom.reps[i][dom.allowed(i)] for i in range(dom.n_features)]
    n = int(np.prod([len(r) for r in reps]))
    assert n <= MAX_CELLS, n
    grid = np.array(list(itertools.product(*reps)), np.float32).reshape(-1, orig.n_features)
    return dom, grid


@pytest.mark.slow
@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate, Phase.shrink],  # no slow "explain" phase
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    family=st.sampled_from(FAMILIES),
    n=st.integers(1, 6),
    depth=st.integers(1, 2),
    seed=st.integers(0, 10_000),
    n_features=st.integers(2, 3),
    eta=st.sampled_from([0.0, 0.1, 0.3]),
    delta=st.sampled_from([0.0, 0.0, 0.1]),
    mode=st.sampled_from(["prune", "pace"]),
    integer=st.sampled_from(["infer", "none"]),
)
def test_every_cell_agrees_inside_the_certified_region(
    tmp_path_factory, family, n, depth, seed, n_features, eta, delta, mode, integer
):
    from pace_cert.app import run_compress
    from pace_cert.cert.verify import run_verify
    from pace_cert.errors import InputError
    from pace_cert.model.onnx_reader import read_ensemble
    from pace_cert.model.runtime import labels, session
    from pace_cert.region.masks import region_mask
    from pace_cert.region.plausibility import load_artifact
    from pace_cert.settings import CompressConfig

    if delta > 0:  # the isolation forest's thresholds over the whole line: too many cells
        integer = "infer"
    d = tmp_path_factory.mktemp("prop")
    X, y, model = _fit(family, n, depth, seed, n_features)
    (d / "model.onnx").write_bytes(model.SerializeToString())
    zoo.write_csv(d / "train.csv", X, y, [f"f{i}" for i in range(n_features)])
    cfg = CompressConfig.of(
        mode=mode, eta=eta, delta=delta, integer=integer, threads=1, seed=0, time_limit=120
    )
    try:
        res = run_compress(d / "model.onnx", d / "train.csv", d / "out", cfg)
    except InputError as e:  # a region holding no training row: bad input, nothing written
        assert "no training row lies in the region" in str(e)
        assert not (d / "out").exists()
        event(f"{family}: empty region")
        return
    event(f"{family}: exit {res.exit_code}")
    out = d / "out"
    cert = json.loads((out / "certificate.json").read_text())
    orig_bytes, comp_bytes = (d / "model.onnx").read_bytes(), (out / "compressed.onnx").read_bytes()
    if res.exit_code == 2:
        assert comp_bytes == orig_bytes and cert["summary"]["status"] == "inconclusive"
    else:
        assert res.exit_code == 0 and cert["summary"]["certified"]
        assert cert["summary"]["trees_after"] < cert["summary"]["trees_before"]
    orig, _ = read_ensemble(d / "model.onnx")
    comp, _ = read_ensemble(out / "compressed.onnx")
    forest = load_artifact(out / "plausibility.json") if delta > 0 else None
    dom, grid = _every_cell(cert, orig, comp, forest)
    inside = region_mask(orig, cert["region"]["margin_threshold"], forest, grid, dom)
    lo, lc = labels(session(orig_bytes), grid), labels(session(comp_bytes), grid)
    bad = np.flatnonzero(inside & (lo != lc))
    assert len(bad) == 0, (grid[bad[:3]], lo[bad[:3]], lc[bad[:3]])
    rep = run_verify(d / "model.onnx", out / "compressed.onnx", out / "certificate.json", threads=1)
    assert rep.exit_code == res.exit_code, rep.message
    assert rep.verified == (res.exit_code == 0)
