"""The ai.onnx.ml TreeEnsembleClassifier / TreeEnsembleRegressor operator, table-driven.

Every attribute is read into numpy arrays once, split into trees as onnxruntime splits
them (only the canonical layout, where onnxruntime's roots are node 0, is accepted) and
each tree is built by one code path. :func:`decision_rule` reduces the classifier's
label rule (as onnxruntime applies it) to argmax form."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from pace_cert.model.ensemble import (
    LEAF,
    Tree,
    prev_float32,
)
from pace_cert.model.onnx_graph import (
    UnsupportedModel,
    attrs,
)

#: per-node attributes of a tree-ensemble node (one entry per node, in this order)
NODE_ATTRS = (
    "nodes_treeids",
    "nodes_nodeids",
    "nodes_featureids",
    "nodes_values",
    "nodes_modes",
    "nodes_truenodeids",
    "nodes_falsenodeids",
)


#: per-leaf-weight attributes of a TreeEnsembleRegressor
TARGET_ATTRS = ("target_treeids", "target_nodeids", "target_ids", "target_weights")


@dataclass(frozen=True)
class ParsedTrees:
    """A parsed TreeEnsembleClassifier node: trees with per-class leaf weights."""

    trees: list[Tree]
    classes: np.ndarray
    base: np.ndarray
    class_ids_used: np.ndarray
    all_weights_nonneg: bool
    has_class_on_all_paths: np.ndarray  # bool [n_classes]


def tree_runs(tree_ids: np.ndarray, node_ids: np.ndarray) -> list[np.ndarray]:
    """Attribute positions of each tree's nodes, in node-id order, trees as listed.

    onnxruntime starts a new tree wherever ``nodes_treeids`` changes from one node to
    the next (ids A, B, A make three trees), roots it at the first node listed for it
    and looks children up by (tree id, node id). The IR roots a tree at node id 0, so
    only the canonical layout, where both agree, is accepted: each tree id's nodes are
    contiguous, the first one listed has node id 0, and the node ids are exactly
    0..m-1 (the ONNX spec: node ids start at 0 and increment by 1).
    """
    starts = np.flatnonzero(np.r_[True, tree_ids[1:] != tree_ids[:-1]])
    if len(np.unique(tree_ids)) != len(starts):
        raise UnsupportedModel("a tree's nodes are not listed contiguously")
    runs = []
    for sel in np.split(np.arange(len(tree_ids)), starts[1:]):
        tid, ids = int(tree_ids[sel[0]]), node_ids[sel]
        if ids[0] != 0:
            raise UnsupportedModel(f"tree {tid}: the first node listed is not node 0")
        if not np.array_equal(np.sort(ids), np.arange(len(ids))):
            raise UnsupportedModel(f"tree {tid}: node ids are not 0..{len(ids) - 1}")
        runs.append(sel[np.argsort(ids)])
    return runs


def parse_tree_ensemble_classifier(
    node: onnx.NodeProto, n_targets_classes: np.ndarray | None = None
) -> ParsedTrees:
    """Parse one TreeEnsembleClassifier node into trees (values: one column per class).

    With ``n_targets_classes`` the node is a TreeEnsembleRegressor whose targets are
    the given classes (``target_*`` attributes instead of ``class_*``).
    """
    a = attrs(node)
    for key in a:
        if key.endswith("_as_tensor"):
            raise UnsupportedModel(f"double-precision attribute {key} is not supported")
    prefix = "class_"
    if n_targets_classes is not None:
        if a.get("aggregate_function", b"SUM") not in (b"SUM", "SUM"):
            raise UnsupportedModel("only SUM aggregation is supported")
        if int(a.get("n_targets", 0)) != len(n_targets_classes):
            raise UnsupportedModel("n_targets differs from the number of class labels")
        classes = n_targets_classes
        prefix = "target_"
    elif a.get("classlabels_strings"):
        classes = np.array([s.decode() for s in a["classlabels_strings"]], dtype=object)
    elif "classlabels_int64s" in a:
        classes = np.asarray(a["classlabels_int64s"], dtype=np.int64)
    else:
        raise UnsupportedModel("TreeEnsembleClassifier without class labels")
    k = len(classes)
    tree_ids = np.asarray(a.get("nodes_treeids", []), np.int64)
    node_ids = np.asarray(a.get("nodes_nodeids", []), np.int64)
    feats = np.asarray(a.get("nodes_featureids", []), np.int64)
    values = np.asarray(a.get("nodes_values", []), np.float32)
    modes = [m.decode() if isinstance(m, bytes) else m for m in a.get("nodes_modes", [])]
    true_ids = np.asarray(a.get("nodes_truenodeids", []), np.int64)
    false_ids = np.asarray(a.get("nodes_falsenodeids", []), np.int64)
    n = len(tree_ids)
    if n == 0 or any(len(x) != n for x in (node_ids, feats, values, modes, true_ids, false_ids)):
        raise UnsupportedModel("node attribute arrays are empty or of different lengths")
    c_tree = np.asarray(a.get(prefix + "treeids", []), np.int64)
    c_node = np.asarray(a.get(prefix + "nodeids", []), np.int64)
    c_id = np.asarray(a.get(prefix + "ids", []), np.int64)
    c_w = np.asarray(a.get(prefix + "weights", []), np.float32)
    if not (len(c_tree) == len(c_node) == len(c_id) == len(c_w)):
        raise UnsupportedModel("class attribute arrays have different lengths")
    if len(c_id) and (c_id.min() < 0 or c_id.max() >= k):
        raise UnsupportedModel("class_ids out of range")
    if not np.isfinite(values).all() or not np.isfinite(c_w).all():
        raise UnsupportedModel("non-finite thresholds or weights")
    base = np.asarray(a.get("base_values", []), np.float32).astype(np.float64)

    trees: list[Tree] = []
    has_all = np.zeros(k, bool)
    for sel in tree_runs(tree_ids, node_ids):  # sel[j]: attribute position of node id j
        tid = int(tree_ids[sel[0]])
        m = len(sel)
        feature = np.full(m, LEAF, np.int64)
        threshold = np.zeros(m, np.float32)
        left = np.full(m, LEAF, np.int64)
        right = np.full(m, LEAF, np.int64)
        for j, src in enumerate(sel):
            mode = modes[src]
            if mode == "LEAF":
                continue
            t_child, f_child = int(true_ids[src]), int(false_ids[src])
            if not (0 <= t_child < m and 0 <= f_child < m):
                raise UnsupportedModel(f"tree {tid}: dangling child id")
            th = values[src]
            if mode == "BRANCH_LEQ":  # x <= th -> true
                lt, th2, rt = t_child, th, f_child
            elif mode == "BRANCH_LT":  # x < th  <=> x <= prev(th)
                lt, th2, rt = t_child, prev_float32(th), f_child
            elif mode == "BRANCH_GT":  # x > th  -> true  <=> not (x <= th)
                lt, th2, rt = f_child, th, t_child
            elif mode == "BRANCH_GTE":  # x >= th <=> not (x <= prev(th))
                lt, th2, rt = f_child, prev_float32(th), t_child
            else:
                raise UnsupportedModel(f"tree {tid}: split mode {mode} is not supported")
            feature[j], threshold[j], left[j], right[j] = feats[src], th2, lt, rt
        value = np.zeros((m, k), np.float64)
        entries = np.flatnonzero(c_tree == tid)
        seen = np.zeros((m, k), bool)
        for e in entries:
            j = int(c_node[e])
            if not 0 <= j < m:
                raise UnsupportedModel(f"tree {tid}: class weight on node {j}, not in the tree")
            if feature[j] != LEAF:
                raise UnsupportedModel(f"tree {tid}: class weight on a non-leaf node")
            value[j, c_id[e]] += float(c_w[e])
            seen[j, c_id[e]] = True
        try:
            tree = Tree(feature, threshold, left, right, value)
        except ValueError as e:
            raise UnsupportedModel(f"tree {tid}: {e}") from None
        trees.append(tree)
        has_all |= seen[tree.leaves].all(axis=0)
    if len(c_tree) and not np.isin(c_tree, np.unique(tree_ids)).all():
        raise UnsupportedModel("class weights refer to unknown trees")
    return ParsedTrees(
        trees=trees,
        classes=classes,
        base=base,
        class_ids_used=np.unique(c_id),
        all_weights_nonneg=bool(np.all(c_w >= 0)),
        has_class_on_all_paths=has_all,
    )


def decision_rule(tec: ParsedTrees) -> tuple[list[Tree], np.ndarray, str, float, str]:
    """Reduce a TreeEnsembleClassifier's label rule to argmax form.

    Returns (trees with K-column values, base[K], kind, margin_scale, rule name).
    """
    k = len(tec.classes)
    if k > 2:
        if len(tec.base) not in (0, k):
            raise UnsupportedModel("base_values must be empty or one per class")
        if len(tec.base) == 0 and not tec.has_class_on_all_paths.all():
            raise UnsupportedModel("some class has no score on some path (has_score rule)")
        base = tec.base if len(tec.base) else np.zeros(k)
        kind = "voting" if tec.all_weights_nonneg and not np.any(base) else "margin"
        return tec.trees, base, kind, 1.0, "argmax"
    used = tec.class_ids_used
    if len(used) <= 1:  # binary_case: one score column
        if len(tec.base) > 1:
            raise UnsupportedModel("binary single-column model with two base values")
        if len(used) == 1 and used[0] == 1 and len(tec.base) == 1:
            raise UnsupportedModel("binary model scoring class 1 with a base value")
        col = int(used[0]) if len(used) else 0
        t = 0.5 if tec.all_weights_nonneg else 0.0
        b = float(tec.base[0]) if len(tec.base) else 0.0
        trees = [single_column(tr, col) for tr in tec.trees]
        if t == 0.5:  # class scores are probabilities: vote share = 2 (s - 0.5)
            return trees, np.array([t, b]), "voting", 0.5, "binary_threshold_0.5"
        return trees, np.array([t, b]), "margin", 1.0, "binary_threshold_0"
    # both classes named: label positive iff class-1 score > 0 (class-0 scores ignored)
    if len(tec.base):
        raise UnsupportedModel("binary model naming both classes with base values")
    if not tec.has_class_on_all_paths[1]:
        raise UnsupportedModel("binary model where class 1 lacks a score on some path")
    if tec.classes.dtype == object or list(tec.classes) != [0, 1]:
        raise UnsupportedModel("binary model naming both classes needs labels [0, 1]")
    trees = [single_column(tr, 1) for tr in tec.trees]
    return trees, np.zeros(2), "margin", 1.0, "binary_class1_positive"


def single_column(tree: Tree, col: int) -> Tree:
    value = np.zeros_like(tree.value)
    value[:, 1] = tree.value[:, col]
    return Tree(tree.feature, tree.threshold, tree.left, tree.right, value)
