"""benchmarks/studies/pace_exact_region.py: its LPs meet every cell of the region they are
given (row generation adds every broken row), so the sizes it reports are faithful
supports; checked on every integer point of a small problem's grid."""

from __future__ import annotations

import numpy as np

from benchmarks.studies.pace_exact_region import Pool, Region, Rows, backward, l1, max_margin
from pace_cert import zoo
from pace_cert.model.onnx_reader import ensemble_from_model
from pace_cert.oracle.screen import cell_product

from .helpers import small_problem


def _case():
    X, y = small_problem(5, n_features=3, n_classes=3, n_rows=300)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 8, 2, 1).fit(X, y), 3))
    grid = cell_product([np.arange(5.0)] * 3).astype(np.float32)
    S = original.scores(grid)
    top = np.sort(S, axis=1)
    keep = top[:, -1] - top[:, -2] > 0.02  # a confidence region, ties out
    G = grid[keep]
    region = Region(G, original.predict_index(G), np.arange(5), float(len(grid)), 3)
    pool = Pool(region)
    for tree in original.trees:
        pool.add(tree, False)
    return original, region, pool


def _margins(pool: Pool, region: Region, w: np.ndarray) -> np.ndarray:
    S = sum(w[t] * pool.trees[t].value[pool.leaf[t]] for t in range(len(pool.trees)))
    at = np.arange(len(region.y))
    sy = S[at, region.y]
    S[at, region.y] = -np.inf
    return sy - S.max(axis=1)


def test_l1_and_max_margin_weights_meet_every_cell_of_the_region():
    original, region, pool = _case()
    rows = Rows(pool)
    start = len(rows.ri)
    cols = list(range(original.n_trees))
    w, _duals, obj = l1(rows, cols)
    assert len(rows.ri) > start  # five cells alone did not decide it: rows were added
    assert _margins(pool, region, w).min() >= 1 - 1e-6 and obj == np.sum(w)
    rho, w2 = max_margin(rows, cols)
    assert w2 is not None and abs(w2.sum() - 1) < 1e-9
    assert _margins(pool, region, w2).min() > 0.5 * rho > 0


def test_backward_returns_a_support_whose_margin_holds_everywhere_and_none_of_whose_trees_can_go():
    original, region, pool = _case()
    rows = Rows(pool)
    S = backward(rows, list(range(original.n_trees)), [], "backward", 0.0)
    assert 1 <= len(S) <= original.n_trees
    _rho, w = max_margin(rows, S)
    assert w is not None and _margins(pool, region, w).min() > 0
    for t in S:  # greedy's end: no single further removal keeps a margin on the region
        assert max_margin(rows, [u for u in S if u != t])[1] is None
