"""The leaf-witness checker (what verify runs) on a one-feature model it can be read off:
label 1 on (2, 4], label 0 elsewhere, every point in the region. A set passes exactly
when it is evidence: each same-label pair has a separator of another label inside its
box; a pair given twice does not stand in for a missing one."""

from __future__ import annotations

import numpy as np

from pace_cert.region.leaf_witness import check_leaf_witnesses


def predict(Z: np.ndarray) -> np.ndarray:
    return ((Z[:, 0] > 2) & (Z[:, 0] <= 4)).astype(np.int64)


def inside(Z: np.ndarray) -> np.ndarray:
    return np.ones(len(Z), bool)


P = np.array([[1.0], [3.0], [5.0]], np.float32)  # labels 0, 1, 0: 3 leaves at least
S = np.array([[3.5]], np.float32)  # label 1, between the two 0-points


def check(points, labels, seps, pairs):
    return check_leaf_witnesses(points, labels, seps, np.array(pairs).reshape(-1, 3),
                                predict, inside)  # fmt: skip


def test_a_valid_set_passes_and_each_forgery_is_named():
    assert check(P, [0, 1, 0], S, [[0, 2, 0]]) == []
    assert check(P, [0, 1, 0], S, []) != []  # the 0-points need their separator
    assert check(P, [0, 0, 0], S, [[0, 2, 0]]) != []  # a stated label the model does not give
    far = np.array([[9.0]], np.float32)  # label 0 and outside the pair's box
    assert check(P, [0, 1, 0], far, [[0, 2, 0]]) != []
    same = np.array([[1.5]], np.float32)  # in the box, but labelled as the points
    assert check(P, [0, 1, 0], same, [[0, 2, 0]]) != []


def test_a_pair_given_twice_does_not_cover_another():
    P4 = np.array([[1.0], [5.0], [6.0]], np.float32)  # three 0-points: 3 pairs to cover
    S4 = np.array([[3.0]], np.float32)
    problems = check(P4, [0, 0, 0], S4, [[0, 1, 0], [0, 1, 0], [0, 2, 0]])
    assert problems == ["1 of the 3 pairs of points that share a label have no separator"]
    assert check(P4, [0, 0, 0], S4, [[0, 1, 0], [0, 2, 0], [1, 2, 0]]) != []  # 3.0 not in (5, 6]
