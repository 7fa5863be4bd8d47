"""Certified backward elimination (``pace_cert/driver/phases/eliminate.py``): every
model it offers is certified, strictly smaller than the last, and gives the original's
label on every cell inside the region (onnxruntime on both files, brute force)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pace_cert import zoo
from pace_cert.driver.phases.eliminate import Eliminate
from pace_cert.model.onnx_reader import ensemble_from_model, read_ensemble
from pace_cert.oracle.settings import OracleSettings
from pace_cert.settings import CompressConfig

from .helpers import assert_faithful_on_every_cell, run_state, small_problem


@pytest.mark.parametrize(
    ("family", "depth", "seed", "eta"),
    [("rf", 2, 1, 0.1), ("ada", 1, 2, 0.1), ("et", 2, 3, 0.1), ("gb", 2, 4, 0.1)],
)
def test_elimination_offers_smaller_certified_models_faithful_on_every_cell(
    tmp_path, family, depth, seed, eta
):
    X, y = small_problem(seed, n_features=3, n_rows=200)
    path = tmp_path / "model.onnx"
    path.write_bytes(
        zoo.export_onnx(zoo.make_model(family, 16, depth, seed).fit(X, y), 3).SerializeToString()
    )
    original, info = read_ensemble(path)
    # enumeration off: the domain is screened by a pool, as a large one would be
    cfg = CompressConfig.of(mode="prune", eta=eta, seed=0, oracle=OracleSettings(enum_limit=0))
    p = run_state(original, X.astype(np.float32), cfg)
    step = Eliminate()
    assert step.applies(p)
    offers = list(step.run(p, p.budget))
    sizes = [o.result.model.n_trees for o in offers]
    assert offers and all(o.result.certified and o.name == "eliminate" for o in offers)
    assert sizes[0] < original.n_trees and sizes == sorted(set(sizes), reverse=True)
    assert_faithful_on_every_cell(p, original, path, info, [o.result.model for o in offers])


def test_a_score_tree_that_only_adds_a_constant_is_removed_into_the_offsets(tmp_path):
    """A gradient-boosting tree whose leaves all add the same scores changes no label;
    removing it without moving its midrange into the class offsets would shift every
    score by 3 and be refuted. Elimination must remove it, and the result stays
    faithful on every cell."""
    from pace_cert.driver.phases.eliminate import midranges, offsets_without
    from pace_cert.model.ensemble import Tree

    X, y = small_problem(4, n_features=3, n_rows=200)
    path = tmp_path / "model.onnx"
    path.write_bytes(
        zoo.export_onnx(zoo.make_model("gb", 8, 2, 4).fit(X, y), 3).SerializeToString()
    )
    gb, info = read_ensemble(path)
    k = gb.n_classes
    const = np.tile(np.r_[0.0, 3.0][:k] if k == 2 else np.full(k, 3.0), (3, 1))
    tree = Tree(
        np.array([0, -1, -1]), np.array([1.5, 0, 0], np.float32), np.array([1, -1, -1]),
        np.array([2, -1, -1]), const,
    )  # fmt: skip
    original = dataclasses.replace(
        gb,
        trees=(*gb.trees, tree),
        weights=np.r_[gb.weights, 1.0],
        base=gb.base - const[0],
        origin=(),
        estimators=0,
    )
    n = original.n_trees
    cfg = CompressConfig.of(mode="prune", eta=0.1, seed=0, oracle=OracleSettings(enum_limit=0))
    p = run_state(original, X.astype(np.float32), cfg)
    assert np.allclose(midranges(p.original)[n - 1], const[0])
    assert np.allclose(offsets_without(p, list(range(n - 1))), gb.base - gb.base[0])
    offers = list(Eliminate().run(p, p.budget))
    assert offers and offers[-1].result.model.n_trees < n
    best = offers[-1].result.model
    assert_faithful_on_every_cell(p, original, path, info, [best])


@pytest.mark.parametrize(("family", "seed"), [("rf", 5), ("gb", 6), ("ada", 7)])
def test_largest_changes_bound_every_class_difference_a_removal_makes(family, seed):
    """d_t bounds what removing tree t (rescaled votes, midrange offsets) does to every
    class-pair score difference, on random inputs; and the free removal keeps every
    difference above zero wherever the original's exceeds c_o."""
    from pace_cert.driver.phases.eliminate import free_removal, largest_changes

    X, y = small_problem(seed, n_features=3, n_classes=3, n_rows=300)
    est = zoo.make_model(family, 20, 2, seed).fit(X, y)
    original, _ = ensemble_from_model(zoo.export_onnx(est, 3))
    rng = np.random.default_rng(seed)
    Z = rng.uniform(-1, 5, size=(4000, 3))
    d = largest_changes(original)
    for t in rng.choice(original.n_trees, 5, replace=False):
        leaves = original.trees[t].value[original.trees[t].left == -1] * original.weights[t]
        mid = (leaves.max(0) + leaves.min(0)) / 2 if original.kind == "margin" else 0 * leaves[0]
        tree = original.trees[t]
        one = tree.value[tree.apply(Z)] * original.weights[t] - mid  # [rows, K]
        change = one[:, :, None] - one[:, None, :]
        assert change.max() <= d[t] + 1e-12
    c_o = float(np.sort(d)[:4].sum()) * 1.02 / 0.99 + 2 * original.runtime_guard
    gone = free_removal(original, c_o)
    assert len(gone) >= 4 and d[gone].sum() <= c_o
    kept = np.setdiff1d(np.arange(original.n_trees), gone)
    full = original.scores(Z)
    w = original.weights.copy()
    w[gone] = 0
    shift = np.zeros(original.n_classes)
    if original.kind == "margin":
        for t in gone:
            v = original.trees[t].value[original.trees[t].left == -1] * original.weights[t]
            shift += (v.max(0) + v.min(0)) / 2
    else:
        w[kept] *= original.weights.sum() / original.weights[kept].sum()
    sub = dataclasses.replace(original, weights=w, base=original.base + shift).scores(Z)
    y0 = full.argmax(1)
    rows = np.arange(len(Z))
    for k in range(original.n_classes):
        inside = (y0 != k) & (full[rows, y0] - full[:, k] > c_o)
        assert np.all(sub[rows, y0][inside] - sub[inside, k] > 0)


@pytest.mark.parametrize(("family", "seed", "eta"), [("rf", 1, 0.3), ("gb", 4, 0.5)])
def test_free_removal_offers_a_certified_model_faithful_on_every_cell(tmp_path, family, seed, eta):
    from pace_cert.driver.phases.eliminate import FreeRemoval, free_removal

    X, y = small_problem(seed, n_features=3, n_rows=200)
    path = tmp_path / "model.onnx"
    path.write_bytes(
        zoo.export_onnx(zoo.make_model(family, 16, 2, seed).fit(X, y), 3).SerializeToString()
    )
    original, info = read_ensemble(path)
    cfg = CompressConfig.of(mode="prune", eta=eta, seed=0, oracle=OracleSettings(enum_limit=0))
    p = run_state(original, X.astype(np.float32), cfg)
    gone = free_removal(original, p.region.margin)
    assert gone
    offers = list(FreeRemoval().run(p, p.budget))
    assert len(offers) == 1 and offers[0].result.certified
    model = offers[0].result.model
    assert model.n_trees <= original.n_trees - len(gone)
    assert_faithful_on_every_cell(p, original, path, info, [model])


def test_a_removal_met_only_below_the_float32_guard_is_not_proposed_again():
    """A one-tree removal whose separating samples are rows already (met only below the
    float32 guard) cannot be certified by another round: elimination skips that tree and
    proposes the others instead of ending the step (issue 47)."""
    from pace_cert.driver.phases.eliminate import removal

    X, y = small_problem(1, n_features=3, n_rows=200)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 8, 2, 1).fit(X, y), 3))
    cfg = CompressConfig.of(mode="prune", eta=0.1, seed=0, oracle=OracleSettings(enum_limit=0))
    p = run_state(original, X.astype(np.float32), cfg)
    A = p.matrix(list(original.trees))
    kept = list(range(original.n_trees))
    first = removal(p, A, kept, 1)
    assert first is not None and len(first) == 1
    skip: set[int] = set()
    while (out := removal(p, A, kept, 1, skip)) is not None:
        assert not set(out) & skip
        skip |= set(out)
    assert first[0] in skip and len(skip) > 1  # others were proposed after the first


def test_a_removal_cp_sat_leaves_undecided_counts_as_refuted_and_the_others_are_tried():
    """With no time for CP-SAT (``search.eliminate_oracle_seconds`` far below a solve),
    every candidate the screen does not refute is undecided: nothing is certified, the
    step halves on each, and at one tree each undecided removal joins the skipped trees
    so the next is tried, instead of one call holding the rest of the run (a spambase
    100 call took 222 of 600 s) or the step ending at the first undecided tree."""
    X, y = small_problem(1, n_features=3, n_rows=200)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 8, 2, 1).fit(X, y), 3))
    cfg = CompressConfig.of(
        mode="prune", eta=0.1, seed=0, time_limit=600, oracle=OracleSettings(enum_limit=0),
        eliminate_oracle_seconds=1e-9,
    )  # fmt: skip
    said: list[str] = []
    p = run_state(original, X.astype(np.float32), cfg, said.append)
    offers = list(Eliminate().run(p, p.budget))
    assert offers == []
    undecided = [m for m in said if "undecided" in m]
    one_tree = [m for m in undecided if "removing 1 of" in m]
    assert len(one_tree) >= 2  # more than one single-tree removal was tried
    # the step ended because every tree was tried, not at a repeated undecided proposal
    assert p.stop_reason is not None and "left undecided by CP-SAT" in str(p.stop_reason)
    assert "refuted again" not in str(p.stop_reason)
    assert not p.budget.expired()
