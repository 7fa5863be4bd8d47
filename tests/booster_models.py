"""Builders for the reader tests of issue 39: LightGBM / XGBoost (onnxmltools),
HistGradientBoosting and Pipelines (skl2onnx), and TreeEnsemble (ai.onnx.ml opset 5)
graphs written with onnx.helper (no exporter writes them)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from pace_cert.model.ensemble import LEAF, Ensemble


def lgbm(X, y, n: int, depth: int, seed: int = 0, zipmap: bool = False, fit=None, **kw):
    """An onnxmltools export of a LightGBM classifier (float32 input named X); ``fit``:
    keyword arguments of ``fit`` (e.g. ``categorical_feature``)."""
    import lightgbm
    from onnxmltools.convert import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    params = dict(
        n_estimators=n,
        max_depth=depth,
        num_leaves=2**depth,
        random_state=seed,
        n_jobs=1,
        verbose=-1,
        min_child_samples=2,
    )
    m = lightgbm.LGBMClassifier(**{**params, **kw}).fit(X, y, **(fit or {}))
    types = [("X", FloatTensorType([None, X.shape[1]]))]
    return m, convert_lightgbm(m, initial_types=types, zipmap=zipmap)


def xgb(X, y, n: int, depth: int, seed: int = 0, **kw):
    """An onnxmltools export of an XGBoost classifier (float32 input named X)."""
    import xgboost
    from onnxmltools.convert import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    params = dict(n_estimators=n, max_depth=depth, random_state=seed, n_jobs=1)
    m = xgboost.XGBClassifier(**{**params, **kw}).fit(X, y)
    types = [("X", FloatTensorType([None, X.shape[1]]))]
    return m, convert_xgboost(m, initial_types=types)


def hgb(X, y, n: int, depth: int, seed: int = 0, **kw):
    """A skl2onnx export of a HistGradientBoostingClassifier (zipmap off)."""
    from skl2onnx import to_onnx
    from sklearn.ensemble import HistGradientBoostingClassifier

    m = HistGradientBoostingClassifier(max_iter=n, max_depth=depth, random_state=seed, **kw)
    m.fit(X, y)
    return m, to_onnx(m, X[:1].astype(np.float32), options={id(m): {"zipmap": False}})


def pipeline(X, y, steps, final):
    """A skl2onnx export of ``make_pipeline(*steps, final)`` (zipmap off)."""
    from skl2onnx import to_onnx
    from sklearn.pipeline import make_pipeline

    p = make_pipeline(*steps, final).fit(X, y)
    return p, to_onnx(p, X[:1].astype(np.float32), options={id(final): {"zipmap": False}})


def v5_node(
    modes,
    splits,
    feats,
    true_ids,
    true_leafs,
    false_ids,
    false_leafs,
    roots,
    leaf_targets,
    leaf_weights,
    n_targets: int,
    post: int = 0,
    aggregate: int = 1,
    dtype=np.float32,
    **extra,
) -> onnx.NodeProto:
    """A TreeEnsemble (ai.onnx.ml opset 5) node reading X, writing scores."""
    return helper.make_node(
        "TreeEnsemble",
        ["X"],
        ["scores"],
        domain="ai.onnx.ml",
        n_targets=n_targets,
        aggregate_function=aggregate,
        post_transform=post,
        tree_roots=list(roots),
        nodes_modes=numpy_helper.from_array(np.asarray(modes, np.uint8), "modes"),
        nodes_splits=numpy_helper.from_array(np.asarray(splits, dtype), "splits"),
        nodes_featureids=list(feats),
        nodes_truenodeids=list(true_ids),
        nodes_trueleafs=list(true_leafs),
        nodes_falsenodeids=list(false_ids),
        nodes_falseleafs=list(false_leafs),
        leaf_targetids=list(leaf_targets),
        leaf_weights=numpy_helper.from_array(np.asarray(leaf_weights, dtype), "weights"),
        **extra,
    )


def v5_model(
    node: onnx.NodeProto,
    n_features: int,
    classes=None,
    *,
    keepdims: int = 0,
    axis: int = 1,
    scores_output: bool = True,
) -> onnx.ModelProto:
    """TreeEnsemble -> ArgMax [-> Gather(classes)] as the ONNX spec suggests for a
    classifier; the label is the ArgMax index itself when ``classes`` is None."""
    k = next(a.i for a in node.attribute if a.name == "n_targets")
    nodes = [node]
    inits = []
    am_out = "label" if classes is None else "index"
    nodes.append(helper.make_node("ArgMax", ["scores"], [am_out], axis=axis, keepdims=keepdims))
    label_type = TensorProto.INT64
    if classes is not None:
        arr = np.asarray(classes)
        if arr.dtype.kind in "US":
            arr = arr.astype(object)
            label_type = TensorProto.STRING
        else:
            arr = arr.astype(np.int64)
        inits.append(numpy_helper.from_array(arr, "classes"))
        nodes.append(helper.make_node("Gather", ["classes", "index"], ["label"], axis=0))
    outputs = [helper.make_tensor_value_info("label", label_type, [None])]
    if scores_output:
        outputs.append(helper.make_tensor_value_info("scores", TensorProto.FLOAT, [None, k]))
    g = helper.make_graph(
        nodes,
        "tree_ensemble_v5",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, n_features])],
        outputs,
        initializer=inits,
    )
    m = helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)]
    )
    m.ir_version = 10
    return m


def v5_from_ensemble(ens: Ensemble, *, modes=("BRANCH_LEQ",), classes=True) -> onnx.ModelProto:
    """An opset-5 TreeEnsemble classifier computing (up to float32 rounding) ``ens``'s
    argmax rule: one TreeEnsemble tree per (IR tree, class column that has a non-zero
    leaf value); base scores added to the leaves of each class's first tree; every split
    written in the given mode(s), cycled through the nodes (BRANCH_LT thresholds are the
    next float32 up, BRANCH_GT / GTE swap the branches)."""
    pending = {k: float(b) for k, b in enumerate(ens.base) if b}
    cols = {
        "modes": [],
        "splits": [],
        "feats": [],
        "true_ids": [],
        "true_leafs": [],
        "false_ids": [],
        "false_leafs": [],
        "roots": [],
        "leaf_targets": [],
        "leaf_weights": [],
    }
    mode_ids = {"BRANCH_LEQ": 0, "BRANCH_LT": 1, "BRANCH_GTE": 2, "BRANCH_GT": 3}
    count = 0
    for tree, w in zip(ens.trees, ens.weights):
        for k in range(ens.n_classes):
            values = np.float32(w) * tree.value[:, k].astype(np.float32)
            nodes = np.flatnonzero(tree.left != LEAF)
            if not values[tree.left == LEAF].any() or len(nodes) == 0:
                continue  # nothing for class k, or a constant tree (skipped)
            values = values + np.float32(pending.pop(k, 0.0))
            pos = {int(j): len(cols["modes"]) + i for i, j in enumerate(nodes)}
            leaf_pos = {}
            for j in np.flatnonzero(tree.left == LEAF):
                leaf_pos[int(j)] = len(cols["leaf_targets"])
                cols["leaf_targets"].append(k)
                cols["leaf_weights"].append(float(values[j]))
            cols["roots"].append(pos[0])
            for j in nodes:
                mode = modes[count % len(modes)]
                count += 1
                th = np.float32(tree.threshold[j])
                left, right = int(tree.left[j]), int(tree.right[j])
                if mode == "BRANCH_LT":  # x < next(th) <=> x <= th
                    th = np.nextafter(th, np.float32(np.inf), dtype=np.float32)
                elif mode == "BRANCH_GT":  # x > th: true is the IR's right
                    left, right = right, left
                elif mode == "BRANCH_GTE":  # x >= next(th) <=> x > th
                    th = np.nextafter(th, np.float32(np.inf), dtype=np.float32)
                    left, right = right, left
                cols["modes"].append(mode_ids[mode])
                cols["splits"].append(float(th))
                cols["feats"].append(int(tree.feature[j]))
                for child, ids, leafs in (
                    (left, "true_ids", "true_leafs"),
                    (right, "false_ids", "false_leafs"),
                ):
                    is_leaf = tree.left[child] == LEAF
                    cols[leafs].append(int(is_leaf))
                    cols[ids].append(leaf_pos[child] if is_leaf else pos[child])
    if pending:
        raise ValueError(f"no tree to carry the base scores of classes {sorted(pending)}")
    node = v5_node(
        cols["modes"],
        cols["splits"],
        cols["feats"],
        cols["true_ids"],
        cols["true_leafs"],
        cols["false_ids"],
        cols["false_leafs"],
        cols["roots"],
        cols["leaf_targets"],
        cols["leaf_weights"],
        ens.n_classes,
    )
    return v5_model(node, ens.n_features, list(ens.classes) if classes else None)
