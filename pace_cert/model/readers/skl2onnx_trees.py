"""Recogniser: skl2onnx RandomForest / ExtraTrees / GradientBoosting / DecisionTree
classifiers (one TreeEnsembleClassifier; zipmap on or off)."""

from __future__ import annotations

import numpy as np
import onnx

from pace_cert.model.ensemble import (
    Ensemble,
)
from pace_cert.model.onnx_graph import (
    ML_DOMAIN,
    NoMatch,
    check_label_casts,
    interface_input,
    label_source,
    n_features,
    producers,
    sum_guard,
)
from pace_cert.model.tree_ensemble_op import (
    decision_rule,
    parse_tree_ensemble_classifier,
)


def recognise_tree_ensemble_classifier(model: onnx.ModelProto) -> Ensemble:
    """skl2onnx RandomForest / ExtraTrees / GradientBoosting / DecisionTree classifiers."""
    nodes = model.graph.node
    tecs = [n for n in nodes if n.op_type == "TreeEnsembleClassifier"]
    if len(tecs) != 1:
        raise NoMatch("not a single TreeEnsembleClassifier")
    other = {n.op_type for n in nodes} - {"TreeEnsembleClassifier", "Identity", "ZipMap", "Cast"}
    if other:
        raise NoMatch(f"unexpected ops {sorted(other)}")
    node = tecs[0]
    if node.domain != ML_DOMAIN:
        raise NoMatch("TreeEnsembleClassifier outside ai.onnx.ml")
    prod = producers(model)
    label, casts = label_source(model, prod)
    if prod.get(label) is not node or label != node.output[0]:
        raise NoMatch("the label output does not come from the TreeEnsembleClassifier")
    if node.input[0] != interface_input(model).name:
        raise NoMatch("the tree ensemble does not read the model input directly")
    tec = parse_tree_ensemble_classifier(node)
    check_label_casts(casts, tec.classes)
    trees, base, kind, scale, rule = decision_rule(tec)
    guard = sum_guard(trees, base)
    return Ensemble(
        trees=tuple(trees),
        weights=np.ones(len(trees)),
        base=base,
        classes=tec.classes,
        n_features=n_features(model, trees),
        kind=kind,
        margin_scale=scale,
        pattern=f"skl2onnx-tree-ensemble-classifier/{rule}",
        runtime_guard=guard,
        origin=("original",) * len(trees),
    )
