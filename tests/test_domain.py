"""Cell representatives are float32 points inside their cells (SPEC §5)."""

from __future__ import annotations

import numpy as np

from pace_cert.domain import build_domain, infer_binary

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
