"""Recogniser: the opset-5 ``TreeEnsemble`` operator (ai.onnx.ml opset 5, onnx >= 1.16)
followed by an ArgMax.

TreeEnsemble has no label output: the ONNX spec writes a classifier as TreeEnsemble ->
ArgMax, with the class labels looked up by a Gather (or the ArgMax index itself as the
label). No exporter writes it today (skl2onnx 1.20 and onnxmltools 1.16 write the
opset-3 classifier); onnxruntime 1.32 runs it. Accepted graph, exactly:

    TreeEnsemble(input) -> scores;  ArgMax(scores, axis 1 or -1, keepdims 0, first
    index) -> index;  label = index (int64 labels 0..K-1) or Gather(classes, index,
    axis 0) (a constant int64 or string list of K labels), optionally through Identity
    nodes; a second output may copy the scores.

Rule: label = classes[argmax_k S_k(x)], S_k = sum of the leaf weights of target k in
float32, ties to the lowest index (onnxruntime's ArgMax takes the first maximum).
post_transform must be NONE: a LOGISTIC, SOFTMAX or PROBIT applied before the ArgMax is
monotone in exact arithmetic but not in float32 (saturation and rounding tie different
scores: LOGISTIC(20) = LOGISTIC(30) = 1; PROBIT of a score above 1 is NaN), so the
ArgMax of the transformed scores is not the IR's. onnxruntime 1.32 also reads the
integer codes with its own enum (1 = LOGISTIC, 2 = SOFTMAX), where the ONNX spec says
1 = SOFTMAX, 2 = LOGISTIC. Node modes, aggregation and tree layout:
:func:`~pace_cert.model.tree_ensemble_op.parse_tree_ensemble_v5`.
"""

from __future__ import annotations

import numpy as np
import onnx

from pace_cert.model.ensemble import Ensemble
from pace_cert.model.onnx_graph import (
    ML_DOMAIN,
    NoMatch,
    UnsupportedModel,
    attrs,
    const,
    expect,
    interface_input,
    n_features,
    producers,
    sum_guard,
)
from pace_cert.model.tree_ensemble_op import estimator_layout, parse_tree_ensemble_v5

FAMILY = "ONNX TreeEnsemble (ai.onnx.ml opset 5)"
V5_GRAPH_OPS = {"TreeEnsemble", "ArgMax", "Gather", "Identity"}


def recognise_tree_ensemble_v5(model: onnx.ModelProto) -> Ensemble:
    """TreeEnsemble (opset 5) -> ArgMax [-> Gather(classes)] (see the module docstring)."""
    tes = [n for n in model.graph.node if n.op_type == "TreeEnsemble"]
    if len(tes) != 1:
        raise NoMatch("not a single TreeEnsemble (opset 5)")
    node = tes[0]
    if node.domain != ML_DOMAIN:
        raise NoMatch("TreeEnsemble outside ai.onnx.ml")
    other = {n.op_type for n in model.graph.node} - V5_GRAPH_OPS
    if other:
        raise UnsupportedModel(
            f"TreeEnsemble (opset 5) graph with {sorted(other)}: only TreeEnsemble -> "
            "ArgMax [-> Gather of the class labels] is modelled"
        )
    if node.input[0] != interface_input(model).name:
        raise NoMatch("the TreeEnsemble does not read the model input directly")
    prod = producers(model)
    label = model.graph.output[0].name
    while prod.get(label) is not None and prod[label].op_type == "Identity":
        label = prod[label].input[0]
    last = prod.get(label)
    if last is not None and last.op_type == "Gather":
        if attrs(last).get("axis", 0) != 0:
            raise UnsupportedModel("the label Gather must be over axis 0")
        classes = np.asarray(const(model, last.input[0]))
        if classes.ndim != 1:
            raise UnsupportedModel("the class labels gathered must be a 1-D constant")
        am = expect(prod, last.input[1], "ArgMax")
    elif last is not None and last.op_type == "ArgMax":
        classes, am = None, last
    else:
        raise UnsupportedModel(
            "TreeEnsemble (opset 5): the label must be ArgMax of its scores, or a Gather "
            "of the class labels by that ArgMax"
        )
    a = attrs(am)
    if am.input[0] != node.output[0]:
        raise UnsupportedModel("the ArgMax does not read the TreeEnsemble's scores")
    if a.get("axis", 0) not in (1, -1) or a.get("keepdims", 1) or a.get("select_last_index", 0):
        raise UnsupportedModel(
            "the ArgMax after TreeEnsemble must be over the classes (axis 1), keepdims=0, "
            "first index"
        )
    parsed = parse_tree_ensemble_v5(node)
    if parsed.post_transform != "NONE":
        raise UnsupportedModel(
            f"TreeEnsemble post_transform {parsed.post_transform} before the ArgMax: it "
            "can tie different scores in float32 (and onnxruntime 1.32 swaps codes 1 "
            "and 2: SOFTMAX runs as LOGISTIC); only NONE is modelled"
        )
    k = parsed.n_targets
    label_type = model.graph.output[0].type.tensor_type.elem_type
    if classes is None:
        classes = np.arange(k, dtype=np.int64)
        if label_type != onnx.TensorProto.INT64:
            raise UnsupportedModel("an ArgMax label must be an int64 output")
    elif classes.dtype.kind in "iu" and label_type == onnx.TensorProto.INT64:
        classes = classes.astype(np.int64)
    elif classes.dtype == object and label_type == onnx.TensorProto.STRING:
        classes = np.array(
            [c.decode() if isinstance(c, bytes) else str(c) for c in classes], dtype=object
        )
    else:
        raise UnsupportedModel("the class list must be int64 or strings, as the label output")
    if len(classes) != k:
        raise UnsupportedModel(f"{len(classes)} class labels for {k} TreeEnsemble targets")
    if len(set(classes.tolist())) != k:
        raise UnsupportedModel("the class labels are not distinct")
    base = np.zeros(k)
    return Ensemble(
        trees=tuple(parsed.trees),
        weights=np.ones(len(parsed.trees)),
        base=base,
        classes=classes,
        n_features=n_features(model, parsed.trees),
        kind="margin",  # eta is a raw score: leaf weights are not vote shares in general
        margin_scale=1.0,
        pattern="onnx-tree-ensemble-v5-argmax",
        runtime_guard=sum_guard(parsed.trees, base),
        origin=("original",) * len(parsed.trees),
        family=FAMILY,
        estimators=estimator_layout(parsed.tree_targets, k),
    )
