"""Re-fitted leaves: the smallest supports of tree partitions with free leaf values.

The L0 master chooses learners and scales each one as a whole, so a tree's leaf values
stay as they came: the original's class distributions, or one-hot votes from pricing.
Two one-hot trees are never better than the heavier one alone (where they disagree it
wins), and a pool tree whose partition is right may carry values that do not combine.
Here a tree's *partition* is the learner and its leaf values are free: each (tree, leaf,
class) becomes an indicator column, so on a chosen set of partitions the master is an
LP over leaf values (the max-margin LP, for candidates that hold near the samples too).
Any non-negative leaf values are a class distribution times a weight once every leaf of
a tree gets the same class-independent increment up to a common total (the argmax, and
every score difference, is unchanged), so the result stays in the family of depth-d
trees with class-distribution leaves; it is certified by the oracle like any candidate.

A set of partitions can only be faithful on the samples if every cell of their joint
partition holds samples of one label (:func:`pure_sets`); this necessary test prunes the
O(T^2) pairs of a pool with numpy before any LP runs.
"""

from __future__ import annotations

import numpy as np

from pace_cert.model.ensemble import LEAF, Tree


def partition_key(tree: Tree) -> bytes:
    """Identifies a tree's partition (structure and thresholds, not its leaf values)."""
    return tree.feature.tobytes() + tree.threshold.tobytes() + tree.left.tobytes()


def leaf_ids(learners: list[Tree], X: np.ndarray) -> np.ndarray:
    """ids[t, i] = rank of the leaf of learner t holding sample X[i] (0 .. leaves-1)."""
    out = np.zeros((len(learners), len(X)), np.int64)
    for t, tree in enumerate(learners):
        rank = np.full(len(tree.feature), -1, np.int64)
        rank[tree.leaves] = np.arange(len(tree.leaves))
        out[t] = rank[tree.apply(X)]
    return out


def _impure(cells: np.ndarray, y0: np.ndarray, n_cells: int, k: int) -> np.ndarray:
    """Per row of ``cells`` [m, n] (cell index of each sample), whether some cell holds
    samples of two labels."""
    m = cells.shape[0]
    flat = (np.arange(m)[:, None] * n_cells + cells) * k + y0[None, :]
    seen = np.zeros(m * n_cells * k, bool)
    seen[flat.ravel()] = True
    labels = seen.reshape(m, n_cells, k).sum(axis=2)
    return (labels > 1).any(axis=1)


def pure_sets(ids: np.ndarray, y0: np.ndarray, k: int, size: int) -> list[tuple[int, ...]]:
    """Sets of ``size`` (1 or 2) learners whose joint partition holds one label ``y0`` per
    cell, in index order. Necessary for any leaf values to meet every sample."""
    T = ids.shape[0]
    if T == 0 or ids.shape[1] == 0:
        return []
    n_leaves = int(ids.max()) + 1
    if size == 1:
        bad = _impure(ids, y0, n_leaves, k)
        return [(t,) for t in np.flatnonzero(~bad)]
    if size != 2:
        raise ValueError("pure_sets: size must be 1 or 2")
    out: list[tuple[int, ...]] = []
    for s in range(T - 1):
        joint = ids[s][None, :] * n_leaves + ids[s + 1 :]
        bad = _impure(joint, y0, n_leaves * n_leaves, k)
        out += [(s, s + 1 + int(j)) for j in np.flatnonzero(~bad)]
    return out


def indicators(tree: Tree, k: int) -> list[Tree]:
    """One learner per (leaf, class): the tree's partition, value 1 at that leaf and
    class, 0 elsewhere. In leaf order, classes ascending."""
    out = []
    for leaf in tree.leaves:
        for c in range(k):
            v = np.zeros((len(tree.feature), k))
            v[leaf, c] = 1.0
            out.append(Tree(tree.feature, tree.threshold, tree.left, tree.right, v))
    return out


def assemble(partitions: list[Tree], weights: np.ndarray, k: int) -> tuple[list[Tree], list[int]]:
    """Trees with the leaf values given by indicator weights (layout of
    :func:`indicators`, partitions in order), each leaf raised by a class-independent
    amount so every leaf sums to the tree's largest leaf total: a class distribution
    times that total. Partitions whose indicators are all zero are left out; returns the
    trees and the positions in ``partitions`` they come from."""
    out, kept = [], []
    at = 0
    for j, tree in enumerate(partitions):
        leaves = tree.leaves
        u = np.asarray(weights[at : at + len(leaves) * k], np.float64).reshape(len(leaves), k)
        at += len(leaves) * k
        total = u.sum(axis=1)
        if total.max() <= 0:
            continue
        u = u + (total.max() - total)[:, None] / k
        v = np.zeros((len(tree.feature), k))
        v[leaves] = u
        v[tree.left != LEAF] = 0.0
        out.append(Tree(tree.feature, tree.threshold, tree.left, tree.right, v))
        kept.append(j)
    return out, kept


def pool_splits(learners: list[Tree], thresholds: tuple[np.ndarray, ...]) -> dict[int, np.ndarray]:
    """Per feature, the sorted cut indices j ("cell <= j", i.e. x <= thresholds[f][j])
    that some learner of the pool splits on."""
    cuts: dict[int, set[int]] = {}
    for t in learners:
        for node in np.flatnonzero(t.left != LEAF):
            f = int(t.feature[node])
            j = int(np.searchsorted(thresholds[f], t.threshold[node], side="left"))
            cuts.setdefault(f, set()).add(j)
    return {f: np.array(sorted(js), np.int64) for f, js in sorted(cuts.items())}


def _child_options(
    a, y, buckets, roots, n_cuts, k: int, n_a: int, chunk: int = 2_000_000, stop=None
):
    """For every root split r = (c, i) (feature column c of ``buckets``, cut i) and side
    (cell <= cut, then above): (leaf_ok[2r + side], split_ok[2r + side]) where leaf_ok
    says every leaf of A (ranks ``a``) holds one label among that side's samples, and
    split_ok[., c', i'] says so for both parts after the split (c', i'). One histogram
    over (root, side, feature, A leaf, bucket, label) per chunk of roots (``chunk``
    bounds its entries and the codes' root x sample x feature entries). ``stop()``
    (checked before each chunk after the first) ends the scan early: the arrays then
    cover the first roots only (on raw features a scan can take many seconds)."""
    n, F = buckets.shape
    m = int(n_cuts.max()) + 1  # buckets between consecutive cuts
    per = max(1, chunk // max(1, n * F, 2 * F * n_a * m * k))  # roots per histogram
    leaf_ok, split_ok = [], []
    base = (np.arange(F)[None, :] * n_a + a[:, None]) * m + buckets  # [n, F]
    for at in range(0, len(roots), per):
        if at and stop is not None and stop():
            break
        rs = roots[at : at + per]
        R = len(rs)
        side = np.stack([buckets[:, c] > i for c, i in rs]).astype(np.int64)  # [R, n]
        g = np.arange(R)[:, None] * 2 + side  # [R, n] group = root, side
        code = ((g[:, :, None] * (F * n_a * m) + base[None, :, :]) * k) + y[None, :, None]
        H = np.bincount(code.ravel(), minlength=2 * R * F * n_a * m * k)
        H = H.reshape(2 * R, F, n_a, m, k)
        counts = H[:, 0].sum(axis=2)  # [G, n_a, k]: every sample once (feature 0)
        leaf_ok.append(((counts > 0).sum(axis=2) <= 1).all(axis=1))
        below = np.cumsum(H, axis=3)[:, :, :, :-1]  # [G, F, n_a, m-1, k]: cells <= cut
        above = H.sum(axis=3, keepdims=True) - below
        ok = (((below > 0).sum(axis=4) <= 1) & ((above > 0).sum(axis=4) <= 1)).all(axis=2)
        split_ok.append(ok & (np.arange(m - 1)[None, None, :] < n_cuts[None, :, None]))
    return np.concatenate(leaf_ok), np.concatenate(split_ok)


def partners(
    a: np.ndarray,
    y0: np.ndarray,
    cells: np.ndarray,
    splits: dict[int, np.ndarray],
    thresholds: tuple[np.ndarray, ...],
    k: int,
    depth: int,
    limit: int = 50,
    per_side: int = 3,
    stop=None,
) -> list[Tree]:
    """Trees B of depth <= min(depth, 2) built from ``splits`` (per feature, cut
    indices into ``thresholds``) whose joint partition with a tree A (leaf ranks ``a``
    per sample) holds one label per cell on the samples (``cells``: their cell indices,
    ``y0``: labels): every root split, then up to ``per_side`` pure options per child
    (a leaf first; a split only where a leaf is not pure). At most ``limit`` trees,
    leaf values 0 (set by the indicators). ``stop()``: a callable that ends the search
    early (then only the roots scanned so far are offered)."""
    feats = list(splits)
    if not feats:
        return []
    n_a = int(a.max()) + 1 if len(a) else 1
    # bucket of each sample per feature: cell <= js[i] <=> bucket <= i
    buckets = np.stack([np.searchsorted(splits[f], cells[:, f], side="left") for f in feats], 1)
    n_cuts = np.array([len(splits[f]) for f in feats])
    roots = [(c, i) for c, f in enumerate(feats) for i in range(len(splits[f]))]
    leaf_ok, split_ok = _child_options(a, np.asarray(y0), buckets, roots, n_cuts, k, n_a, stop=stop)
    out: list[Tree] = []
    for r, (c, i) in enumerate(roots[: len(leaf_ok) // 2]):
        sides = []
        for g in (2 * r, 2 * r + 1):
            if leaf_ok[g]:
                opts: list = [None]
            elif depth < 2:
                opts = []
            else:
                opts = [
                    (feats[cc], int(splits[feats[cc]][ii]))
                    for cc, ii in zip(*np.nonzero(split_ok[g]), strict=True)
                ]
            sides.append(opts[:per_side])
        f, j = feats[c], splits[feats[c]][i]
        for lo in sides[0]:
            for ro in sides[1]:
                out.append(split_tree((f, int(j)), lo, ro, thresholds, k))
                if len(out) >= limit:
                    return out
    return out


def split_tree(root, lo, ro, thresholds, k: int) -> Tree:
    """A tree of depth <= 2 with leaf values 0: root split ``root`` = (f, j), i.e.
    x[f] <= thresholds[f][j]; each child a leaf (None) or a split (f', j')."""
    f, j = root
    feature, threshold, left, right = [f], [thresholds[f][j]], [-1], [-1]
    for side, opt in ((0, lo), (1, ro)):
        node = len(feature)
        (left if side == 0 else right)[0] = node
        if opt is None:
            feature.append(LEAF), threshold.append(0.0), left.append(LEAF), right.append(LEAF)
            continue
        g, jj = opt
        feature.append(g), threshold.append(thresholds[g][jj])
        left.append(node + 1), right.append(node + 2)
        for _ in range(2):
            feature.append(LEAF), threshold.append(0.0), left.append(LEAF), right.append(LEAF)
    n = len(feature)
    return Tree(
        np.asarray(feature, np.int64),
        np.asarray(threshold, np.float32),
        np.asarray(left, np.int64),
        np.asarray(right, np.int64),
        np.zeros((n, k)),
    )
