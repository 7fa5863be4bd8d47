"""One decision tree that is pure on labelled grid cells: PACE's compress half in its
smallest form, a *born-again* tree (Vidal & Schiffer, ICML 2020) that only has to agree
with the original where the region says so.

Input: points in *grid coordinates* with the original's class index at each. Feature f's
coordinate is a cell of the original's sorted thresholds of f (cell k is
``(th[k-1], th[k]]``, as in :mod:`pace_cert.region.domain`), so every original split is
constant on a cell. A grid cell that holds no point is a *don't-care*: outside the
region, or not known to be inside. Output: a :class:`CellTree` whose leaves each hold
points of one label only (*pure*). When the points are every labelled cell of the region
(:mod:`pace_cert.learners.region_cells`), a pure tree is faithful on the whole region;
otherwise it is a candidate the oracle certifies or refutes with a new cell.

Construction (:func:`fit_cell_tree`), top-down:

* a node whose points span few sub-boxes (at most ``exact_boxes`` once the coordinates
  its points take are ranked and identical slices merged) is solved exactly:
  :func:`min_leaves` is the born-again dynamic program over every sub-box with
  don't-cares, the fewest leaves of any pure tree of the node (within the depth left);
* a larger node splits where the Gini impurity of its points' labels is smallest.

A tree is pure by construction on its points; a node that has used up the depth cap while
impure ends the fit with :class:`NoTreeWithinCaps`. Everything here is numpy over arrays:
no solver, no region, no float32 (the caller maps cuts to thresholds).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

LEAF = -1
INF = np.uint32(1 << 30)  # "no pure tree within the depth left"
#: a node's dense grid is built (and its slices merged) only when it has at most this many
#: times the exact program's sub-boxes before merging: merging rarely gains more, and
#: building and merging the grids of large sparse nodes costs more than their fit
MERGE_GAIN = 1000


class NoTreeWithinCaps(Exception):
    """No pure tree of the points within the depth or leaf cap was found (proved when
    ``proved``: the exact program covered the whole fit)."""

    def __init__(self, message: str, proved: bool = False) -> None:
        super().__init__(message)
        self.proved = proved


@dataclass(frozen=True)
class CellTree:
    """A decision tree over grid coordinates, struct of arrays, root node 0.

    Internal node i sends a point left iff ``coord[feature[i]] <= cut[i]``; a leaf has
    ``feature == left == right == -1`` and its class index in ``label`` (-1 at internal
    nodes). ``exact``: the whole tree came from :func:`min_leaves` at the root, so no
    pure tree of the points (within the depth cap given) has fewer leaves."""

    feature: np.ndarray  # int64 [n_nodes]
    cut: np.ndarray  # int64 [n_nodes]; -1 at leaves
    left: np.ndarray  # int64 [n_nodes]
    right: np.ndarray  # int64 [n_nodes]
    label: np.ndarray  # int64 [n_nodes]; -1 at internal nodes
    exact: bool = False

    @property
    def n_leaves(self) -> int:
        return int(np.sum(self.left == LEAF))

    @property
    def depth(self) -> int:
        depth = np.zeros(len(self.feature), np.int64)
        for i in range(len(self.feature)):  # children come after their parent
            if self.left[i] != LEAF:
                depth[self.left[i]] = depth[self.right[i]] = depth[i] + 1
        return int(depth.max())

    def apply(self, coords: np.ndarray) -> np.ndarray:
        """Leaf node reached by each row of grid coordinates ``coords`` [n, n_features]."""
        node = np.zeros(len(coords), np.int64)
        active = self.left[node] != LEAF
        while active.any():
            idx = np.flatnonzero(active)
            cur = node[idx]
            go_left = coords[idx, self.feature[cur]] <= self.cut[cur]
            node[idx] = np.where(go_left, self.left[cur], self.right[cur])
            active[idx] = self.left[node[idx]] != LEAF
        return node

    def predict(self, coords: np.ndarray) -> np.ndarray:
        """Class index of the leaf each row reaches."""
        return self.label[self.apply(coords)]

    def leaf_boxes(self, top: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Per leaf, the coordinates that reach it: ``lo[f] <= coord[f] <= hi[f]`` for
        every feature, within ``0 .. top[f]``."""
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        stack = [(0, np.zeros(len(top), np.int64), np.asarray(top, np.int64).copy())]
        while stack:
            i, lo, hi = stack.pop()
            if self.left[i] == LEAF:
                out[i] = (lo, hi)
                continue
            f, c = int(self.feature[i]), int(self.cut[i])
            hl, lr = hi.copy(), lo.copy()
            hl[f], lr[f] = min(hi[f], c), max(lo[f], c + 1)
            stack.append((int(self.left[i]), lo, hl))
            stack.append((int(self.right[i]), lr, hi))
        return out

    def relabel(self, labels: dict[int, int]) -> CellTree:
        """The same tree with the given leaves' labels replaced."""
        lab = self.label.copy()
        for leaf, k in labels.items():
            lab[leaf] = k
        return dataclasses.replace(self, label=lab)


# ------------------------------------------------------------------ the exact program


@dataclass(frozen=True)
class DenseGrid:
    """Labels on a dense product grid (-1: don't-care) and, per axis, the source
    coordinate range each grid position stands for: position j of axis a covers
    coordinates ``lo[a][j] .. hi[a][j]`` of feature ``features[a]``."""

    labels: np.ndarray  # int16, one axis per feature in ``features``
    features: tuple[int, ...]
    lo: tuple[np.ndarray, ...]
    hi: tuple[np.ndarray, ...]


def dense_grid(
    coords: np.ndarray, labels: np.ndarray, max_cells: int, box_limit: float | None = None
) -> DenseGrid | None:
    """The points as a dense grid over the coordinates they take (features where they
    all agree are left out: no split on them can separate two of the points); None when
    that grid would have more than ``max_cells`` cells, or more than ``box_limit``
    sub-boxes before merging."""
    feats, ranks, los = [], [], []
    for f in range(coords.shape[1]):
        u, r = _ranks(coords[:, f])
        if len(u) > 1:
            feats.append(f)
            ranks.append(r)
            los.append(u)
    shape = tuple(len(u) for u in los)
    if float(np.prod([float(a) for a in shape])) > max_cells:
        return None
    if box_limit is not None and n_boxes(shape) > box_limit:
        return None
    G = np.full(shape, -1, np.int16)
    if feats:
        G[tuple(ranks)] = labels
    else:
        G = np.full((), int(labels[0]), np.int16)
    return DenseGrid(G, tuple(feats), tuple(los), tuple(los))


def _ranks(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of non-negative integers ``col`` (ascending) and each entry's
    rank among them: ``np.unique(col, return_inverse=True)`` by counting, not sorting."""
    present = np.bincount(col) > 0
    u = np.flatnonzero(present)
    rank = np.cumsum(present) - 1
    return u, rank[col]


def merge_slices(grid: DenseGrid) -> DenseGrid:
    """Merge neighbouring positions of an axis when one slice's labels are implied by the
    other's (every labelled cell of one holds the other's label): a tree never needs to
    cut between them, so the fewest leaves is unchanged (a cut between them can move to
    the dominating side: the points it moves then take the leaves their twins take).
    Axes left with one position are dropped."""
    G = grid.labels
    lo, hi = list(grid.lo), list(grid.hi)
    changed = True
    while changed:
        changed = False
        for ax in range(G.ndim):
            G, lo[ax], hi[ax], merged = _merge_axis(G, ax, lo[ax], hi[ax])
            changed = changed or merged
    keep = [ax for ax in range(G.ndim) if G.shape[ax] > 1]
    if len(keep) < G.ndim:
        G = G.reshape(tuple(G.shape[ax] for ax in keep)) if keep else _pick_any(G)
    return DenseGrid(
        G,
        tuple(grid.features[ax] for ax in keep),
        tuple(np.asarray(lo[ax]) for ax in keep),
        tuple(np.asarray(hi[ax]) for ax in keep),
    )


def _merge_axis(
    G: np.ndarray, ax: int, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """One pass along axis ``ax``: each run of neighbouring slices where the next is
    implied by the run so far (or implies it) becomes one slice, labelled where either
    is. Returns the grid, the positions' coordinate ranges and whether any merged."""
    V = np.moveaxis(G, ax, 0)
    slices, los, his = [V[0:1].copy()], [lo[0]], [hi[0]]  # length-1 slabs keep the axis
    for k in range(1, V.shape[0]):
        a, b = slices[-1], V[k : k + 1]
        same = a == b
        if np.all(same | (a < 0)) or np.all(same | (b < 0)):
            np.copyto(a, b, where=a < 0)
            his[-1] = hi[k]
        else:
            slices.append(b.copy())
            los.append(lo[k])
            his.append(hi[k])
    if len(slices) == V.shape[0]:
        return G, lo, hi, False
    out = np.moveaxis(np.concatenate(slices), 0, ax)
    return out, np.asarray(los), np.asarray(his), True


def _pick_any(G: np.ndarray) -> np.ndarray:
    """A 0-d grid of one merged cell: its label (-1 if every cell was a don't-care)."""
    lab = G[G >= 0]
    return np.full((), int(lab[0]) if len(lab) else -1, np.int16)


def n_boxes(shape: tuple[int, ...]) -> int:
    """Sub-boxes of a grid of this shape: prod over axes of a (a + 1) / 2."""
    return int(np.prod([a * (a + 1) // 2 for a in shape], dtype=np.float64))


def _intervals(a: int) -> list[tuple[int, int]]:
    """Every interval [l, r] of 0..a-1, shortest first (its index is its position)."""
    return [(lo, lo + w) for w in range(a) for lo in range(a - w)]


def _mask_dtype(n_classes: int) -> type:
    for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
        if n_classes <= np.iinfo(dt).bits:
            return dt
    raise ValueError("more than 64 classes")


def _one(i: int) -> slice:
    return slice(i, i + 1)


def box_label_masks(G: np.ndarray, n_classes: int) -> np.ndarray:
    """Per sub-box (each axis indexed as in :func:`_intervals`): the bit set of the
    labels its cells hold."""
    dt = _mask_dtype(n_classes)
    M = np.where(G >= 0, np.left_shift(dt(1), np.maximum(G, 0).astype(dt)), 0).astype(dt)
    for ax in range(G.ndim):
        parts = []
        for lo, hi in _intervals(G.shape[ax]):
            sl = [slice(None)] * M.ndim
            sl[ax] = slice(lo, hi + 1)
            parts.append(np.bitwise_or.reduce(M[tuple(sl)], axis=ax, keepdims=True))
        M = np.concatenate(parts, axis=ax)
    return M


def min_leaves(G: np.ndarray, n_classes: int, max_depth: int | None = None) -> list[np.ndarray]:
    """The born-again program with don't-cares: for every sub-box B of the grid ``G``
    (labels, -1 don't-care), phi(B) = the fewest leaves of a tree, of depth at most
    ``max_depth`` (None: any), whose every leaf holds one label:

        phi(B) = 1 if B holds at most one label, else min over cuts of phi(L) + phi(R)

    (``INF`` when no such tree exists within the depth). Without a cap the cuts are
    relaxed axis by axis until nothing changes; with a cap, layer d allows depth d.
    Returns the layers (one array without a cap), each indexed per axis as in
    :func:`_intervals`; the last is phi for the whole depth."""
    M = box_label_masks(G, n_classes)
    pure = (M & (M - 1)) == 0
    phi = np.where(pure, np.uint32(1), INF).astype(np.uint32)
    ivs = [_intervals(a) for a in G.shape]
    pos = [{iv: i for i, iv in enumerate(v)} for v in ivs]

    def relax(dst: np.ndarray, src: np.ndarray) -> bool:
        """dst(B) = min(dst(B), min over cuts of src(L) + src(R)); True if it changed."""
        changed = False
        for ax in range(G.ndim):
            for lo, hi in ivs[ax]:
                if hi == lo:
                    continue
                at = [slice(None)] * G.ndim
                at[ax] = _one(pos[ax][(lo, hi)])  # a length-1 slice keeps the axis
                cur = dst[tuple(at)]
                best = cur.copy()
                for s in range(lo, hi):
                    a, b = list(at), list(at)
                    a[ax], b[ax] = _one(pos[ax][(lo, s)]), _one(pos[ax][(s + 1, hi)])
                    np.minimum(best, src[tuple(a)] + src[tuple(b)], out=best)
                np.minimum(best, INF, out=best)
                if (best < cur).any():
                    dst[tuple(at)] = best
                    changed = True
        return changed

    if max_depth is None:
        while relax(phi, phi):
            pass
        return [phi]
    layers = [phi]
    for _ in range(max_depth):
        nxt = layers[-1].copy()
        if not relax(nxt, layers[-1]):
            break
        layers.append(nxt)
    return layers


@dataclass
class _Builder:
    """Nodes of a :class:`CellTree` as they are made (lists, frozen by :meth:`tree`)."""

    feature: list[int]
    cut: list[int]
    left: list[int]
    right: list[int]
    label: list[int]

    @classmethod
    def empty(cls) -> _Builder:
        return cls([], [], [], [], [])

    def add(self) -> int:
        for arr in (self.feature, self.cut, self.left, self.right, self.label):
            arr.append(LEAF)
        return len(self.feature) - 1

    def leaf(self, node: int, label: int) -> None:
        self.label[node] = label

    def split(self, node: int, feature: int, cut: int) -> tuple[int, int]:
        self.feature[node], self.cut[node] = feature, cut
        left, right = self.add(), self.add()
        self.left[node], self.right[node] = left, right
        return left, right

    def tree(self, exact: bool = False) -> CellTree:
        def a(v: list[int]) -> np.ndarray:
            return np.asarray(v, np.int64)

        return CellTree(
            a(self.feature), a(self.cut), a(self.left), a(self.right), a(self.label), exact
        )


def _build_from_program(
    out: _Builder,
    node: int,
    grid: DenseGrid,
    layers: list[np.ndarray],
    n_classes: int,
    choose_cut: Callable[[int, int, int], int],
    capped: bool,
) -> None:
    """Write the tree the program's layers imply for ``grid`` under ``node``: at every
    box a cut whose sides sum to its phi (ties: the more balanced sides). ``capped``:
    the layers are per depth (children read the layer above), else one fixpoint."""
    G = grid.labels
    M = box_label_masks(G, n_classes)
    ivs = [_intervals(a) for a in G.shape]
    pos = [{iv: i for i, iv in enumerate(v)} for v in ivs]
    full = tuple((0, a - 1) for a in G.shape)
    stack = [(node, full, len(layers) - 1)]
    while stack:
        at, box, d = stack.pop()
        idx = tuple(pos[ax][iv] for ax, iv in enumerate(box))
        mask = int(M[idx]) if G.ndim else _grid_mask(G)
        if mask & (mask - 1) == 0:
            out.leaf(at, _lowest_bit(mask) if mask else _nearest_label(G, box))
            continue
        target = int(layers[d][idx])
        below = layers[d - 1] if capped else layers[0]
        best = None
        for ax, (lo, hi) in enumerate(box):
            for s in range(lo, hi):
                a, b = list(idx), list(idx)
                a[ax], b[ax] = pos[ax][(lo, s)], pos[ax][(s + 1, hi)]
                pa, pb = int(below[tuple(a)]), int(below[tuple(b)])
                if pa + pb == target and (best is None or max(pa, pb) < best[0]):
                    best = (max(pa, pb), ax, s)
        if best is None:  # cannot happen for a finite phi
            raise RuntimeError("internal error: the exact program's tree has no cut")
        _, ax, s = best
        f = grid.features[ax]
        cut = choose_cut(f, int(grid.hi[ax][s]), int(grid.lo[ax][s + 1]))
        left, right = out.split(at, f, cut)
        lo, hi = box[ax]
        d_child = d - 1 if capped else 0
        stack.append((right, (*box[:ax], (s + 1, hi), *box[ax + 1 :]), d_child))
        stack.append((left, (*box[:ax], (lo, s), *box[ax + 1 :]), d_child))


def _grid_mask(G: np.ndarray) -> int:
    lab = np.unique(G[G >= 0])
    return int(np.bitwise_or.reduce(np.left_shift(1, lab))) if len(lab) else 0


def _lowest_bit(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


def _nearest_label(G: np.ndarray, box: tuple[tuple[int, int], ...]) -> int:
    """A box of don't-cares only: any label is pure; take the most common one of the
    grid (a guess where nothing is known)."""
    lab = G[G >= 0]
    return int(np.bincount(lab).argmax()) if len(lab) else 0


# ------------------------------------------------------------------ the greedy split


def _integer(coords: np.ndarray) -> np.ndarray:
    """Grid coordinates as they come (int16 from :class:`~pace_cert.learners.
    region_cells.LabelledCells`, int64 otherwise): integers, not copied."""
    coords = np.asarray(coords)
    if not np.issubdtype(coords.dtype, np.integer):
        coords = coords.astype(np.int64)
    return coords


def gini_split(coords: np.ndarray, labels: np.ndarray, n_classes: int) -> tuple[int, int, int]:
    """The cut of the points with the smallest Gini impurity of the two sides' labels
    (sum over sides of n - sum_k n_k^2 / n): (feature, left coordinate, right
    coordinate), the two coordinates being consecutive values the points take. Ties:
    the more balanced cut, then the lowest feature."""
    best: tuple[float, int, int, int, int] | None = None
    n = len(labels)
    for f in range(coords.shape[1]):
        col = coords[:, f].astype(np.int64)  # coordinates may be stored as int16
        counts = np.bincount(col * n_classes + labels, minlength=(int(col.max()) + 1) * n_classes)
        counts = counts.reshape(-1, n_classes).astype(np.float64)
        u = np.flatnonzero(counts.sum(axis=1))
        if len(u) < 2:
            continue
        counts = counts[u]
        left = np.cumsum(counts, axis=0)[:-1]
        right = counts.sum(axis=0) - left
        nl, nr = left.sum(axis=1), right.sum(axis=1)
        imp = nl - (left**2).sum(axis=1) / nl + nr - (right**2).sum(axis=1) / nr
        j = int(np.argmin(imp + 1e-9 * np.abs(nl - nr) / n))
        key = (float(imp[j]), int(abs(nl[j] - nr[j])), f, int(u[j]), int(u[j + 1]))
        if best is None or key[:3] < best[:3]:
            best = key
    if best is None:
        raise ValueError("points with different labels share every coordinate")
    return best[2], best[3], best[4]


# ------------------------------------------------------------------ the fit


def fit_cell_tree(
    coords: np.ndarray,
    labels: np.ndarray,
    n_classes: int,
    *,
    max_depth: int | None = None,
    exact_boxes: int = 2_000_000,
    dense_cells: int = 8_000_000,
    choose_cut: Callable[[int, int, int], int] | None = None,
    stop: Callable[[], bool] | None = None,
) -> CellTree:
    """A tree pure on the points (grid coordinates ``coords`` [n, n_features], class
    indices ``labels``), of depth at most ``max_depth`` (None: any).

    Nodes whose merged dense grid has at most ``exact_boxes`` sub-boxes are solved by
    :func:`min_leaves` (fewest leaves within the depth left); larger ones split by
    :func:`gini_split` (as do nodes whose points span a dense grid of more than
    ``dense_cells`` cells before merging). ``choose_cut(f, a, b)`` picks the cut
    coordinate c, a <= c < b, between two consecutive coordinates the points take
    (default a). Once ``stop()``
    is true, nodes still to split go greedy (no exact program). Raises
    :class:`NoTreeWithinCaps` when a node at the depth cap is impure."""
    coords = _integer(coords)
    labels = np.asarray(labels, np.int64)
    if len(labels) == 0:
        raise ValueError("no labelled points")
    cut_at = choose_cut or (lambda _f, a, _b: a)
    out = _Builder.empty()
    root = out.add()
    exact_root = False
    stack = [(root, np.arange(len(labels)), 0)]
    while stack:
        node, idx, depth = stack.pop()
        lab = labels[idx]
        if np.all(lab == lab[0]):
            out.leaf(node, int(lab[0]))
            exact_root = exact_root or node == root  # one leaf: nothing is smaller
            continue
        left_depth = None if max_depth is None else max_depth - depth
        if left_depth is not None and left_depth <= 0:
            raise NoTreeWithinCaps(
                f"points of different labels are left at depth {max_depth}", proved=node == root
            )
        dense = (
            None
            if stop is not None and stop()
            else dense_grid(coords[idx], lab, dense_cells, MERGE_GAIN * exact_boxes)
        )
        if dense is not None:
            grid = merge_slices(dense)
            if grid.labels.ndim and n_boxes(grid.labels.shape) <= exact_boxes:
                layers = min_leaves(grid.labels, n_classes, left_depth)
                root_phi = int(layers[-1][(-1,) * grid.labels.ndim])
                if root_phi >= INF:
                    raise NoTreeWithinCaps(
                        f"no tree of depth <= {max_depth} is pure on the points",
                        proved=node == root,
                    )
                _build_from_program(
                    out, node, grid, layers, n_classes, cut_at, left_depth is not None
                )
                exact_root = exact_root or node == root
                continue
        f, a, b = gini_split(coords[idx], lab, n_classes)
        c = cut_at(f, a, b)
        left, right = out.split(node, f, c)
        go_left = coords[idx, f] <= c
        stack.append((right, idx[~go_left], depth + 1))
        stack.append((left, idx[go_left], depth + 1))
    return out.tree(exact=exact_root)


def graft(tree: CellTree, leaf: int, sub: CellTree) -> CellTree:
    """``tree`` with its node ``leaf`` (a leaf) replaced by the tree ``sub`` (its root
    takes the leaf's place, the rest is appended); not exact any more."""
    n = len(tree.feature)
    shift = np.where(sub.left == LEAF, LEAF, sub.left + n - 1)  # sub node j > 0 -> n + j - 1
    shift_r = np.where(sub.right == LEAF, LEAF, sub.right + n - 1)
    feature = np.concatenate([tree.feature, sub.feature[1:]])
    cut = np.concatenate([tree.cut, sub.cut[1:]])
    left = np.concatenate([tree.left, shift[1:]])
    right = np.concatenate([tree.right, shift_r[1:]])
    label = np.concatenate([tree.label, sub.label[1:]])
    feature[leaf], cut[leaf], label[leaf] = sub.feature[0], sub.cut[0], sub.label[0]
    left[leaf], right[leaf] = shift[0], shift_r[0]
    return CellTree(feature, cut, left, right, label, exact=False)


def refit_leaves(
    tree: CellTree,
    coords: np.ndarray,
    labels: np.ndarray,
    n_classes: int,
    *,
    max_depth: int | None = None,
    **fit: object,
) -> CellTree:
    """``tree`` made pure on the points again where new points broke it: every leaf
    holding points of another label than its own is replaced by a tree fit on its
    points alone (:func:`fit_cell_tree`, within the depth left), the rest kept. A
    counterexample round adds a few points: this costs their leaves' fits, not a whole
    fit. Raises :class:`NoTreeWithinCaps` as the fit does."""
    coords = _integer(coords)
    labels = np.asarray(labels, np.int64)
    at = tree.apply(coords)
    depth = np.zeros(len(tree.feature), np.int64)
    for i in range(len(tree.feature)):  # children come after their parent here too
        if tree.left[i] != LEAF:
            depth[tree.left[i]] = depth[tree.right[i]] = depth[i] + 1
    out = tree
    for leaf in np.unique(at):
        mine = at == leaf
        if np.all(labels[mine] == tree.label[leaf]):
            continue
        left = None if max_depth is None else max_depth - int(depth[leaf])
        sub = fit_cell_tree(coords[mine], labels[mine], n_classes, max_depth=left, **fit)
        out = (
            graft(out, int(leaf), sub)
            if len(sub.feature) > 1
            else out.relabel({int(leaf): int(sub.label[0])})
        )
    return out if out is tree else dataclasses.replace(out, exact=False)
