"""Write a compressed ensemble as ONNX with an explicit decision rule.

Graph: ``TreeEnsembleRegressor`` (one target per class, SUM, no post transform) →
``ArgMax`` (axis 1, first maximum) → ``Gather`` from the class-label constant. The
label rule therefore never depends on TreeEnsembleClassifier's binary quirks. The
input name and the output names/label type are the original's; the second output (if
the original had one) is the regressor's raw class scores themselves. When the labels
are the int64 class indices 0..K-1, ArgMax's index is the label and no Gather is
written: each node costs onnxruntime about a microsecond a call, which is what a
one-tree model's prediction costs in all at a batch of one row.

Every value written is the float32 value certified: the IR passed in must already hold
float32-representable thresholds, leaf values and base scores (checked here).
"""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from pace_cert import __version__
from pace_cert.model.ensemble import LEAF, Ensemble
from pace_cert.model.onnx_graph import FEATURE_NAMES_KEY, OnnxModelInfo
from pace_cert.model.tree_ensemble_op import NODE_ATTRS, TARGET_ATTRS


def _is_f32(a: np.ndarray) -> bool:
    return bool(np.all(np.asarray(a, np.float64) == np.asarray(a, np.float32).astype(np.float64)))


def ensemble_to_onnx(ens: Ensemble, info: OnnxModelInfo) -> onnx.ModelProto:
    """Build the ONNX graph for ``ens`` (weights must already be folded to 1): a model
    read from a one-tree classifier pace-cert wrote (pattern ``pace-cert-tree``) is
    written the same way again (:func:`tree_classifier_to_onnx`), any other as
    regressor scores, ArgMax and the label lookup."""
    if ens.pattern.split("/")[0] == TREE_PATTERN:
        return tree_classifier_to_onnx(ens, info)
    if not np.all(ens.weights == 1.0):
        raise ValueError("fold tree weights into leaf values before writing")
    if not _is_f32(ens.base):
        raise ValueError("base scores must be float32 values")
    k = ens.n_classes
    nodes: dict[str, list] = {key: [] for key in NODE_ATTRS}
    targets: dict[str, list] = {key: [] for key in TARGET_ATTRS}
    trees = ens.trees
    if not trees:  # a constant model: one tree that is a single zero leaf
        nodes["nodes_treeids"].append(0)
        nodes["nodes_nodeids"].append(0)
        nodes["nodes_featureids"].append(0)
        nodes["nodes_values"].append(0.0)
        nodes["nodes_modes"].append("LEAF")
        nodes["nodes_truenodeids"].append(0)
        nodes["nodes_falsenodeids"].append(0)
        targets["target_treeids"] += [0] * k  # explicit zeros: onnx cannot type empty lists
        targets["target_nodeids"] += [0] * k
        targets["target_ids"] += list(range(k))
        targets["target_weights"] += [0.0] * k
    for tid, t in enumerate(trees):
        leaf = t.left == LEAF
        if not _is_f32(t.value[leaf]):
            raise ValueError("leaf values must be float32 values")
        n = len(t.feature)
        nodes["nodes_treeids"] += [tid] * n
        nodes["nodes_nodeids"] += list(range(n))
        nodes["nodes_featureids"] += [int(f) if f != LEAF else 0 for f in t.feature]
        nodes["nodes_values"] += [float(v) if not lf else 0.0 for v, lf in zip(t.threshold, leaf)]
        nodes["nodes_modes"] += ["LEAF" if lf else "BRANCH_LEQ" for lf in leaf]
        nodes["nodes_truenodeids"] += [int(c) if c != LEAF else 0 for c in t.left]
        nodes["nodes_falsenodeids"] += [int(c) if c != LEAF else 0 for c in t.right]
        for node in np.flatnonzero(leaf):
            for c in range(k):
                targets["target_treeids"].append(tid)
                targets["target_nodeids"].append(int(node))
                targets["target_ids"].append(c)
                targets["target_weights"].append(float(t.value[node, c]))
    scores = info.scores_name or "pace_scores"
    reg = helper.make_node(
        "TreeEnsembleRegressor",
        [info.input_name],
        [scores],
        domain="ai.onnx.ml",
        n_targets=k,
        aggregate_function="SUM",
        post_transform="NONE",
        base_values=[float(b) for b in ens.base],
        **nodes,
        **targets,
    )
    indices = not info.label_is_string and np.array_equal(
        np.asarray(ens.classes), np.arange(k)
    )  # the labels are ArgMax's indices: no Gather
    argmax = helper.make_node(
        "ArgMax",
        [scores],
        [info.label_name if indices else "pace_index"],
        axis=1,
        keepdims=0,
        select_last_index=0,
    )
    graph_nodes = [reg, argmax]
    initializer = []
    label_type = TensorProto.STRING if info.label_is_string else TensorProto.INT64
    if not indices:
        values = (
            np.array([str(c) for c in ens.classes], dtype=object)
            if info.label_is_string
            else ens.classes.astype(np.int64)
        )
        initializer.append(numpy_helper.from_array(values, "pace_classes"))
        graph_nodes.append(
            helper.make_node("Gather", ["pace_classes", "pace_index"], [info.label_name], axis=0)
        )
    outputs = [helper.make_tensor_value_info(info.label_name, label_type, [None])]
    if info.scores_name:
        outputs.append(helper.make_tensor_value_info(scores, TensorProto.FLOAT, [None, k]))
    return _finished(
        graph_nodes,
        initializer,
        info.input_name,
        ens.n_features,
        outputs,
        "argmax of TreeEnsembleRegressor scores, first index on ties",
        list(ens.origin or ("original",) * len(trees)),
        info.feature_names,
    )


def _finished(
    nodes: list,
    initializer: list,
    input_name: str,
    n_features: int,
    outputs: list,
    decision: str,
    origin: list[str],
    feature_names: tuple[str, ...] | None = None,
) -> onnx.ModelProto:
    """The checked model of graph ``nodes`` on one float input [None, n_features]:
    opsets 17 and ai.onnx.ml 3, IR 8, producer pace-cert, and the metadata readers
    rely on (``pace_cert.decision``, ``pace_cert.origin``: each tree's origin)."""
    graph = helper.make_graph(
        nodes,
        "pace_cert_compressed",
        [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, [None, n_features])],
        outputs,
        initializer=initializer,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)],
        producer_name="pace-cert",
        producer_version=__version__,
    )
    model.ir_version = 8
    props = {"pace_cert.decision": decision, "pace_cert.origin": json.dumps(origin)}
    if feature_names is not None:  # the original's names: data is matched by name
        props[FEATURE_NAMES_KEY] = json.dumps(list(feature_names))
    helper.set_model_props(model, props)
    onnx.checker.check_model(model)
    return model


#: what a one-tree model written as one TreeEnsembleClassifier says of its decision
TREE_DECISION = (
    "one tree, one TreeEnsembleClassifier: each leaf scores 1 for its class (and 0 for the "
    "others), so its label is that class under every onnxruntime label rule"
)
#: the pattern prefix the reader gives such a model (pace_cert/model/readers/pace_cert_tree.py)
TREE_PATTERN = "pace-cert-tree"


def leaf_classes(tree, base: np.ndarray) -> dict[int, int] | None:
    """Per leaf, the class the tree's scores (``base`` + leaf values) give, when each
    leaf's best class beats every other by more than float32 noise can; None otherwise
    (a near tie: the label would rest on rounding)."""
    out = {}
    for leaf in tree.leaves:
        s = np.asarray(base, np.float64) + tree.value[leaf]
        order = np.argsort(-s, kind="stable")
        if len(s) > 1 and not s[order[0]] - s[order[1]] > 1e-6 * (1.0 + abs(s[order[0]])):
            return None
        out[int(leaf)] = int(order[0])
    return out


def tree_classifier_to_onnx(ens: Ensemble, info: OnnxModelInfo) -> onnx.ModelProto:
    """One tree as one ``TreeEnsembleClassifier`` node, the cheapest graph onnxruntime
    runs for a single row: each leaf scores 1 for the class ``ens`` gives it and 0 for
    the others (all K classes named when K > 2; one score column for class 1 when K = 2),
    no base values, no post transform. Every label rule of onnxruntime (argmax of the
    scores, first index; for K = 2 one column, label 1 iff score > 0.5) then returns the
    leaf's class: the same partition and labels as ``ens``. The pace-cert reader reads
    such a model back (pattern ``pace-cert-tree``); certify that read-back model, so the
    file is exactly the model certified. Needs one tree of at least two leaves."""
    if ens.n_trees != 1 or len(ens.trees[0].leaves) < 2:
        raise ValueError("a one-tree classifier needs one tree of at least two leaves")
    t, k = ens.trees[0], ens.n_classes
    classes = leaf_classes(t, ens.base)
    if classes is None:
        raise ValueError("a leaf of the tree has no clear class")
    leaf = t.left == LEAF
    n = len(t.feature)
    attrs: dict[str, list] = {
        "nodes_treeids": [0] * n,
        "nodes_nodeids": list(range(n)),
        "nodes_featureids": [int(f) if f != LEAF else 0 for f in t.feature],
        "nodes_values": [float(v) if not lf else 0.0 for v, lf in zip(t.threshold, leaf)],
        "nodes_modes": ["LEAF" if lf else "BRANCH_LEQ" for lf in leaf],
        "nodes_truenodeids": [int(c) if c != LEAF else 0 for c in t.left],
        "nodes_falsenodeids": [int(c) if c != LEAF else 0 for c in t.right],
        "class_treeids": [],
        "class_nodeids": [],
        "class_ids": [],
        "class_weights": [],
    }
    for node, c in classes.items():
        for cls in range(k) if k > 2 else (1,):
            attrs["class_treeids"].append(0)
            attrs["class_nodeids"].append(node)
            attrs["class_ids"].append(cls)
            attrs["class_weights"].append(1.0 if cls == c else 0.0)
    if info.label_is_string:
        attrs["classlabels_strings"] = [str(c) for c in ens.classes]
        label_type = TensorProto.STRING
    else:
        attrs["classlabels_int64s"] = [int(c) for c in ens.classes]
        label_type = TensorProto.INT64
    scores = info.scores_name or "pace_scores"
    node = helper.make_node(
        "TreeEnsembleClassifier",
        [info.input_name],
        [info.label_name, scores],
        domain="ai.onnx.ml",
        post_transform="NONE",
        **attrs,
    )
    outputs = [helper.make_tensor_value_info(info.label_name, label_type, [None])]
    if info.scores_name:
        width = k if k > 2 else 2
        outputs.append(helper.make_tensor_value_info(scores, TensorProto.FLOAT, [None, width]))
    origin = list(ens.origin or ("new",))
    return _finished(
        [node], [], info.input_name, ens.n_features, outputs, TREE_DECISION, origin,
        info.feature_names,
    )  # fmt: skip
