"""Certified backward elimination (``pace_cert/driver/phases/eliminate.py``): every
model it offers is certified, strictly smaller than the last, and gives the original's
label on every cell inside the region (onnxruntime on both files, brute force)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pace_cert import zoo
from pace_cert.driver.phases.eliminate import Eliminate
from pace_cert.model import runtime
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.model.onnx_writer import ensemble_to_onnx
from pace_cert.oracle.settings import OracleSettings
from pace_cert.region.masks import region_mask
from pace_cert.settings import CompressConfig

from .helpers import run_state, small_problem


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
    dom = p.domain
    grid = np.array(
        list(itertools.product(*[dom.reps[i][dom.allowed(i)] for i in range(3)])), np.float32
    )
    grid = grid[region_mask(original, p.region.margin, None, grid, dom)]
    want = runtime.labels(runtime.session(path.read_bytes()), grid)
    for o in offers:
        comp = runtime.session(ensemble_to_onnx(o.result.model, info).SerializeToString())
        assert np.array_equal(runtime.labels(comp, grid), want)


def test_a_score_tree_that_only_adds_a_constant_is_removed_into_the_offsets(tmp_path):
    """A gradient-boosting tree whose leaves all add the same scores changes no label;
    removing it without moving its midrange into the class offsets would shift every
    score by 3 and be refuted. Elimination must remove it, and the result stays
    faithful on every cell."""
    import dataclasses

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
    assert np.allclose(midranges(p)[n - 1], const[0])
    assert np.allclose(offsets_without(p, list(range(n - 1))), gb.base - gb.base[0])
    offers = list(Eliminate().run(p, p.budget))
    assert offers and offers[-1].result.model.n_trees < n
    best = offers[-1].result.model
    dom = p.domain
    grid = np.array(
        list(itertools.product(*[dom.reps[i][dom.allowed(i)] for i in range(3)])), np.float32
    )
    grid = grid[region_mask(original, p.region.margin, None, grid, dom)]
    want = runtime.labels(runtime.session(path.read_bytes()), grid)
    comp = runtime.session(ensemble_to_onnx(best, info).SerializeToString())
    assert np.array_equal(runtime.labels(comp, grid), want)
