"""benchmarks/studies/tree_bound.py: its search for one or two label-pure depth-2 trees agrees
with brute force over every tree and every pair of trees (no split-subset pruning)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from benchmarks.studies import tree_bound as tb


def _grid(levels: tuple[int, ...]) -> np.ndarray:
    return np.array(list(itertools.product(*[range(v) for v in levels])), np.float32)


def _planted(X: np.ndarray, n_trees: int, seed: int) -> np.ndarray:
    """Labels of a random additive model of ``n_trees`` depth-2 trees over X's splits."""
    rng = np.random.default_rng(seed)
    S = np.array([X[:, f] <= t for f, t in tb.splits_of(X)])
    score = np.zeros(len(X))
    for _ in range(n_trees):
        r, a, b = (int(v) for v in rng.choice(len(S), 3, replace=False))
        score += rng.normal(size=4)[tb._leaves(S, (r, a, b))]
    return (score > np.median(score)).astype(np.int64)


def _brute(X: np.ndarray, y: np.ndarray) -> tuple[bool, bool]:
    """(some single tree is pure, some pair is pure and additive), every tree listed."""
    S = np.array([X[:, f] <= t for f, t in tb.splits_of(X)])
    trees = tb._trees(tuple(range(len(S))))
    leaves = [tb._leaves(S, t) for t in trees]
    one = any(tb._pure(v, y, 4, 2) for v in leaves)
    for i, j in itertools.combinations_with_replacement(range(len(trees)), 2):
        joint = leaves[i] * 4 + leaves[j]
        if not tb._pure(joint, y, 16, 2):
            continue
        labels = {
            (int(c) // 4, int(c) % 4): int(y[np.argmax(joint == c)]) for c in np.unique(joint)
        }
        if tb._additive(labels, 2):
            return one, True
    return one, False


@pytest.mark.parametrize("n_trees,seed", [(1, 0), (2, 1), (2, 2), (3, 3), (3, 4)])
def test_tree_search_agrees_with_brute_force(n_trees, seed):
    X = _grid((3, 3, 3, 2))  # 7 splits: 7 six-split subsets to prune with
    y = _planted(X, n_trees, seed)
    one, two = _brute(X, y)
    assert (tb.one_tree(X, y) is not None) == one
    pair, _, _ = tb.two_trees(X, y)
    assert (pair is not None) == two
    if n_trees <= 2:
        assert two  # a planted pair (or single tree) is always found
    if pair is not None:
        S = np.array([X[:, f] <= t for f, t in tb.splits_of(X)])
        joint = tb._leaves(S, pair[0]) * 4 + tb._leaves(S, pair[1])
        assert tb._pure(joint, y, 16, 2)


def test_tree_search_outcomes_are_mixed():
    """The brute-force cases above are not all one outcome (the test could not fail)."""
    X = _grid((3, 3, 3, 2))
    outcomes = {_brute(X, _planted(X, n, s)) for n, s in [(1, 0), (2, 1), (3, 3), (3, 4)]}
    assert len(outcomes) >= 2
