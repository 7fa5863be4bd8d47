"""The pruning lower bound: sound by brute force, and verify refutes every tampering.

A pruning keeps a subset of the original trees with weights >= 0 and any class offsets.
``prove_pruning_bound`` claims no pruning of fewer than ``value`` trees gives every point
the original's label with a positive margin; the brute force below asks an independent
LP (SciPy's linprog) about every smaller subset.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy.optimize import linprog
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.ensemble import RandomForestClassifier

from pace_cert.cert.pruning_check import (
    cut_problem,
    hitting_bound,
    leaf_table,
    positive_trees,
)
from pace_cert.master.pruning_bound import circulation_combos, prove_pruning_bound
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.plumbing.budget import Budget

from .test_end_to_end import copy_run, edit_cert, invoke, no_internal_error


def strictly_feasible(H: np.ndarray, y0: np.ndarray, subset: tuple[int, ...]) -> bool:
    """Whether some w >= 0 on ``subset`` and offsets beta give every margin row a
    positive value: max rho s.t. rows >= rho, sum w = 1, rho <= 1; feasible iff rho > 0."""
    n, _T, K = H.shape
    S = list(subset)
    rows = []
    for i in range(n):
        for k in range(K):
            if k == y0[i]:
                continue
            b = np.zeros(K)
            b[y0[i]] += 1
            b[k] -= 1
            rows.append(np.r_[H[i, S, y0[i]] - H[i, S, k], b[1:], -1.0])
    A = np.array(rows)
    nv = len(S) + K - 1 + 1
    c = np.zeros(nv)
    c[-1] = -1.0
    bounds = [(0, None)] * len(S) + [(None, None)] * (K - 1) + [(None, 1.0)]
    A_eq = np.r_[np.ones(len(S)), np.zeros(K - 1), 0.0][None, :] if S else None
    res = linprog(c, A_ub=-A, b_ub=np.zeros(len(A)), A_eq=A_eq, b_eq=[1.0] if S else None,
                  bounds=bounds, method="highs")  # fmt: skip
    assert res.status == 0, res.message
    return -res.fun > 1e-9


def small_forest(dataset, n_trees: int, depth: int, rows: int, seed: int):
    data = dataset()
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(data.target), rows, replace=False)
    X = data.data[idx].astype(np.float32)
    rf = RandomForestClassifier(n_trees, max_depth=depth, random_state=seed).fit(
        X, data.target[idx]
    )
    return X, rf


@pytest.mark.parametrize(
    "dataset, n_trees, seed",
    [(load_breast_cancer, 7, 0), (load_breast_cancer, 8, 1), (load_wine, 7, 0)],
)
def test_the_bound_is_sound_and_exact_on_the_points(tmp_path, dataset, n_trees, seed):
    X, rf = small_forest(dataset, n_trees, 2, 60, seed)
    from skl2onnx import to_onnx

    path = tmp_path / "m.onnx"
    path.write_bytes(to_onnx(rf, X[:1], options={id(rf): {"zipmap": False}}).SerializeToString())
    ens, _ = read_ensemble(path)
    y0 = ens.predict_index(X)
    H = leaf_table(ens.trees, X)
    res = prove_pruning_bound(H, y0, Budget.seconds(60))
    assert res.meets == res.value  # small enough to finish: the minimum on the points
    for cut in res.cuts:  # each cut is the certificate verify re-checks
        assert cut_problem(H, y0, cut.keep_one_of, list(cut.combos)) is None
    assert hitting_bound(n_trees, [c.keep_one_of for c in res.cuts], res.value, 30) == "proved"
    # brute force: no smaller subset meets the points; one of size value does
    for size in range(res.value):
        for S in itertools.combinations(range(n_trees), size):
            assert not strictly_feasible(H, y0, S), (S, res.value)
    assert any(
        strictly_feasible(H, y0, S) for S in itertools.combinations(range(n_trees), res.value)
    )


def test_hitting_bound_proves_and_refutes():
    cuts = [(0, 1), (2, 3), (1, 2)]
    assert hitting_bound(4, cuts, 2, 10) == "proved"  # {1, 2} hits all: 2 needed
    assert hitting_bound(4, cuts, 3, 10) == "refuted"
    assert hitting_bound(4, [(0,), (1,), (2,)], 3, 10) == "proved"


def test_circulations_are_closed_walks():
    # three classes: edges (src -> dst) carrying a balanced flow of two cycles
    src = np.array([0, 1, 2, 1, 0])
    dst = np.array([1, 2, 0, 0, 1])
    flow = np.array([1.5, 1.0, 1.0, 0.5, 0.0])
    walks = circulation_combos(flow, src, dst)
    total = np.zeros(5)
    for edges, w in walks:
        bal = np.zeros(3)
        for e in edges:
            bal[dst[e]] += 1
            bal[src[e]] -= 1
        assert not bal.any() and w > 0
        total[edges] += w
    assert np.allclose(total, flow)


def test_a_positive_coefficient_is_caught_exactly():
    """Rows that cancel to 2**-60 in rationals but to 0 in float64 are not <= 0."""
    H = np.zeros((2, 1, 2))
    H[0, 0] = [1.0 + 2.0**-52, 0.0]  # point 0 (label 0) vs class 1: +1 + 2^-52
    H[1, 0] = [0.0, 1.0]  # point 1 (label 1) vs class 0: +1
    y0 = np.array([0, 1])
    ok = ((((0, 1), (1, 0)), 1.0),)
    assert positive_trees(H, y0, ok) == [0]  # both rows favour the tree: it must stay
    H[1, 0] = [1.0 + 2.0**-52 + 2.0**-51, 0.0]  # now row 1 is -(1 + 3 * 2^-52)
    H[0, 0] = [1.0 + 2.0**-51, 0.0]
    # 1 + 2^-51 - 1 - 3 * 2^-52 = -2^-52 <= 0
    assert positive_trees(H, y0, ok) == []
    H[0, 0] = [1.0 + 2.0**-50, 0.0]  # 2^-50 - 3 * 2^-52 = 2^-52 > 0
    assert positive_trees(H, y0, ok) == [0]


# ------------------------------------------------------------------ verify


@pytest.fixture(scope="module")
def run(compress_run):
    r = compress_run("compas", "rf", 20, 2, "--mode", "prune", "--eta", "0.1", "--delta", "0.1")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return r


def _pb(d):
    return d["summary"]["pruning_bound"]


def _point_out_of_region(d):
    pb = _pb(d)
    used = pb["cuts"][0]["combos"][0]["rows"][0][0]
    pb["points"][used] = [0.5] * len(pb["points"][used])  # binned features: off the grid


def _negative_multiplier(d):
    _pb(d)["cuts"][0]["combos"][0]["weight"] = -1.0


def _bound_raised(d):
    _pb(d)["value"] += 1


def _relabelled_point(d):
    pb = _pb(d)
    classes = d["original"]["classes"]
    pb["labels"][0] = next(c for c in classes if c != pb["labels"][0])


def _open_walk(d):
    combo = _pb(d)["cuts"][0]["combos"][0]
    combo["rows"] = combo["rows"][:1]


def _tree_left_out_of_a_cut(d):
    cut = _pb(d)["cuts"][0]
    cut["keep_one_of"] = cut["keep_one_of"][1:]


def test_the_run_states_a_bound_verify_checks(run, tmp_path):
    comp, cert, _ = copy_run(run, tmp_path)
    pb = _pb(json.loads(cert.read_text()))
    assert pb is not None and pb["value"] >= 1 and pb["cuts"]
    res = invoke("verify", run.model, comp, cert, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    claim = next(c for c in out["claims"] if c["key"] == "size_lower_bound.pruning")
    assert claim["status"] == "checked"
    assert out["pruning_bound"] == pb["value"]


@pytest.mark.parametrize(
    "edit, why",
    [
        (_point_out_of_region, "outside the region"),
        (_negative_multiplier, "must be finite and >= 0"),
        (_bound_raised, "the two claims contradict each other"),
        (_relabelled_point, "the original labels point 0"),
        (_open_walk, "closed walk"),
        (_tree_left_out_of_a_cut, "outside the cut"),
    ],
)
def test_a_tampered_pruning_bound_is_refuted(run, tmp_path, edit, why):
    comp, cert, _ = copy_run(run, tmp_path)
    edit_cert(cert, edit)
    res = invoke("verify", run.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code == 1, res.output
    assert res.stdout.startswith("refuted:") and why in res.stdout, res.stdout


def test_a_changed_multiplier_is_refuted(run, tmp_path):
    """Scale one combo's weight: some tree outside its cut then gets a positive
    coefficient (found here with the checker; verify must refute the same edit)."""
    comp, cert, _ = copy_run(run, tmp_path)
    d = json.loads(cert.read_text())
    pb = _pb(d)
    ens, _ = read_ensemble(run.model)
    X = np.array(pb["points"], np.float32)
    y0, H = ens.predict_index(X), leaf_table(ens.trees, X)
    target = None
    for j, cut in enumerate(pb["cuts"]):
        for c, combo in enumerate(cut["combos"]):
            for factor in (1e3, 1e-3, 0.0):
                combos = [(cb["rows"], cb["weight"]) for cb in cut["combos"]]
                combos[c] = (combo["rows"], combo["weight"] * factor)
                if cut_problem(H, y0, cut["keep_one_of"], combos):
                    target = (j, c, factor)
                    break
            if target:
                break
        if target:
            break
    assert target is not None
    j, c, factor = target
    edit_cert(cert, lambda dd: _pb(dd)["cuts"][j]["combos"][c].update(
        weight=_pb(dd)["cuts"][j]["combos"][c]["weight"] * factor))  # fmt: skip
    res = invoke("verify", run.model, comp, cert)
    no_internal_error(res)
    assert res.exit_code == 1 and "pruning bound" in res.stdout, res.output
