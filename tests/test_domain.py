"""Cell representatives are float32 points inside their cells (SPEC §5)."""

from __future__ import annotations

import numpy as np

from pace_cert.region.domain import build_domain, infer_binary

from .helpers import stump


def test_representatives_lie_in_their_cells():
    ths = [np.float32(0.1), np.float32(0.3), np.float32(1e-30), np.float32(3e38)]
    trees = [stump(0, t) for t in ths]
    dom = build_domain(trees, 1)
    th = dom.thresholds[0]
    reps = dom.reps[0]
    assert reps.dtype == np.float32
    for k, r in enumerate(reps):
        assert dom.cell_index(np.array([[r]], np.float32))[0, 0] == k
        if k > 0:
            assert r > th[k - 1]
        if k < len(th):
            assert r <= th[k]


def test_binary_and_bounds_restrict_cells():
    trees = [stump(0, 0.5), stump(0, 0.7), stump(1, 2.0), stump(1, 5.0)]
    X = np.array([[0, 1], [1, 3]], np.float32)
    dom = build_domain(trees, 2, infer_binary(X), lower=np.array([0, 1]), upper=np.array([1, 3]))
    assert list(dom.reps[0][dom.allowed(0)]) == [0.0, 1.0]  # the (0.5, 0.7] cell is empty
    r1 = dom.reps[1][dom.allowed(1)]
    assert list(r1) == [2.0, 3.0]  # (5, inf) lies outside the box
    assert dom.contains(np.array([[0, 2.5], [0.5, 2.0], [1, 4.0]], np.float32)).tolist() == [
        True,
        False,
        False,
    ]


def test_representatives_of_many_cells_match_one_at_a_time():
    """``representatives`` (rows of cell indices) equals ``representative`` row by row,
    each point lies in its cells, and a disallowed cell raises in both."""
    import pytest

    trees = [stump(0, 0.5), stump(0, 0.7), stump(1, 2.0), stump(1, 5.0), stump(2, -1.0)]
    X = np.array([[0, 1, 0], [1, 3, 2]], np.float32)
    dom = build_domain(
        trees, 3, infer_binary(X), lower=np.array([0, 1, -5]), upper=np.array([1, 3, 5])
    )
    cells = np.array([[k0, k1, k2] for k0 in (0, 2) for k1 in (0, 1) for k2 in (0, 1)], np.int64)
    many = dom.representatives(cells)
    assert many.dtype == np.float32 and many.shape == cells.shape
    np.testing.assert_array_equal(many, np.stack([dom.representative(c) for c in cells]))
    np.testing.assert_array_equal(dom.cell_index(many), cells)
    assert dom.representatives(np.zeros((0, 3), np.int64)).shape == (0, 3)
    for bad in ([1, 0, 0], [0, 2, 0]):  # (0.5, 0.7] is empty for a binary; (5, inf) > upper
        with pytest.raises(ValueError):
            dom.representatives(np.array([bad]))
        with pytest.raises(ValueError):
            dom.representative(np.array(bad))
