"""The forgeries of issue #50, each pinned: hand-edited certificates that verify used
to accept (or crash on), and the compressor's statements that were not true.

1. a subnormal or huge combo weight made the float64 re-addition underflow or overflow;
2. a schema downgrade switched the learner checks off while minimality trusted them;
3. contradictory claims (bound above a certified pruning's size) went unnoticed;
4. a pruning point of the wrong width crashed verify (exit 4);
5. a model of new trees was called "minimal among prunings";
6. "(the minimum on them)" was said without a strict check.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from pace_cert.cert.certificate import Certificate
from pace_cert.cert.pruning_check import (
    cut_problem,
    meets_rows_exactly,
    positive_trees,
)
from pace_cert.cert.words import minimal_pruning, pruning_bound_lines, pruning_of
from pace_cert.master.pruning_bound import strictly_met
from pace_cert.plumbing.budget import Budget

from .test_end_to_end import copy_run, edit_cert, invoke, no_internal_error

# ------------------------------------------------------------------ 1: exact re-addition


def test_a_subnormal_weight_does_not_underflow_a_positive_coefficient():
    """5e-324 * 1 rounds to 0 in float64 products only when the product underflows; the
    exact sum is 5e-324 > 0, so the tree must stay outside no cut."""
    H = np.zeros((2, 1, 2))
    H[0, 0] = [1.0, 0.0]  # point 0 (label 0) vs class 1: +1
    H[1, 0] = [0.0, 0.0]  # point 1 (label 1) vs class 0: 0
    y0 = np.array([0, 1])
    walk = ((0, 1), (1, 0))
    assert positive_trees(H, y0, ((walk, 5e-324),)) == [0]
    assert positive_trees(H, y0, ((walk, 2.0**-1060),)) == [0]
    assert cut_problem(H, y0, [], ((walk, 5e-324),)) is not None  # the forged empty cut


def test_huge_weights_that_overflow_are_added_exactly():
    """1.7e308 on rows of +1, +1, -1, -1 and +2**-30: numpy's pairwise float64 sum
    reaches inf + (-inf) = NaN, which once counted as <= 0; the exact sum is
    1.7e308 * 2**-30 > 0."""
    vals = [1.0, 1.0, -1.0, -1.0, 2.0**-30]
    n = len(vals)
    H = np.zeros((2 * n, 1, 2))
    rows = []
    for j, v in enumerate(vals):
        H[2 * j, 0] = [v, 0.0]  # label 0 beats class 1 by v
        H[2 * j + 1, 0] = [0.0, 0.0]  # label 1 (y0 below): closes the walk with 0
        rows += [(2 * j, 1), (2 * j + 1, 0)]
    y0 = np.tile([0, 1], n)
    combos = ((tuple(rows), 1.7e308),)
    assert positive_trees(H, y0, combos) == [0]
    assert cut_problem(H, y0, [0], combos) is None
    H[-2, 0] = [-(2.0**-30), 0.0]  # now the exact sum is -1.7e308 * 2**-30 <= 0
    assert positive_trees(H, y0, combos) == []


@pytest.mark.parametrize("w", [float("nan"), float("inf"), -1e-300, -5e-324])
def test_non_finite_or_negative_weights_are_malformed(w):
    H = np.zeros((2, 1, 2))
    y0 = np.array([0, 1])
    assert cut_problem(H, y0, [0], ((((0, 1), (1, 0)), w),)) is not None


# ------------------------------------------------------------------ verify, end to end


@pytest.fixture(scope="module")
def prune(compress_run):
    r = compress_run("compas", "rf", 20, 2, "--mode", "prune", "--eta", "0.1", "--delta", "0.1")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return r


@pytest.fixture(scope="module")
def generated(compress_run):
    """AdaBoost, mode pace: three new trees, a pruning bound of 5."""
    r = compress_run("compas", "ada", 10, 2, "--eta", "0.1", "--delta", "0.1")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return r


def _verify(run, tmp_path, edit):
    comp, cert, _ = copy_run(run, tmp_path)
    edit_cert(cert, edit)
    res = invoke("verify", run.model, comp, cert)
    no_internal_error(res)
    return res


def _pb(d):
    return d["summary"]["pruning_bound"]


def _forged_empty_cut(weight):
    def edit(d):
        cut = _pb(d)["cuts"][0]
        for c in cut["combos"]:
            c["weight"] = weight
        cut["keep_one_of"] = []

    return edit


@pytest.mark.parametrize("weight", [5e-324, 1.7e308])
def test_a_forged_empty_cut_is_refuted(prune, tmp_path, weight):
    res = _verify(prune, tmp_path, _forged_empty_cut(weight))
    assert res.exit_code == 1 and "pruning bound: cut 0" in res.stdout, res.output


def test_an_underflowing_weight_cannot_hide_a_tree(prune, tmp_path):
    """Every combo of a cut at 5e-324 and one tree dropped from keep_one_of: exact
    re-addition finds the dropped tree's coefficient positive."""

    def edit(d):
        cut = _pb(d)["cuts"][0]
        for c in cut["combos"]:
            c["weight"] = 5e-324
        cut["keep_one_of"] = cut["keep_one_of"][1:]

    res = _verify(prune, tmp_path, edit)
    assert res.exit_code == 1 and "outside the cut" in res.stdout, res.output


# ------------------------------------------------------------------ 2: schema downgrade


def _downgrade(relabel_fields: bool):
    def edit(d):
        d["schema_version"] = "1.2"
        for lr in d["learners"]:
            lr["origin"] = "original"
            if relabel_fields:
                lr["original_trees"] = [lr["index"]]
            else:
                lr.pop("original_trees", None)
                lr.pop("merged", None)

    return edit


@pytest.mark.parametrize("relabel_fields", [True, False])
def test_a_schema_downgrade_does_not_switch_checks_off(generated, tmp_path, relabel_fields):
    res = _verify(generated, tmp_path, _downgrade(relabel_fields))
    assert res.exit_code == 1, res.output
    assert "minimal among prunings" not in res.stdout
    assert "learners" in res.stdout or "pruning bound" in res.stdout, res.stdout


# ------------------------------------------------------------------ 3: contradictions


def test_a_bound_above_a_certified_pruning_is_refuted(prune, tmp_path):
    res = _verify(prune, tmp_path, lambda d: _pb(d).update(value=_pb(d)["value"] + 1))
    assert res.exit_code == 1 and "contradict" in res.stdout, res.output
    assert "minimal among prunings" not in res.stdout


def test_minimality_needs_the_bound_to_equal_the_size(prune):
    cert = Certificate.model_validate_json((prune.out / "certificate.json").read_text())
    kept = pruning_of(cert)
    assert kept is not None and minimal_pruning(cert, kept)
    cert.summary.pruning_bound.value += 1  # the pruning is below its own bound
    assert not minimal_pruning(cert, kept)
    assert not minimal_pruning(cert, None)  # not a pruning


# ------------------------------------------------------------------ 4: malformed points


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: _pb(d)["points"][0].append(0.0),
        lambda d: _pb(d)["points"].__setitem__(0, []),
        lambda d: _pb(d)["labels"].pop(),
        lambda d: _pb(d)["points"][0].__setitem__(0, 1e300),
    ],
)
def test_a_malformed_point_is_refuted_with_the_field_named(prune, tmp_path, edit):
    res = _verify(prune, tmp_path, edit)
    assert res.exit_code in (1, 3), res.output
    assert "pruning" in res.output, res.output


# ------------------------------------------------------------------ 5: non-prunings


def test_new_trees_are_not_called_minimal_among_prunings(generated, tmp_path):
    """Three new trees under a pruning bound of 5: compress, verify and the report say
    "pruning lower bound", never "minimal among prunings"."""
    cert = Certificate.model_validate_json((generated.out / "certificate.json").read_text())
    pb = cert.summary.pruning_bound
    assert pb is not None and cert.summary.trees_after < pb.value
    assert pruning_of(cert) is None
    (line,) = pruning_bound_lines(cert)
    assert line.startswith("pruning lower bound"), line
    assert "minimal among prunings" not in generated.stdout
    comp, cert_path, _ = copy_run(generated, tmp_path)
    res = invoke("verify", generated.model, comp, cert_path)
    assert res.exit_code == 0, res.output
    assert "minimal among prunings" not in res.stdout
    html = tmp_path / "r.html"
    assert invoke("report", cert_path, "--out", html).exit_code == 0
    assert "Among prunings of the original (keeping some of its trees) it is minimal" not in (
        html.read_text()
    )


# ------------------------------------------------------------------ 6: the minimum on them


def test_a_zero_margin_is_not_meeting_the_points():
    """One tree, two points: the best margin is exactly 0 (a tie), so the tree does not
    meet them strictly; a second tree that separates them does."""
    H = np.zeros((2, 2, 2))
    H[:, 0] = [1.0, 0.0]  # tree 0 votes class 0 at both points
    H[0, 1], H[1, 1] = [1.0, 0.0], [0.0, 1.0]  # tree 1 separates them
    y0 = np.array([0, 1])
    budget = Budget.seconds(30)
    assert strictly_met(H, y0, np.array([0]), budget) is None
    assert strictly_met(H, y0, np.array([1]), budget) == 1
    assert not meets_rows_exactly(H, y0, [0], np.array([1.0]), np.array([0.0, 0.5]))
    assert meets_rows_exactly(H, y0, [1], np.array([1.0]), np.array([0.0, 0.0]))
    assert not meets_rows_exactly(H, y0, [1], np.array([np.nan]), np.array([0.0, 0.0]))


def test_the_minimum_on_them_is_true_when_stated(generated):
    """A stated ``meets_points`` equal to the bound: some pruning of that many trees
    meets the certificate's points strictly (searched by brute force here)."""
    import itertools

    from pace_cert.cert.pruning_check import leaf_table
    from pace_cert.model.onnx_reader import read_ensemble

    from .test_pruning_bound import strictly_feasible

    d = json.loads((generated.out / "certificate.json").read_text())
    pb = _pb(d)
    if pb["meets_points"] != pb["value"]:
        pytest.skip("the run states no minimum on the points")
    ens, _ = read_ensemble(generated.model)
    X = np.array(pb["points"], np.float32)
    H, y0 = leaf_table(ens.trees, X), ens.predict_index(X)
    assert any(
        strictly_feasible(H, y0, S) for S in itertools.combinations(range(ens.n_trees), pb["value"])
    )
