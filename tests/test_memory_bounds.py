"""Memory-saving forms of two hot loops compute exactly what the plain forms compute:
class scores a block of rows at a time (``FlatForest.sums``), and HiGHS models loaded
a block of rows at a time (``load_highs``). benchmarks/results/memory.md measures them."""

from __future__ import annotations

import numpy as np
import pytest

from pace_cert.model.ensemble import FlatForest, tree_sums

from .helpers import trained


def test_sums_by_blocks_of_rows_equal_the_whole_sum(monkeypatch):
    _m, _onnx, X, _y = trained("rf", "compas", 20, 3)
    from pace_cert.model.onnx_reader import ensemble_from_model

    ens, _ = ensemble_from_model(_onnx)
    tables = [w * t.value for w, t in zip(ens.weights, ens.trees)]
    whole = tree_sums(tables, ens.base, ens.flat.apply(X))
    monkeypatch.setattr(FlatForest, "SUM_CELLS", 7 * ens.n_trees)  # blocks of 7 rows
    blocks = ens.flat.sums(tables, ens.base, X)
    assert blocks.shape == whole.shape and np.array_equal(blocks, whole)
    assert np.array_equal(ens.scores(X), whole)
    assert ens.flat.sums(tables, ens.base, X[:0]).shape == (0, ens.n_classes)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_highs_model_loaded_in_blocks_solves_identically(monkeypatch, seed):
    """The rows are appended in order either way: the same model, the same simplex
    path, the same solution and duals bit for bit."""
    from pace_cert.master import highs as hs

    rng = np.random.default_rng(seed)
    M = rng.normal(size=(int(rng.integers(300, 1500)), int(rng.integers(5, 40)))) + 0.3
    M[rng.random(M.shape) < 0.3] = 0.0

    def solve() -> tuple:
        h = hs.new_highs(1, 0)
        c = M.shape[1]
        hs.load_highs(h, M, np.ones(c), np.zeros(c), np.full(c, hs.INF))
        hs.run_highs(h, None)
        s = h.getSolution()
        lp = h.getLp()
        return np.asarray(s.col_value), np.asarray(s.row_dual), lp.num_row_, lp.num_col_

    one = solve()
    monkeypatch.setattr(hs, "LOAD_BLOCK_NONZEROS", 64)
    blocks = solve()
    assert one[2:] == blocks[2:] == M.shape
    assert np.array_equal(one[0], blocks[0]) and np.array_equal(one[1], blocks[1])
