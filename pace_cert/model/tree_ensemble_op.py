"""The ai.onnx.ml tree-ensemble operators, table-driven.

TreeEnsembleClassifier / TreeEnsembleRegressor (ai.onnx.ml opsets 1-3): every attribute
is read into numpy arrays once, split into trees as onnxruntime splits them (only the
canonical layout, where onnxruntime's roots are node 0, is accepted) and each tree is
built by one code path. :func:`decision_rule` reduces the classifier's label rule (as
onnxruntime applies it) to argmax form.

TreeEnsemble (ai.onnx.ml opset 5, onnx >= 1.16): :func:`parse_tree_ensemble_v5` builds
each tree from its ``tree_roots`` entry as onnxruntime 1.32 does (it converts the node
to the opset-3 form by a depth-first walk that copies shared subtrees).

What no recogniser relies on, by design:

* ``nodes_missing_value_tracks_true`` (LightGBM, XGBoost and HistGradientBoosting
  exports set it): it only decides where a NaN feature goes. Inputs are float32 and NaN
  is excluded from every domain and proof, and on every non-NaN input onnxruntime
  compares as the split mode says, so the attribute is read past; the IR sends NaN
  right, which no certificate speaks about.
* ``nodes_hitrates``: a performance hint.
* ``post_transform`` of a TreeEnsembleClassifier: onnxruntime computes the label from
  the raw scores (plus base values) before it transforms the scores it writes to the
  second output, for every transform (NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO, PROBIT);
  pinned by ``tests/test_readers_boosters.py::test_label_ignores_post_transform``. A
  TreeEnsemble (opset 5) has no label: its post_transform is applied before the ArgMax
  that follows it, and is only accepted when NONE.
"""

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

#: the post transforms onnxruntime knows (TreeEnsembleClassifier/Regressor: by name;
#: TreeEnsemble, opset 5: by number)
POST_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")

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
    tree_classes: tuple[frozenset[int], ...] = ()  # per tree: the class ids it scores
    post_transform: str = "NONE"


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
    post = a.get("post_transform", b"NONE")
    post = post.decode() if isinstance(post, bytes) else str(post)
    if post not in POST_TRANSFORMS:
        raise UnsupportedModel(f"{node.op_type} post_transform {post} is not known")
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
    if len(feats) and feats.min() < 0:
        raise UnsupportedModel("negative nodes_featureids")
    base = np.asarray(a.get("base_values", []), np.float32).astype(np.float64)

    trees: list[Tree] = []
    tree_classes: list[frozenset[int]] = []
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
            lt, th2, rt = normalise_split(mode, values[src], t_child, f_child, f"tree {tid}")
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
        tree_classes.append(frozenset(int(c) for c in c_id[entries]))
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
        tree_classes=tuple(tree_classes),
        post_transform=post,
    )


def normalise_split(mode: str, th: np.float32, t_child: int, f_child: int, where: str):
    """(left, threshold, right) of the IR split ``x <= threshold`` (left) that decides
    as onnxruntime's ``mode`` does on every float32 x (NaN aside)."""
    if mode == "BRANCH_LEQ":  # x <= th -> true
        return t_child, th, f_child
    if mode == "BRANCH_LT":  # x < th  <=> x <= prev(th)
        return t_child, prev_float32(th), f_child
    if mode == "BRANCH_GT":  # x > th  -> true  <=> not (x <= th)
        return f_child, th, t_child
    if mode == "BRANCH_GTE":  # x >= th <=> not (x <= prev(th))
        return f_child, prev_float32(th), t_child
    raise UnsupportedModel(f"{where}: split mode {mode} is not supported")


def estimator_layout(tree_classes: tuple[frozenset[int], ...], k: int) -> int:
    """How many estimators the trees are: with K > 2 classes, gradient boosting
    (scikit-learn, LightGBM, XGBoost) trains one tree per class and round, so when every
    tree scores exactly one class and every class has as many trees, a round of K
    trees is one estimator; otherwise every tree is one. Returns 0 for "one per tree"
    (:attr:`~pace_cert.model.ensemble.Ensemble.estimators`)."""
    n = len(tree_classes)
    if k <= 2 or n == 0 or n % k or any(len(c) != 1 for c in tree_classes):
        return 0
    counts = np.bincount([next(iter(c)) for c in tree_classes], minlength=k)
    if len(counts) != k or not np.all(counts == n // k):
        return 0
    return n // k


def decision_rule(tec: ParsedTrees) -> tuple[list[Tree], np.ndarray, str, float, str]:
    """Reduce a TreeEnsembleClassifier's label rule to argmax form.

    onnxruntime takes the label from the raw scores plus base values, before the post
    transform, so the rule below holds for every post_transform (pinned for each binary
    and multi-class layout by ``tests/test_readers_boosters.py``):

    * K > 2: argmax of (scores + base), first index; a class no tree scores on some
      path and without base values is rejected (onnxruntime skips classes without a
      score);
    * K = 2, one score column (class_ids all 0, or all 1 without base values; GB,
      HistGB, LightGBM, XGBoost): label 1 iff score + base > t, t = 0.5 when every class
      weight is >= 0, else 0 (``binary_threshold_0.5`` / ``binary_threshold_0``);
    * K = 2, both classes named: label 1 iff the class-1 score > 0 (class-0 scores are
      ignored), accepted only with labels [0, 1], no base values and class 1 scored on
      every path (``binary_class1_positive``).

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


# --- TreeEnsemble, ai.onnx.ml opset 5 -------------------------------------------------

#: nodes_modes of a TreeEnsemble (a uint8 tensor)
V5_MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")
V5_MODES_NAMED = {**dict(enumerate(V5_MODES)), 6: "BRANCH_MEMBER"}
V5_AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")

#: the attributes of TreeEnsemble (opset 5); any other is not modelled
V5_ATTRS = {
    "aggregate_function",
    "leaf_targetids",
    "leaf_weights",
    "membership_values",
    "n_targets",
    "nodes_falseleafs",
    "nodes_falsenodeids",
    "nodes_featureids",
    "nodes_hitrates",
    "nodes_missing_value_tracks_true",
    "nodes_modes",
    "nodes_splits",
    "nodes_trueleafs",
    "nodes_truenodeids",
    "post_transform",
    "tree_roots",
}

#: a tree that expands (shared subtrees copied) to more nodes than this is rejected
MAX_EXPANDED_NODES = 1 << 22


@dataclass(frozen=True)
class ParsedV5:
    """A parsed TreeEnsemble (opset 5) node: trees with one value column per target."""

    trees: list[Tree]
    n_targets: int
    tree_targets: tuple[frozenset[int], ...]  # per tree: the targets its leaves score
    post_transform: str
    aggregate: str


def _v5_tensor(node: onnx.NodeProto, name: str, required: bool) -> np.ndarray | None:
    a = next((x for x in node.attribute if x.name == name), None)
    if a is None:
        if required:
            raise UnsupportedModel(f"TreeEnsemble without attribute {name}")
        return None
    if a.type != onnx.AttributeProto.TENSOR:
        raise UnsupportedModel(f"TreeEnsemble attribute {name} is not a tensor")
    from onnx import numpy_helper

    return numpy_helper.to_array(a.t).reshape(-1)


def parse_tree_ensemble_v5(node: onnx.NodeProto) -> ParsedV5:
    """Parse a TreeEnsemble (ai.onnx.ml opset 5) node as onnxruntime 1.32 runs it.

    onnxruntime turns the node into the opset-3 form by walking each ``tree_roots``
    entry depth first, true branch first, copying every node it reaches (a node or leaf
    reached twice becomes two copies), and then evaluates that form; the IR is built by
    the same walk. Accepted: split modes BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT
    (float32 ``nodes_splits``, as onnxruntime requires for a float input), float32
    ``leaf_weights``, SUM aggregation. A root whose true and false branches name the
    same leaf is a single-leaf tree; onnxruntime versions differ on which leaf such a
    tree scores (1.32: the branches' leaf; earlier: the leaf at the root's own index),
    so it is accepted only where both agree (the leaf index equals the root index).
    Rejected with the attribute named: BRANCH_EQ, BRANCH_NEQ and BRANCH_MEMBER (exact
    equality tests the IR's ``x <= threshold`` splits express only by duplicating
    subtrees), AVERAGE/MIN/MAX aggregation, double or other non-float32 tensors, cycles
    and trees that expand beyond :data:`MAX_EXPANDED_NODES` nodes.
    ``nodes_missing_value_tracks_true`` and ``nodes_hitrates`` are read past (see the
    module docstring); ``post_transform`` is returned for the recogniser to check.
    """
    names = {a.name for a in node.attribute}
    unknown = names - V5_ATTRS
    if unknown:
        raise UnsupportedModel(f"TreeEnsemble attribute {sorted(unknown)[0]} is not modelled")
    a = {x.name: x for x in node.attribute}

    def ints(name: str) -> np.ndarray:
        return np.asarray(list(a[name].ints), np.int64) if name in a else np.zeros(0, np.int64)

    def one_int(name: str, default: int) -> int:
        return int(a[name].i) if name in a else default

    n_targets = one_int("n_targets", 0)
    if n_targets < 2:
        raise UnsupportedModel(f"TreeEnsemble n_targets {n_targets}: an argmax needs 2 or more")
    agg = one_int("aggregate_function", 1)
    if agg != 1:
        name = V5_AGGREGATES[agg] if 0 <= agg < len(V5_AGGREGATES) else str(agg)
        raise UnsupportedModel(f"TreeEnsemble aggregate_function {name} is not supported (SUM is)")
    post_i = one_int("post_transform", 0)
    if not 0 <= post_i < len(POST_TRANSFORMS):
        raise UnsupportedModel(f"TreeEnsemble post_transform {post_i} is not known")
    modes = _v5_tensor(node, "nodes_modes", True)
    splits = _v5_tensor(node, "nodes_splits", True)
    weights = _v5_tensor(node, "leaf_weights", True)
    if modes.dtype != np.uint8:
        raise UnsupportedModel("TreeEnsemble nodes_modes must be a uint8 tensor")
    for name, arr in (("nodes_splits", splits), ("leaf_weights", weights)):
        if arr.dtype != np.float32:
            raise UnsupportedModel(f"TreeEnsemble {name} of type {arr.dtype}: only float32")
    feats, roots = ints("nodes_featureids"), ints("tree_roots")
    t_ids, f_ids = ints("nodes_truenodeids"), ints("nodes_falsenodeids")
    t_leaf, f_leaf = ints("nodes_trueleafs"), ints("nodes_falseleafs")
    targets = ints("leaf_targetids")
    n, n_leaves = len(modes), len(weights)
    if n == 0 or any(len(x) != n for x in (splits, feats, t_ids, f_ids, t_leaf, f_leaf)):
        raise UnsupportedModel("TreeEnsemble nodes_* attributes are empty or of different lengths")
    if len(targets) != n_leaves or n_leaves == 0:
        raise UnsupportedModel("TreeEnsemble leaf_targetids and leaf_weights differ in length")
    bad = [int(m) for m in modes if m >= 4]
    if bad:
        mode = V5_MODES_NAMED.get(bad[0], str(bad[0]))
        raise UnsupportedModel(f"TreeEnsemble node mode {mode} is not supported")
    if targets.min() < 0 or targets.max() >= n_targets:
        raise UnsupportedModel("TreeEnsemble leaf_targetids out of range")
    if feats.min() < 0:
        raise UnsupportedModel("TreeEnsemble negative nodes_featureids")
    if not np.isfinite(splits).all() or not np.isfinite(weights).all():
        raise UnsupportedModel("TreeEnsemble non-finite splits or leaf weights")
    if len(roots) == 0 or roots.min() < 0 or roots.max() >= n:
        raise UnsupportedModel("TreeEnsemble tree_roots empty or out of range")
    for leaf_flags, ids in ((t_leaf, t_ids), (f_leaf, f_ids)):
        limit = np.where(leaf_flags != 0, n_leaves, n)
        if ids.min() < 0 or np.any(ids >= limit):
            raise UnsupportedModel("TreeEnsemble branch id out of range")

    arrays = _V5Arrays(modes, splits, feats, t_ids, f_ids, t_leaf, f_leaf)
    trees: list[Tree] = []
    tree_targets: list[frozenset[int]] = []
    for ti, r in enumerate(int(x) for x in roots):
        tree, leaf_of = _v5_tree(arrays, r, n_targets, targets, weights, f"TreeEnsemble tree {ti}")
        trees.append(tree)
        tree_targets.append(frozenset(int(targets[leaf]) for leaf in leaf_of.values()))
    return ParsedV5(
        trees=trees,
        n_targets=n_targets,
        tree_targets=tuple(tree_targets),
        post_transform=POST_TRANSFORMS[post_i],
        aggregate="SUM",
    )


@dataclass(frozen=True)
class _V5Arrays:
    modes: np.ndarray
    splits: np.ndarray
    feats: np.ndarray
    t_ids: np.ndarray
    f_ids: np.ndarray
    t_leaf: np.ndarray
    f_leaf: np.ndarray


def _v5_tree(
    a: _V5Arrays, r: int, k: int, targets: np.ndarray, weights: np.ndarray, where: str
) -> tuple[Tree, dict[int, int]]:
    """The tree rooted at node ``r``, built by onnxruntime's walk (every node reached
    copied), and the leaf index of each of its leaves. Nodes are numbered in the IR's
    left-first order (any numbering of the same tree decides alike)."""
    n = len(a.modes)
    if a.t_leaf[r] and a.f_leaf[r] and a.t_ids[r] == a.f_ids[r]:  # a single-leaf tree
        if a.t_ids[r] != r:
            raise UnsupportedModel(
                f"{where}: a single-leaf tree whose leaf index ({a.t_ids[r]}) is not its "
                f"root index ({r}); onnxruntime versions read such trees differently"
            )
        first = ("leaf", r)
    else:
        first = ("node", r)
    feature: list[int] = []
    threshold: list[np.float32] = []
    left: list[int] = []
    right: list[int] = []
    leaf_of: dict[int, int] = {}  # IR node -> leaf index

    def new_node() -> int:
        feature.append(LEAF)
        threshold.append(np.float32(0))
        left.append(LEAF)
        right.append(LEAF)
        return len(feature) - 1

    stack = [(new_node(), first, 0)]
    while stack:
        nid, (kind, idx), depth = stack.pop()
        if depth > n:
            raise UnsupportedModel(f"{where}: the branches form a cycle")
        if kind == "leaf":
            leaf_of[nid] = idx
            continue
        # children numbered in the IR's order (left first), so that trees with the same
        # splits get the same node numbering whatever modes wrote them
        lt, rt = new_node(), new_node()
        if len(feature) > MAX_EXPANDED_NODES:
            raise UnsupportedModel(f"{where}: over {MAX_EXPANDED_NODES} nodes once expanded")
        mode = V5_MODES[int(a.modes[idx])]
        first, th, _ = normalise_split(mode, a.splits[idx], 1, 0, where)
        true_left = first == 1
        t_child, f_child = (lt, rt) if true_left else (rt, lt)
        feature[nid], threshold[nid], left[nid], right[nid] = int(a.feats[idx]), th, lt, rt
        for child, is_leaf, cid in ((f_child, a.f_leaf, a.f_ids), (t_child, a.t_leaf, a.t_ids)):
            branch = ("leaf" if is_leaf[idx] else "node", int(cid[idx]))
            stack.append((child, branch, depth + 1))
        if not true_left:  # process the left child first: a canonical numbering
            stack[-2], stack[-1] = stack[-1], stack[-2]
    value = np.zeros((len(feature), k))
    for nid, leaf in leaf_of.items():
        value[nid, targets[leaf]] = float(weights[leaf])
    try:
        tree = Tree(
            np.asarray(feature, np.int64),
            np.asarray(threshold, np.float32),
            np.asarray(left, np.int64),
            np.asarray(right, np.int64),
            value,
        )
    except ValueError as e:
        raise UnsupportedModel(f"{where}: {e}") from None
    return tree, leaf_of
