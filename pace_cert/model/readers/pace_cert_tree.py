"""Recogniser: a one-tree model pace-cert wrote as one TreeEnsembleClassifier
(``pace_cert.model.onnx_writer.tree_classifier_to_onnx``, mode tree's output).

The decision rule is onnxruntime's TreeEnsembleClassifier label rule, reduced to argmax
form by :func:`~pace_cert.model.tree_ensemble_op.decision_rule` like every exporter's
(tested against onnxruntime); this recogniser only insists that the graph is exactly
what the writer lays out (one node reading the input, the label its first output, the
scores its second when the original had them, no other node, output or initializer,
only the attributes the writer sets, its opsets and IR version and its decision
metadata), and names the family.
"""

from __future__ import annotations

import json

import onnx

from pace_cert.model.ensemble import Ensemble
from pace_cert.model.onnx_graph import ML_DOMAIN, NoMatch, interface_input
from pace_cert.model.onnx_writer import TREE_DECISION, TREE_PATTERN
from pace_cert.model.readers.pace_cert_argmax import PACE_CERT_IR_VERSION, PACE_CERT_OPSETS
from pace_cert.model.readers.single_tec import tec_ensemble

#: the attributes the writer sets on the TreeEnsembleClassifier
TREE_ATTRS = {
    "nodes_treeids",
    "nodes_nodeids",
    "nodes_featureids",
    "nodes_values",
    "nodes_modes",
    "nodes_truenodeids",
    "nodes_falsenodeids",
    "class_treeids",
    "class_nodeids",
    "class_ids",
    "class_weights",
    "classlabels_int64s",
    "classlabels_strings",
    "post_transform",
}


def recognise_pace_cert_tree(model: onnx.ModelProto) -> Ensemble:
    """pace-cert's one-tree output: one TreeEnsembleClassifier, exactly as written."""
    props = {p.key: p.value for p in model.metadata_props}
    if model.producer_name != "pace-cert" or props.get("pace_cert.decision") != TREE_DECISION:
        raise NoMatch("not a one-tree classifier written by pace-cert")
    g = model.graph
    if len(g.node) != 1 or g.node[0].op_type != "TreeEnsembleClassifier":
        raise NoMatch("nodes other than one TreeEnsembleClassifier")
    node = g.node[0]
    if node.domain != ML_DOMAIN or list(node.input) != [interface_input(model).name]:
        raise NoMatch("the classifier must read the model input, in ai.onnx.ml")
    extra = {a.name for a in node.attribute} - TREE_ATTRS
    if extra:
        raise NoMatch(f"TreeEnsembleClassifier with attributes {sorted(extra)}")
    outs = [o.name for o in g.output]
    if outs not in ([node.output[0]], [node.output[0], node.output[1]]):
        raise NoMatch("outputs other than the label and the scores")
    if g.initializer or g.sparse_initializer or len(g.input) != 1 or model.functions:
        raise NoMatch("initializers, inputs or functions other than pace-cert's")
    opsets = [(o.domain, o.version) for o in model.opset_import]
    if sorted(opsets) != sorted(PACE_CERT_OPSETS.items()):
        raise NoMatch(f"opsets {opsets}, pace-cert writes {PACE_CERT_OPSETS}")
    if model.ir_version != PACE_CERT_IR_VERSION:
        raise NoMatch(f"IR version {model.ir_version}, pace-cert writes {PACE_CERT_IR_VERSION}")
    ens, _ = tec_ensemble(model, node, TREE_PATTERN, "pace-cert compressed model (one tree)")
    if ens.n_trees != 1:
        raise NoMatch("more than one tree")
    origin = ens.origin
    try:
        o = tuple(json.loads(props.get("pace_cert.origin", "[]")))
        if len(o) == 1 and set(o) <= {"original", "new"}:
            origin = o
    except ValueError:
        pass
    return Ensemble(
        trees=ens.trees,
        weights=ens.weights,
        base=ens.base,
        classes=ens.classes,
        n_features=ens.n_features,
        kind=ens.kind,
        margin_scale=ens.margin_scale,
        pattern=ens.pattern,
        runtime_guard=ens.runtime_guard,
        origin=origin,
        family=ens.family,
    )
