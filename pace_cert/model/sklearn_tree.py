"""A one-tree model as a fitted scikit-learn ``DecisionTreeClassifier`` (for
``export_text``, ``plot_tree``).

The IR's tree (:class:`~pace_cert.model.ensemble.Tree`) goes left iff float32 ``x <=
threshold`` (a float32); scikit-learn casts X to float32 and compares it with a float64
threshold by ``<=``. The float64 copy of a float32 threshold is exact, so both trees
send every non-NaN float32 input to the same leaf. Each leaf predicts the label
onnxruntime gives the model's ONNX file at a point of that leaf (:func:`leaf_points`):
one tree's label is a function of its leaf, so the labels agree on every input
(NaN aside: it lies outside every certificate; here it goes right, as in the IR).
Leaf values are one-hot (the certified output is a label, not a probability); node
sample counts are training rows when given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pace_cert.errors import InputError
from pace_cert.model.ensemble import LEAF, Tree, next_float32


def decision_tree_of(
    model: bytes,
    counts: np.ndarray | None = None,
    feature_names: Sequence[str] | None = None,
) -> Any:
    """The one-tree ONNX classifier ``model`` as a fitted ``DecisionTreeClassifier``
    with onnxruntime's label at every leaf (:func:`to_decision_tree`); InputError when
    the model has more than one tree."""
    import onnx

    from pace_cert.model.onnx_reader import ensemble_from_model
    from pace_cert.model.runtime import class_indices, session

    ens, _info = ensemble_from_model(onnx.load_from_string(model))
    if ens.n_trees != 1:
        raise InputError(
            None,
            f"to_sklearn: the compressed model has {ens.n_trees} trees; only a one-tree "
            "model is a DecisionTreeClassifier",
        )
    tree = ens.trees[0]
    points, reachable = leaf_points(tree, ens.n_features)
    leaf_class = ens.predict_index(points)  # unreachable leaves: never used
    if reachable.any():
        leaf_class[reachable] = class_indices(session(model), points[reachable], ens.classes)
    return to_decision_tree(tree, ens.classes, leaf_class, ens.n_features, counts, feature_names)


def leaf_points(tree: Tree, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """(float32 points [n_nodes, n_features], reachable bool [n_nodes]): for each leaf
    a point that reaches it (features off its path 0), built from the path's own
    thresholds (x <= theta holds at theta; x > theta at the next float32 above);
    ``reachable`` is False for internal nodes and for leaves whose path no float32
    point satisfies."""
    n = len(tree.feature)
    points = np.zeros((n, n_features), np.float32)
    reachable = np.zeros(n, bool)
    for leaf, conds in tree.paths().items():
        lo: dict[int, np.float32] = {}  # x > lo
        hi: dict[int, np.float32] = {}  # x <= hi
        for f, th, left in conds:
            t = np.float32(th)
            if left:
                hi[f] = min(hi.get(f, t), t)
            else:
                lo[f] = max(lo.get(f, t), t)
        ok = True
        for f in set(lo) | set(hi):
            x = hi[f] if f in hi else next_float32(lo[f])
            ok &= bool(f not in lo or x > lo[f]) and bool(f not in hi or x <= hi[f])
            points[leaf, f] = x
        reachable[leaf] = ok
    reached = tree.apply(points[reachable])
    reachable[np.flatnonzero(reachable)[reached != np.flatnonzero(reachable)]] = False
    return points, reachable


def node_counts(tree: Tree, X: np.ndarray | None) -> np.ndarray:
    """Rows of ``X`` (float32, NaN-free) passing through each node (zeros without X)."""
    counts = np.zeros(len(tree.feature), np.int64)
    if X is None or len(X) == 0:
        return counts
    counts += np.bincount(tree.apply(X), minlength=len(counts))
    for i in reversed(_top_down(tree)):
        if tree.left[i] != LEAF:
            counts[i] = counts[tree.left[i]] + counts[tree.right[i]]
    return counts


def _top_down(tree: Tree) -> list[int]:
    order = [0]
    for i in order:
        if tree.left[i] != LEAF:
            order += [int(tree.left[i]), int(tree.right[i])]
    return order


def to_decision_tree(
    tree: Tree,
    classes: np.ndarray,
    leaf_class: np.ndarray,
    n_features: int,
    counts: np.ndarray | None = None,
    feature_names: Sequence[str] | None = None,
) -> Any:
    """A fitted ``DecisionTreeClassifier`` with ``tree``'s splits whose leaf i predicts
    ``classes[leaf_class[i]]`` (``leaf_class``: a class index per node, read at leaves);
    ``counts``: rows per node (:func:`node_counts`), shown as samples."""
    from sklearn.tree import DecisionTreeClassifier
    from sklearn.tree._tree import NODE_DTYPE, TREE_LEAF, TREE_UNDEFINED
    from sklearn.tree._tree import Tree as SkTree

    n, k = len(tree.feature), len(classes)
    leaf = tree.left == LEAF
    counts = np.zeros(n, np.int64) if counts is None else np.asarray(counts, np.int64)
    value = np.zeros((n, k))
    value[leaf, np.asarray(leaf_class)[leaf]] = 1.0
    for i in reversed(_top_down(tree)):  # internal nodes: the rows' mix of their leaves
        if not leaf[i]:
            a, b = int(tree.left[i]), int(tree.right[i])
            wa, wb = (counts[a], counts[b]) if counts[i] > 0 else (1, 1)
            value[i] = (wa * value[a] + wb * value[b]) / (wa + wb)
    nodes = np.zeros(n, dtype=NODE_DTYPE)
    nodes["left_child"] = np.where(leaf, TREE_LEAF, tree.left)
    nodes["right_child"] = np.where(leaf, TREE_LEAF, tree.right)
    nodes["feature"] = np.where(leaf, TREE_UNDEFINED, tree.feature)
    # float32 -> float64 is exact: float32 x <= float64(t) iff x <= t
    nodes["threshold"] = np.where(leaf, float(TREE_UNDEFINED), tree.threshold.astype(np.float64))
    nodes["impurity"] = 1.0 - (value**2).sum(axis=1)
    nodes["n_node_samples"] = counts
    nodes["weighted_n_node_samples"] = counts.astype(np.float64)
    if "missing_go_to_left" in NODE_DTYPE.names:
        nodes["missing_go_to_left"] = 0  # NaN goes right, as in the IR
    sk = SkTree(n_features, np.array([k], dtype=np.intp), 1)
    sk.__setstate__(
        {
            "max_depth": tree.depth,
            "node_count": n,
            "nodes": nodes,
            "values": np.ascontiguousarray(value[:, None, :]),
        }
    )
    clf = DecisionTreeClassifier()
    clf.tree_ = sk
    clf.n_features_in_ = n_features
    clf.n_outputs_ = 1
    clf.classes_ = np.asarray(classes)
    clf.n_classes_ = k
    clf.max_features_ = n_features
    if feature_names is not None:
        clf.feature_names_in_ = np.asarray(list(feature_names), dtype=object)
    return clf
