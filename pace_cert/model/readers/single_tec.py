"""What every single-TreeEnsembleClassifier recogniser shares (skl2onnx's forests and
boosting, onnxmltools' LightGBM and XGBoost): the label path, the decision rule and the
IR. The exporter recognisers differ only in the nodes they accept around the one
TreeEnsembleClassifier and in the family they name; the label is the classifier's own
label output (through Identity nodes and int64 -> int64 Casts), so nothing else in the
graph can change it, and its rule is :func:`~pace_cert.model.tree_ensemble_op.decision_rule`.
"""

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
    ParsedTrees,
    decision_rule,
    estimator_layout,
    parse_tree_ensemble_classifier,
)


def the_classifier(model: onnx.ModelProto, allowed: set[str]) -> onnx.NodeProto:
    """The graph's one TreeEnsembleClassifier (ai.onnx.ml), reading the model input;
    every node's op type must be in ``allowed`` (NoMatch naming the others)."""
    nodes = model.graph.node
    tecs = [n for n in nodes if n.op_type == "TreeEnsembleClassifier"]
    if len(tecs) != 1:
        raise NoMatch("not a single TreeEnsembleClassifier")
    other = {n.op_type for n in nodes} - allowed - {"TreeEnsembleClassifier"}
    if other:
        raise NoMatch(f"unexpected ops {sorted(other)}")
    node = tecs[0]
    if node.domain != ML_DOMAIN:
        raise NoMatch("TreeEnsembleClassifier outside ai.onnx.ml")
    if node.input[0] != interface_input(model).name:
        raise NoMatch("the tree ensemble does not read the model input directly")
    return node


def label_from(model: onnx.ModelProto, node: onnx.NodeProto) -> list[int]:
    """The Cast targets on the label path; NoMatch unless the label output copies the
    classifier's label output."""
    prod = producers(model)
    label, casts = label_source(model, prod)
    if prod.get(label) is not node or label != node.output[0]:
        raise NoMatch("the label output does not come from the TreeEnsembleClassifier")
    return casts


def tec_ensemble(
    model: onnx.ModelProto, node: onnx.NodeProto, pattern: str, family: str
) -> tuple[Ensemble, ParsedTrees]:
    """The IR of a graph whose label is ``node``'s label output (checked here)."""
    casts = label_from(model, node)
    tec = parse_tree_ensemble_classifier(node)
    check_label_casts(casts, tec.classes)
    trees, base, kind, scale, rule = decision_rule(tec)
    guard = sum_guard(trees, base)
    ens = Ensemble(
        trees=tuple(trees),
        weights=np.ones(len(trees)),
        base=base,
        classes=tec.classes,
        n_features=n_features(model, trees),
        kind=kind,
        margin_scale=scale,
        pattern=f"{pattern}/{rule}",
        runtime_guard=guard,
        origin=("original",) * len(trees),
        family=family,
        estimators=estimator_layout(tec.tree_classes, len(tec.classes)),
    )
    return ens, tec
