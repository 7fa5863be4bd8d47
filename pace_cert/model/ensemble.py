"""Internal model (IR) of a tree ensemble classifier.

An ensemble is a tuple of trees stored as parallel numpy arrays (scikit-learn's
struct-of-arrays layout) plus per-tree weights, per-class base scores and the class
labels. Every supported ONNX pattern is reduced to one decision rule:

    S_k(x) = base_k + sum_t weight_t * value_t[leaf_t(x), k]
    label(x) = classes[argmax_k S_k(x)]        (ties go to the lowest index)

Splits are normalised to ``x[feature] <= threshold`` with a float32 threshold: a
``BRANCH_LT`` split ``x < t`` on float32 inputs equals ``x <= prev_float32(t)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

LEAF = -1


@dataclass(frozen=True)
class Tree:
    """One binary decision tree.

    Invariants (checked at construction): node 0 is the root; a leaf has
    ``left == right == -1`` and ``feature == -1``; internal nodes have both
    children in range and greater than their own index is *not* required, but the
    graph is a tree (every node but the root has exactly one parent, no cycles);
    thresholds are float32; ``value`` has one row per node and one column per class
    (only leaf rows are meaningful).
    """

    feature: np.ndarray  # int64 [n_nodes], -1 at leaves
    threshold: np.ndarray  # float32 [n_nodes]; go left iff x[feature] <= threshold
    left: np.ndarray  # int64 [n_nodes], -1 at leaves
    right: np.ndarray  # int64 [n_nodes], -1 at leaves
    value: np.ndarray  # float64 [n_nodes, n_classes]

    def __post_init__(self) -> None:
        n = len(self.feature)
        if n == 0:
            raise ValueError("tree has no nodes")
        for name in ("threshold", "left", "right"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"tree array {name} has wrong length")
        if self.value.ndim != 2 or self.value.shape[0] != n:
            raise ValueError("tree value must be [n_nodes, n_classes]")
        if self.threshold.dtype != np.float32:
            raise ValueError("tree thresholds must be float32")
        is_leaf = self.left == LEAF
        if np.any(is_leaf != (self.right == LEAF)) or np.any(is_leaf != (self.feature == LEAF)):
            raise ValueError("a node has exactly one child or a leaf has a feature")
        children = np.concatenate([self.left[~is_leaf], self.right[~is_leaf]])
        if children.size and (children.min() < 1 or children.max() >= n):
            raise ValueError("child index out of range (or pointing at the root)")
        if len(np.unique(children)) != len(children) or len(children) != n - 1:
            raise ValueError("nodes are not connected as a single tree")
        # reachability from the root excludes cycles disconnected from it
        seen = np.zeros(n, bool)
        stack = [0]
        while stack:
            i = stack.pop()
            if seen[i]:
                raise ValueError("cycle in tree")
            seen[i] = True
            if not is_leaf[i]:
                stack.extend((int(self.left[i]), int(self.right[i])))
        if not seen.all():
            raise ValueError("unreachable nodes in tree")

    @property
    def leaves(self) -> np.ndarray:
        """Indices of the leaf nodes, ascending."""
        return np.flatnonzero(self.left == LEAF)

    @cached_property
    def depth(self) -> int:
        """Length of the longest root-to-leaf path (a single leaf has depth 0; computed
        once per tree)."""
        depth = np.zeros(len(self.feature), np.int64)
        order = [0]
        for i in order:
            if self.left[i] != LEAF:
                for c in (self.left[i], self.right[i]):
                    depth[c] = depth[i] + 1
                    order.append(int(c))
        return int(depth.max())

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Leaf node index reached by each row of float32 ``X`` [n, n_features]."""
        X = np.asarray(X, dtype=np.float32)
        node = np.zeros(len(X), np.int64)
        active = self.left[node] != LEAF
        while active.any():
            idx = np.flatnonzero(active)
            cur = node[idx]
            go_left = X[idx, self.feature[cur]] <= self.threshold[cur]
            node[idx] = np.where(go_left, self.left[cur], self.right[cur])
            active[idx] = self.left[node[idx]] != LEAF
        return node

    def paths(self) -> dict[int, list[tuple[int, float, bool]]]:
        """For each leaf, the conditions on its path: (feature, threshold, goes_left)."""
        out: dict[int, list[tuple[int, float, bool]]] = {}
        stack: list[tuple[int, list[tuple[int, float, bool]]]] = [(0, [])]
        while stack:
            i, conds = stack.pop()
            if self.left[i] == LEAF:
                out[i] = conds
                continue
            f, th = int(self.feature[i]), float(self.threshold[i])
            stack.append((int(self.left[i]), [*conds, (f, th, True)]))
            stack.append((int(self.right[i]), [*conds, (f, th, False)]))
        return out


def structure_key(tree: Tree) -> bytes:
    """Bytes equal for two trees iff they have the same nodes, children and splits
    (thresholds compared as float32 bit patterns; leaf rows' thresholds ignored)."""
    leaf = tree.left == LEAF
    th = np.where(leaf, np.float32(0), tree.threshold).astype(np.float32)
    parts = (
        np.asarray(tree.feature, np.int64),
        th,
        np.asarray(tree.left, np.int64),
        np.asarray(tree.right, np.int64),
    )
    return b"|".join(p.tobytes() for p in parts)


@dataclass(frozen=True)
class FlatForest:
    """Trees stacked into one node array (per-tree offsets) so that every tree of a
    forest descends one level per numpy step: ``depth`` steps over an [n, n_trees] array
    of node indices instead of a Python loop over trees.

    ``child[2 i]`` / ``child[2 i + 1]`` are node i's left / right child (global
    indices); a leaf points to itself on both sides (feature 0, threshold +inf), so a
    row that reached its leaf stays there. Same comparison as :meth:`Tree.apply`
    (float32 ``x[feature] <= threshold`` goes left, NaN goes right), so the leaves are
    identical.
    """

    feature: np.ndarray  # intp [total nodes]; 0 at leaves
    threshold: np.ndarray  # float32 [total nodes]; +inf at leaves
    child: np.ndarray  # intp [2 * total nodes]: left, right of each node
    offset: np.ndarray  # intp [n_trees]: global index of each tree's root
    depth: int  # longest root-to-leaf path over the trees

    CHUNK = 1 << 18  # node indices held at once (rows x trees)
    SUM_CELLS = 1 << 21  # leaf indices held at once by :meth:`sums` (rows x trees)

    @classmethod
    def of(cls, trees: Sequence[Tree]) -> FlatForest:
        if not trees:
            z = np.zeros(0, np.intp)
            return cls(z, np.zeros(0, np.float32), z, z, 0)
        sizes = np.array([len(t.feature) for t in trees], np.intp)
        offset = np.cumsum(sizes) - sizes
        shift = np.repeat(offset, sizes)  # each node's tree offset
        left = np.concatenate([t.left for t in trees]).astype(np.intp)
        right = np.concatenate([t.right for t in trees]).astype(np.intp)
        leaf = left == LEAF
        own = np.arange(len(left), dtype=np.intp)
        child = np.stack([np.where(leaf, own, left + shift), np.where(leaf, own, right + shift)])
        feature = np.concatenate([t.feature for t in trees]).astype(np.intp)
        threshold = np.concatenate([t.threshold for t in trees]).astype(np.float32)
        return cls(
            np.where(leaf, 0, feature),
            np.where(leaf, np.float32(np.inf), threshold),
            child.T.ravel(),
            offset,
            max(t.depth for t in trees),
        )

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Leaf node index (within its tree) per row and tree: int64 [n, n_trees]."""
        X = np.asarray(X, dtype=np.float32)
        n, T = len(X), len(self.offset)
        out = np.empty((n, T), np.int64)
        step = max(1, self.CHUNK // max(T, 1))
        for lo in range(0, n, step):
            chunk = np.ascontiguousarray(X[lo : lo + step])
            flat_x = chunk.ravel()  # x[r, f] is flat_x[r * n_features + f]
            row_start = (np.arange(len(chunk), dtype=np.intp) * chunk.shape[1])[:, None]
            node = np.broadcast_to(self.offset, (len(chunk), T)).copy()
            for _ in range(self.depth):
                x = np.take(flat_x, row_start + np.take(self.feature, node))
                right = ~(x <= np.take(self.threshold, node))  # NaN goes right
                node = np.take(self.child, 2 * node + right)
            out[lo : lo + step] = node - self.offset
        return out

    def sums(self, tables: Sequence[np.ndarray], base: np.ndarray, X: np.ndarray) -> np.ndarray:
        """``tree_sums(tables, base, self.apply(X))``, a block of rows at a time: the
        leaf indices held at once are at most about ``SUM_CELLS`` (rows x trees), not
        every row's (a screening pool of 200,000 rows x 100 trees is 160 MB of int64,
        twice). Each row's sum is its own, so the values are the same."""
        X = np.asarray(X, dtype=np.float32)
        step = max(1, self.SUM_CELLS // max(len(self.offset), 1))
        if len(X) <= step:
            return tree_sums(tables, base, self.apply(X))
        out = np.empty((len(X), len(base)), np.float64)
        for lo in range(0, len(X), step):
            out[lo : lo + step] = tree_sums(tables, base, self.apply(X[lo : lo + step]))
        return out


@dataclass(frozen=True)
class FoldedSplit:
    """One split threshold of the trees as exported, on the transformed input, and the
    raw-input split it became (:class:`InputFolding`).

    ``how`` says what the raw split is: ``"same"`` (transform(x) <= threshold iff
    x <= raw, children kept), ``"swapped"`` (a decreasing transform: transform(x) <=
    threshold iff not x <= raw, so the children are swapped), ``"always-left"`` /
    ``"always-right"`` (the split is constant on every non-NaN float32 input: the node
    is replaced by that child; ``raw`` is None)."""

    feature: int
    threshold: float  # float32, x' <= threshold on the transformed value x'
    raw: float | None  # float32, x <= raw on the model input
    how: str  # "same" | "swapped" | "always-left" | "always-right"


@dataclass(frozen=True)
class InputFolding:
    """Per-feature monotone transforms between the model input and the trees (e.g.
    skl2onnx's Imputer and Scaler of a Pipeline), folded into the split thresholds: the
    IR's trees read the raw input, and split ``x_f <= raw`` (children swapped when the
    transform decreases) holds exactly when the exported split ``transform(x)_f <=
    threshold`` does, for every non-NaN float32 x (each boundary found by a search over
    float32 and confirmed with onnxruntime on both of its sides).

    ``ops`` names the transforms in input order; ``splits`` lists every distinct
    (feature, threshold) of the exported trees and what it became."""

    ops: tuple[str, ...]
    splits: tuple[FoldedSplit, ...]


@dataclass(frozen=True)
class Ensemble:
    """A weighted tree ensemble with an argmax decision (ties to the lowest index).

    ``margin_scale`` (sigma) converts score differences to the user's margin unit:
    for voting ensembles (random forests, AdaBoost) a normalised margin
    (S_a - S_b) / sigma is a vote share in [-1, 1]; for margin ensembles (gradient
    boosting) sigma = 1 and margins are raw scores.

    ``family`` names the model family as the reader recognised it (e.g. "LightGBM
    LGBMClassifier (onnxmltools)"; empty: derived from ``pattern``, see
    :func:`family_of`); ``estimators`` counts the trained estimators when a tree is not
    one (gradient boosting trains one tree per class and round: 100 estimators x 3
    classes = 300 trees; 0 means one estimator per tree); ``input_folding`` records
    the transforms folded into the thresholds (None: the trees read the input as is).
    None of the three changes the decision rule.
    """

    trees: tuple[Tree, ...]
    weights: np.ndarray  # float64 [n_trees]
    base: np.ndarray  # float64 [n_classes]
    classes: np.ndarray  # labels, int64 or str, [n_classes]
    n_features: int
    kind: str = "voting"  # "voting" | "margin"
    margin_scale: float = 1.0
    pattern: str = "ir"
    runtime_guard: float = 0.0  # bound on the runtime's float32 error of S_a - S_b
    origin: tuple[str, ...] = field(default=())  # per tree: "original" | "new"
    family: str = ""
    estimators: int = 0  # trained estimators; 0: one per tree
    input_folding: InputFolding | None = None

    def __post_init__(self) -> None:
        k = len(self.classes)
        if k < 2:
            raise ValueError("an ensemble needs at least two classes")
        if len(self.weights) != len(self.trees):
            raise ValueError("one weight per tree")
        if self.base.shape != (k,):
            raise ValueError("one base score per class")
        for t in self.trees:
            if t.value.shape[1] != k:
                raise ValueError("tree values need one column per class")
            used = t.feature[t.feature != LEAF]
            if used.size and (used.min() < 0 or used.max() >= self.n_features):
                raise ValueError("tree uses a feature index out of range")
        if self.origin and len(self.origin) != len(self.trees):
            raise ValueError("origin must name every tree")
        if not np.isfinite(self.weights).all() or not np.isfinite(self.base).all():
            raise ValueError("weights and base scores must be finite")
        if self.kind not in ("voting", "margin"):
            raise ValueError("kind is voting or margin")
        if self.estimators < 0 or self.estimators > max(len(self.trees), 1):
            raise ValueError("estimators must be between 0 and the number of trees")

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def n_trees(self) -> int:
        return len(self.trees)

    @property
    def n_estimators(self) -> int:
        """Trained estimators (a gradient-boosting round of a K-class model is one
        estimator of K trees); the number of trees unless the reader said otherwise."""
        return self.estimators or self.n_trees

    @property
    def max_depth(self) -> int:
        return max((t.depth for t in self.trees), default=0)

    @property
    def n_leaves(self) -> int:
        return int(sum(len(t.leaves) for t in self.trees))

    @cached_property
    def flat(self) -> FlatForest:
        """The trees stacked for evaluation (built once per ensemble)."""
        return FlatForest.of(self.trees)

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Leaf index per tree for each row: int64 [n, n_trees]."""
        return self.flat.apply(X)

    def scores(self, X: np.ndarray) -> np.ndarray:
        """Class scores S(x) in float64 (each term exact; the sum rounds once per add,
        trees in order)."""
        return self.flat.sums([w * t.value for w, t in zip(self.weights, self.trees)], self.base, X)

    def predict_index(self, X: np.ndarray) -> np.ndarray:
        """Index of the predicted class (float64 scores, ties to the lowest index)."""
        return np.argmax(self.scores(X), axis=1)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.classes[self.predict_index(X)]


PATTERN_FAMILIES = {
    "pace-cert-argmax": "pace-cert compressed model",
    "skl2onnx-tree-ensemble-classifier": "scikit-learn tree ensemble (skl2onnx)",
    "skl2onnx-adaboost-samme": "scikit-learn AdaBoostClassifier, SAMME (skl2onnx)",
    "ir": "in-memory ensemble",
}


def family_of(ens: Ensemble) -> str:
    """The model family: what the reader named (``ens.family``), else the family of its
    exporter pattern (a compressed model's family does not depend on how it was made)."""
    if ens.family:
        return ens.family
    prefix = ens.pattern.split("/")[0]
    return PATTERN_FAMILIES.get(prefix, prefix)


def tree_sums(tables: Sequence[np.ndarray], base: np.ndarray, leaves: np.ndarray) -> np.ndarray:
    """``base + sum_t tables[t][leaves[:, t]]`` in float64 [n, K], added tree by tree in
    order (the same rounding as a loop over the trees). ``tables[t]`` is per node of
    tree t, [n_nodes, K]; ``leaves`` as from :meth:`FlatForest.apply`."""
    s = np.tile(np.asarray(base, np.float64), (len(leaves), 1))
    by_tree = np.ascontiguousarray(leaves.T)  # one contiguous row of leaves per tree
    buf = np.empty_like(s)  # one gather buffer: 3x faster than s += tab[...] at 50k rows
    for t, tab in enumerate(tables):
        np.take(np.asarray(tab, np.float64), by_tree[t], axis=0, out=buf)
        s += buf
    return s


def prev_float32(x: float) -> np.float32:
    """Largest float32 strictly below ``x`` (x a float32 value)."""
    return np.nextafter(np.float32(x), np.float32(-np.inf), dtype=np.float32)


def next_float32(x: float) -> np.float32:
    """Smallest float32 strictly above ``x`` (x a float32 value)."""
    return np.nextafter(np.float32(x), np.float32(np.inf), dtype=np.float32)


def float32_floor(x: float) -> np.float32:
    """Largest float32 ``<= x`` for a float64 ``x``.

    For every float32 value v: ``v <= x`` iff ``v <= float32_floor(x)``.
    """
    f = np.float32(x)
    if float(f) > x:
        f = prev_float32(f)
    return f


def summation_error_bound(n_terms: int, abs_sum: float) -> float:
    """Bound on |fl32(sum) - sum| for n float32 terms added in any order.

    Standard bound gamma_{n-1} * sum|a_i| with unit roundoff u = 2**-24 and
    gamma_m = m u / (1 - m u); we add one more term for a final base addition and
    double it as a safety margin for fused/vectorised kernels.
    """
    u = 2.0**-24
    m = n_terms + 1
    if m * u >= 0.5:
        raise ValueError("too many terms for the float32 error bound")
    return 2.0 * (m * u / (1 - m * u)) * abs_sum


FLOAT32_SAFE_SUM = 2.0**120
"""Largest accepted magnitude bound of a float32 class score, sum over trees of
max|leaf value| plus max|base|: below it onnxruntime's float32 sums cannot overflow.

float32 overflows to inf at 2**128 (the largest finite value is (2 - 2**-23) 2**127).
Every partial sum of the terms (leaf values and base, added in any order) is at most
(1 + gamma_n) times the sum of their magnitudes, and :func:`summation_error_bound`
only accepts n with gamma_n < 1; a bound of 2**120 therefore keeps every intermediate
result at least 2**7 below the overflow threshold, and the rounding analysis (which
assumes no overflow) stays valid."""


def float32_sum_guard(trees, base: np.ndarray) -> float:
    """Bound on onnxruntime's float32 error of a score difference S_a - S_b, where each
    class score is base + one leaf value per tree summed in float32 in any order.

    Raises ValueError when the magnitude bound sum_t max|leaf value| + max|base| exceeds
    :data:`FLOAT32_SAFE_SUM`: onnxruntime's float32 sums could then overflow to inf
    (e.g. 3e38 + 3e38 - 3e38 - 3e38 is inf, not 0), which no rounding bound covers."""
    mags = sum(float(np.abs(t.value[t.leaves]).max()) for t in trees)
    total = mags + float(np.abs(base).max(initial=0.0))
    if not total <= FLOAT32_SAFE_SUM:
        raise ValueError(
            f"class scores of magnitude up to {total:.3g} could overflow float32 "
            f"(the float32 error bound needs them within {FLOAT32_SAFE_SUM:.3g})"
        )
    return 2.0 * summation_error_bound(len(trees), total)
