"""Trees that share every split (``merge.py``): merging them keeps every prediction
(brute force over every cell, onnxruntime on the written ONNX), fold merges them in
every candidate, and the certificate says which learners each tree sums."""

from __future__ import annotations

import itertools
import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from pace_cert import zoo
from pace_cert.cli.main import app
from pace_cert.driver.phases.merge_original import merge_original, trimmed_size
from pace_cert.driver.phases.witness_bound import update_witness_bound
from pace_cert.driver.runner import compress
from pace_cert.learners import merge
from pace_cert.learners.pool import fold
from pace_cert.model.ensemble import Tree
from pace_cert.model.onnx_reader import ensemble_from_model
from pace_cert.model.onnx_writer import ensemble_to_onnx
from pace_cert.model.runtime import labels, session
from pace_cert.region.masks import region_mask
from pace_cert.settings import CompressConfig

from .helpers import run_state, small_problem, write_small_problem


def _stump(feature: int, threshold: float, left: list[float], right: list[float]) -> Tree:
    return Tree(
        np.array([feature, -1, -1]),
        np.array([threshold, 0, 0], np.float32),
        np.array([1, -1, -1]),
        np.array([2, -1, -1]),
        np.array([[0.0, 0.0], left, right]),
    )


def test_groups_are_exactly_the_trees_with_the_same_splits():
    a, b = _stump(0, 1.5, [1, 0], [0, 1]), _stump(0, 1.5, [0.2, 0.8], [0.9, 0.1])
    c = _stump(0, np.nextafter(np.float32(1.5), np.float32(2)), [1, 0], [0, 1])  # 1 ulp off
    d = _stump(1, 1.5, [1, 0], [0, 1])
    e = Tree(  # same root split as a, but a depth-2 shape
        np.array([0, 1, -1, -1, -1]),
        np.array([1.5, 0.5, 0, 0, 0], np.float32),
        np.array([1, 3, -1, -1, -1]),
        np.array([2, 4, -1, -1, -1]),
        np.zeros((5, 2)),
    )
    assert merge.group_by_structure([a, c, b, d, e, a]) == [[0, 2, 5], [1], [3], [4]]
    v = merge.merged_leaf_values([a, b], [2.0, 0.5], [0, 1])
    np.testing.assert_allclose(v, [[0, 0], [2.1, 0.4], [0.45, 2.05]])


def test_fold_merges_shared_splits_and_marks_a_group_with_a_new_learner_new():
    pool = [_stump(0, 1.5, [1, 0], [0, 1]), _stump(1, 0.5, [1, 0], [0, 1])]
    pool += [_stump(0, 1.5, [0.3, 0.7], [0.6, 0.4])]
    model, keep = fold(
        pool, np.array([1.0, 2.0, 3.0]), np.zeros(2), np.array([0, 1]),
        ["original", "original", "new"], 2, 0.0,
    )  # fmt: skip
    assert keep == [0, 1, 2] and model.n_trees == 2
    assert model.origin == ("new", "original")
    X = np.array(list(itertools.product([0, 1, 2], [0, 1])), np.float32)
    unmerged = sum(w * t.value[t.apply(X)] for w, t in zip([1.0, 2.0, 3.0], pool))
    np.testing.assert_allclose(model.scores(X), unmerged, rtol=1e-6)


CASES = [
    (seed, fam, depth) for seed in (0, 1, 2) for fam, depth in (("ada", 1), ("rf", 1), ("rf", 2))
]


@pytest.mark.parametrize("seed,family,depth", CASES)
def test_merged_original_agrees_on_every_cell_under_onnxruntime(seed, family, depth):
    """The merge phase's certified model, written to ONNX: onnxruntime's label equals
    the original ONNX's on every in-region cell of a small grid (brute force), and it
    has one tree per distinct split structure."""
    X, y = small_problem(seed, n_features=3, n_rows=150)
    onx = zoo.export_onnx(zoo.make_model(family, 16, depth, seed).fit(X, y), 3)
    original, info = ensemble_from_model(onx)
    p = run_state(original, X, CompressConfig.of(mode="prune", seed=0))
    groups = merge.group_by_structure(list(original.trees))
    res = merge_original(p, p.budget)
    if len(groups) == original.n_trees:
        assert not res.certified and res.rounds == 0
        return
    assert res.certified and res.model is not None
    assert res.model.n_trees == len(groups) < original.n_trees
    assert sorted(res.keep) == list(range(original.n_trees))
    reps = [p.domain.reps[i][p.domain.allowed(i)] for i in range(3)]
    grid = np.array(list(itertools.product(*reps)), np.float32)
    cells = grid[region_mask(original, p.region.margin, None, grid, p.domain)]
    got = labels(session(ensemble_to_onnx(res.model, info).SerializeToString()), cells)
    want = labels(session(onx.SerializeToString()), cells)
    np.testing.assert_array_equal(got, want)


def test_certificate_names_the_merged_trees_and_verifies(compress_run):
    """AdaBoost of 20 stumps on cancer: the merged original is the result; every
    original tree is in exactly one compressed tree's ``original_trees``, ``merged``
    counts them, and `verify` (onnxruntime replay of the training rows) accepts it."""
    from typer.testing import CliRunner

    from pace_cert.cli.main import app

    r = compress_run("cancer", "ada", 20, 1, "--mode", "prune")
    assert r.exit_code == 0, r.stdout + r.stderr
    cert = json.loads((r.out / "certificate.json").read_text())
    learners = cert["learners"]
    assert cert["summary"]["trees_after"] == len(learners) < 20
    named = sorted(i for lr in learners for i in lr["original_trees"])
    assert named == list(range(20))
    assert [lr["merged"] for lr in learners] == [len(lr["original_trees"]) for lr in learners]
    assert any(lr["merged"] > 1 for lr in learners)
    res = CliRunner().invoke(
        app,
        ["verify", str(r.model), str(r.out / "compressed.onnx"), str(r.out / "certificate.json"),
         "--data", str(r.data)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "learners: the 20 original trees the certificate names share every split" in res.output


@pytest.mark.parametrize(
    "edit,why",
    [
        ("swap", "does not share every split"),
        ("twice", "names original trees another tree names"),
        ("origin", "marked new but names only original trees"),
        ("drop", "entries for"),
    ],
)
def test_tampered_learners_are_refuted(compress_run, tmp_path, edit, why):
    """What ``learners`` says about merged trees is checked against the two models: a
    tree naming an original tree of another shape, an original tree named twice, a
    wrong origin or a missing entry makes `verify` refute the certificate (exit 1)."""
    r = compress_run("cancer", "ada", 20, 1, "--mode", "prune")
    out = tmp_path / "out"
    shutil.copytree(r.out, out)
    path = out / "certificate.json"
    cert = json.loads(path.read_text())
    lrs = cert["learners"]
    a = next(i for i, lr in enumerate(lrs) if lr["merged"] > 1)
    b = next(i for i in range(len(lrs)) if i != a)
    if edit == "swap":
        lrs[a]["original_trees"], lrs[b]["original_trees"] = (
            lrs[b]["original_trees"],
            lrs[a]["original_trees"],
        )
        lrs[a]["merged"], lrs[b]["merged"] = lrs[b]["merged"], lrs[a]["merged"]
    elif edit == "twice":
        lrs[b]["original_trees"] = lrs[b]["original_trees"] + lrs[a]["original_trees"][:1]
        lrs[b]["merged"] += 1
    elif edit == "origin":
        lrs[a]["origin"] = "new"
    else:
        del lrs[-1]
    path.write_text(json.dumps(cert))
    res = CliRunner().invoke(app, ["verify", str(r.model), str(out / "compressed.onnx"), str(path)])
    assert res.exit_code == 1, res.output
    assert res.stdout.startswith("refuted: learners:") and why in res.stdout, res.stdout


def test_inconclusive_certificate_names_every_original_tree_and_is_not_refuted(tmp_path):
    """A run stopped before any certificate writes the original; its learners name each
    original tree once (itself), so `verify` checks them and does not refute. Before the
    fix the entries named no trees and verify refuted a valid certificate. The
    certificate claims no compression, so verify answers inconclusive (exit 2), never
    "verified" (issue 40)."""
    from pace_cert.app import run_compress

    model_path, data_path = write_small_problem(tmp_path, "ada", 16, 1, 0)
    out = tmp_path / "out"
    cfg = CompressConfig.of(mode="prune", time_limit=0.001)
    res = run_compress(model_path, data_path, out, cfg)
    assert res.exit_code == 2 and res.status == "inconclusive"
    learners = json.loads((out / "certificate.json").read_text())["learners"]
    assert [lr["original_trees"] for lr in learners] == [[t] for t in range(16)]
    rep = CliRunner().invoke(
        app,
        ["verify", str(model_path), str(out / "compressed.onnx"),
         str(out / "certificate.json")],
    )  # fmt: skip
    assert rep.exit_code == 2, rep.output
    assert rep.stdout.startswith("inconclusive:") and "verified" not in rep.stdout
    assert "learners: the 16 original trees" in rep.output


def test_unwitnessed_trees_are_those_splitting_no_witnessed_gap():
    from pace_cert.region.witness import Witness, unwitnessed_trees

    def wit(f: int, a: float, b: float) -> Witness:
        x, x_next = np.zeros(3, np.float32), np.zeros(3, np.float32)
        x[f], x_next[f] = a, b
        return Witness(f, x, x_next, 0, 1)

    trees = [_stump(0, 1.5, [1, 0], [0, 1]), _stump(0, 2.5, [1, 0], [0, 1])]
    trees += [_stump(1, 0.5, [1, 0], [0, 1]), _stump(2, 1.0, [1, 0], [0, 1])]
    # gap (1, 2) on feature 0 (theta 1.5 splits it) and on feature 2 (x <= 1.0 goes left)
    assert unwitnessed_trees(trees, [wit(0, 1.0, 2.0), wit(2, 1.0, 2.0)]) == [1, 2]
    assert unwitnessed_trees(trees, [wit(2, 0.0, 1.0)]) == [0, 1, 2, 3]  # 0 and 1 both left
    assert unwitnessed_trees(trees, []) == [0, 1, 2, 3]


# (n_features, n_classes, seed, family): small stump forests on which the merged
# original without its unwitnessed trees is certified (found by search; binary and
# three classes, AdaBoost and RF)
TRIM_CASES = [(3, 2, 2, "rf"), (3, 2, 10, "ada"), (4, 2, 9, "ada"), (3, 3, 0, "ada"),
              (3, 3, 9, "rf"), (4, 2, 1, "rf")]  # fmt: skip


@pytest.mark.parametrize("n_features,n_classes,seed,family", TRIM_CASES)
def test_trimmed_original_agrees_on_every_cell_under_onnxruntime(
    n_features, n_classes, seed, family
):
    """merge_phase(trim=True): the trees that split no witnessed gap are dropped (each
    replaced by its mean leaf value in the offsets); when certified, the written ONNX
    gives onnxruntime's original label on every in-region cell (brute force), has as
    many trees as the witness bound (so it is minimal), and the run returns it."""
    X, y = small_problem(seed, n_features=n_features, n_classes=n_classes, n_rows=150)
    onx = zoo.export_onnx(zoo.make_model(family, 16, 1, seed).fit(X, y), n_features)
    original, info = ensemble_from_model(onx)
    p = run_state(original, X, CompressConfig.of(mode="prune", seed=0))
    update_witness_bound(p)
    size = trimmed_size(p)
    assert size is not None and size == p.size_bound
    res = merge_original(p, p.budget, trim=True)
    assert res.certified and res.model is not None and res.model.n_trees == size
    reps = [p.domain.reps[i][p.domain.allowed(i)] for i in range(n_features)]
    grid = np.array(list(itertools.product(*reps)), np.float32)
    cells = grid[region_mask(original, p.region.margin, None, grid, p.domain)]
    got = labels(session(ensemble_to_onnx(res.model, info).SerializeToString()), cells)
    want = labels(session(onx.SerializeToString()), cells)
    np.testing.assert_array_equal(got, want)
    run = compress(original, X, CompressConfig.of(mode="prune", seed=0))
    assert run.phase == "merge" and run.compressed.n_trees == size == run.size_bound


def test_a_trimmed_original_refuted_on_a_cell_costs_no_cp_sat_round(monkeypatch):
    """AdaBoost 16 stumps, 3 features, seed 4: the trimmed merged original is as small
    as the witness bound but misclassifies an in-region cell that no sample covers. On
    this enumerable domain the screen finds that cell, so merge_phase(trim=True) ends
    uncertified without calling CP-SAT, and the cell becomes a sample labelled by the
    original, which the trimmed candidate gets wrong."""
    X, y = small_problem(4, n_features=3, n_classes=2, n_rows=150)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("ada", 16, 1, 4).fit(X, y), 3))
    p = run_state(original, X, CompressConfig.of(mode="prune", seed=0))
    update_witness_bound(p)
    assert trimmed_size(p) == p.size_bound == 7
    assert p.screen.can_enumerate()
    calls: list[int] = []
    real = p.oracle.separate
    monkeypatch.setattr(p.oracle, "separate", lambda *a, **k: calls.append(1) or real(*a, **k))
    n0 = len(p.X)
    res = merge_original(p, p.budget, trim=True)
    assert not res.certified and res.rounds == 1 and calls == []
    new = p.X[n0:]
    assert len(new) >= 1
    np.testing.assert_array_equal(p.y0[n0:], original.predict_index(new))
    assert [h.phase for h in p.history] == ["merge"] * len(new)
    assert [h.original_label for h in p.history] == list(original.predict_index(new))


def test_trimmed_original_certificate_verifies(tmp_path):
    """End to end through the CLI: a run whose answer is the trimmed merged original
    writes a certificate that `verify` accepts (onnxruntime replay, learners' claims)."""
    from pace_cert.app import run_compress

    model_path, data_path = write_small_problem(tmp_path, "ada", 16, 1, 10)
    out = tmp_path / "out"
    res = run_compress(model_path, data_path, out, CompressConfig.of())
    assert res.exit_code == 0 and res.status == "certified"
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["summary"]["phase"] == "merge"
    assert cert["summary"]["trees_after"] == cert["summary"]["size_lower_bound"]
    named = sorted(i for lr in cert["learners"] for i in lr["original_trees"])
    assert len(named) < 16  # the unwitnessed trees are not in the model
    rep = CliRunner().invoke(
        app,
        ["verify", str(model_path), str(out / "compressed.onnx"),
         str(out / "certificate.json"), "--data", str(data_path)],
    )  # fmt: skip
    assert rep.exit_code == 0, rep.output
