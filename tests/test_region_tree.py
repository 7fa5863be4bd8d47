"""The single-tree builder (pace_cert/learners/region_tree.py) against brute force: the
exact program's fewest leaves equals an exhaustive search over every tree of small
grids with don't-cares (with and without a depth cap), and every fitted tree is pure on
its points."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from pace_cert.learners.region_tree import (
    INF,
    NoTreeWithinCaps,
    dense_grid,
    fit_cell_tree,
    merge_slices,
    min_leaves,
)


def brute_min_leaves(G: np.ndarray, max_depth: int | None) -> float:
    """Fewest leaves of a pure tree of G's sub-boxes, by exhaustive recursion."""
    shape = G.shape

    @functools.cache
    def phi(box: tuple[tuple[int, int], ...], depth: int | None) -> float:
        cells = G[tuple(slice(lo, hi + 1) for lo, hi in box)]
        if len(np.unique(cells[cells >= 0])) <= 1:
            return 1
        if depth is not None and depth == 0:
            return float("inf")
        best = float("inf")
        for ax, (lo, hi) in enumerate(box):
            for s in range(lo, hi):
                a = (*box[:ax], (lo, s), *box[ax + 1 :])
                b = (*box[:ax], (s + 1, hi), *box[ax + 1 :])
                d = None if depth is None else depth - 1
                best = min(best, phi(a, d) + phi(b, d))
        return best

    return phi(tuple((0, a - 1) for a in shape), max_depth)


def random_grid(rng: np.random.Generator) -> np.ndarray:
    shape = tuple(int(a) for a in rng.integers(1, 5, size=rng.integers(1, 4)))
    K = int(rng.integers(2, 4))
    G = rng.integers(0, K, size=shape)
    G[rng.random(shape) < rng.uniform(0, 0.5)] = -1
    return G


def points_of(G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    coords = np.array(list(itertools.product(*[range(a) for a in G.shape])), np.int64)
    labels = G.reshape(-1)
    keep = labels >= 0
    return coords[keep], labels[keep]


@pytest.mark.parametrize("seed", range(40))
def test_exact_program_is_the_fewest_leaves(seed: int) -> None:
    rng = np.random.default_rng(seed)
    G = random_grid(rng)
    depth = None if seed % 2 == 0 else int(rng.integers(0, 4))
    layers = min_leaves(G.astype(np.int16), 4, depth)
    got = int(layers[-1][(-1,) * G.ndim])
    want = brute_min_leaves(G, depth)
    assert (got >= INF and want == float("inf")) or got == want
    coords, labels = points_of(G)
    if len(labels) == 0:
        return
    # the fitted tree: pure on the points, the program's size, within the depth cap
    try:
        tree = fit_cell_tree(coords, labels, 4, max_depth=depth)
    except NoTreeWithinCaps as e:
        assert want == float("inf") and e.proved
        return
    assert np.array_equal(tree.predict(coords), labels)
    assert tree.exact
    merged = merge_slices(dense_grid(coords, labels, 10**6))
    assert tree.n_leaves == (1 if merged.labels.ndim == 0 else want)
    if depth is not None:
        assert tree.depth <= depth


def test_merging_slices_keeps_the_fewest_leaves() -> None:
    for seed in range(30):
        G = random_grid(np.random.default_rng(100 + seed))
        coords, labels = points_of(G)
        if len(labels) == 0:
            continue
        merged = merge_slices(dense_grid(coords, labels, 10**6))
        want = brute_min_leaves(G, None)
        got = 1 if merged.labels.ndim == 0 else brute_min_leaves(merged.labels, None)
        assert got == want


def test_greedy_nodes_stay_pure_on_sparse_points() -> None:
    """Points too spread for the exact program (a tiny box limit): greedy cuts, pure
    tree all the same, cuts chosen by the callback between the two coordinates."""
    rng = np.random.default_rng(7)
    coords = rng.integers(0, 50, size=(400, 6))
    coords = np.unique(coords, axis=0)
    labels = (coords[:, 0] + coords[:, 1] > 50).astype(np.int64) + (coords[:, 2] > 40)
    seen = []

    def choose(f: int, a: int, b: int) -> int:
        assert a < b
        seen.append((f, a, b))
        return (a + b - 1) // 2

    tree = fit_cell_tree(coords, labels, 3, exact_boxes=10, choose_cut=choose)
    assert np.array_equal(tree.predict(coords), labels)
    assert not tree.exact and seen


def test_depth_cap_refuses_an_impossible_tree() -> None:
    coords = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    labels = np.array([0, 1, 1, 0])  # xor: two levels needed
    with pytest.raises(NoTreeWithinCaps) as e:
        fit_cell_tree(coords, labels, 2, max_depth=1)
    assert e.value.proved
    tree = fit_cell_tree(coords, labels, 2, max_depth=2)
    assert tree.n_leaves == 4 and tree.depth == 2


def test_refitting_broken_leaves_keeps_the_tree_pure():
    """A round adds points; only the leaves they contradict are refit, and the tree is
    pure on every point again (the grafted nodes are valid children of their leaves)."""
    from pace_cert.learners.region_tree import refit_leaves

    rng = np.random.default_rng(11)
    coords = np.unique(rng.integers(0, 6, size=(300, 4)), axis=0)
    labels = ((coords[:, 0] > 2) ^ (coords[:, 1] + coords[:, 3] > 6)).astype(np.int64)
    first = fit_cell_tree(coords[:40], labels[:40], 2, exact_boxes=50)
    assert np.array_equal(first.predict(coords[:40]), labels[:40])
    tree = refit_leaves(first, coords, labels, 2, exact_boxes=50)
    assert np.array_equal(tree.predict(coords), labels)
    assert not tree.exact and tree.n_leaves >= first.n_leaves
    same = refit_leaves(tree, coords, labels, 2, exact_boxes=50)
    assert same is tree  # nothing broken: nothing refit
    capped = refit_leaves(first, coords, labels, 2, max_depth=first.depth + 3, exact_boxes=50)
    assert capped.depth <= first.depth + 3
