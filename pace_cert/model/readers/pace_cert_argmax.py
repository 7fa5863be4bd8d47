"""Recogniser: pace-cert's own output (TreeEnsembleRegressor -> ArgMax -> Gather),
exactly as ``pace_cert/model/onnx_writer.py`` writes it."""

from __future__ import annotations

import numpy as np
import onnx

from pace_cert.model.ensemble import (
    Ensemble,
)
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
from pace_cert.model.tree_ensemble_op import (
    NODE_ATTRS,
    TARGET_ATTRS,
    parse_tree_ensemble_classifier,
)

PACE_CERT_OPSETS = {"": 17, ML_DOMAIN: 3}  # what onnx_writer.ensemble_to_onnx writes


PACE_CERT_IR_VERSION = 8


PACE_CERT_ATTRS = {
    "TreeEnsembleRegressor": {
        "n_targets",
        "aggregate_function",
        "post_transform",
        "base_values",
        *NODE_ATTRS,
        *TARGET_ATTRS,
    },
    "ArgMax": {"axis", "keepdims", "select_last_index"},
    "Gather": {"axis"},
    "Identity": set(),
}


def check_pace_cert_graph(model: onnx.ModelProto, reg, am, gather) -> None:
    """The graph is exactly what :func:`pace_cert.model.onnx_writer.ensemble_to_onnx`
    writes, now or before.

    Nodes: the TreeEnsembleRegressor reading the input, ArgMax, and Gather from the class
    list (none when ``gather`` is None: the labels are the class indices 0..K-1, ArgMax
    writes the label); outputs: the label and optionally the scores, either the
    regressor's output itself or (as written before) one Identity copying it; at most
    one initializer, the class list of the Gather; the writer's opsets and IR version;
    only the attributes the writer sets. The certificate covers this graph; anything
    more (an output leaking the input, a node onnxruntime cannot load, ...) is not a
    model pace-cert wrote.
    """
    g = model.graph
    ops = sorted(n.op_type for n in g.node)
    idents = [n for n in g.node if n.op_type == "Identity"]
    wanted = ["TreeEnsembleRegressor", "ArgMax", *(["Gather"] if gather is not None else [])]
    if ops != sorted([*wanted, *["Identity"] * len(idents)]):
        raise NoMatch(f"nodes other than pace-cert's: {ops}")
    if len(idents) > 1 or len(g.output) not in (1, 2) or (idents and len(g.output) != 2):
        raise NoMatch("outputs other than the label and the scores")
    for n in g.node:
        if n.domain != (ML_DOMAIN if n.op_type == "TreeEnsembleRegressor" else ""):
            raise NoMatch(f"{n.op_type} in domain {n.domain!r}")
        extra = {a.name for a in n.attribute} - PACE_CERT_ATTRS[n.op_type]
        if extra:
            raise NoMatch(f"{n.op_type} with attributes {sorted(extra)}")
    scores = reg.output[0]
    label = g.output[0].name
    wiring = [
        (reg, [interface_input(model).name], [scores]),
        (am, [scores], [label if gather is None else am.output[0]]),
        *((n, [scores], [g.output[1].name]) for n in idents),
    ]
    if gather is not None:
        wiring.append((gather, [gather.input[0], am.output[0]], [label]))
    if any(list(n.input) != ins or list(n.output) != outs for n, ins, outs in wiring):
        raise NoMatch("nodes are not wired as pace-cert writes them")
    if len(g.output) == 2:
        if not idents and g.output[1].name != scores:
            raise NoMatch("the second output must be the regressor's scores")
        if g.output[1].type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
            raise NoMatch("the scores output must be float")
    classes = [gather.input[0]] if gather is not None else []
    if [i.name for i in g.initializer] != classes or g.sparse_initializer:
        raise NoMatch("the class list must be the only initializer")
    if len(g.input) != 1 or model.functions:
        raise NoMatch("inputs or functions other than pace-cert's")
    if not interface_input(model).type.tensor_type.shape.dim[1].HasField("dim_value"):
        raise NoMatch("the input width must be fixed, as pace-cert writes it")
    opsets = [(o.domain, o.version) for o in model.opset_import]
    if sorted(opsets) != sorted(PACE_CERT_OPSETS.items()):
        raise NoMatch(f"opsets {opsets}, pace-cert writes {PACE_CERT_OPSETS}")
    if model.ir_version != PACE_CERT_IR_VERSION:
        raise NoMatch(f"IR version {model.ir_version}, pace-cert writes {PACE_CERT_IR_VERSION}")


def recognise_pace_cert_argmax(model: onnx.ModelProto) -> Ensemble:
    """pace-cert's own output: TreeEnsembleRegressor -> ArgMax -> Gather(class labels),
    or without the Gather when the labels are the class indices, exactly as the writer
    lays it out (:func:`check_pace_cert_graph`)."""
    prod = producers(model)
    last = prod.get(model.graph.output[0].name)
    if last is not None and last.op_type == "Gather":
        gather = last
        if attrs(gather).get("axis", 0) != 0:
            raise NoMatch("label is not Gather(classes, ArgMax(scores))")
        classes = const(model, gather.input[0]).reshape(-1)
        am = expect(prod, gather.input[1], "ArgMax")
    elif last is not None and last.op_type == "ArgMax":
        gather, am, classes = None, last, None
    else:
        raise NoMatch("label is not Gather(classes, ArgMax(scores)) or ArgMax(scores)")
    at = attrs(am)
    if at.get("axis", 0) != 1 or at.get("select_last_index", 0) != 0 or at.get("keepdims", 1):
        raise NoMatch("ArgMax must be over axis 1, first index, keepdims=0")
    reg = expect(prod, am.input[0], "TreeEnsembleRegressor")
    check_pace_cert_graph(model, reg, am, gather)
    if attrs(reg).get("post_transform", b"NONE") not in (b"NONE", "NONE"):
        raise NoMatch("regressor post_transform must be NONE")
    label_type = model.graph.output[0].type.tensor_type.elem_type
    if classes is None:  # ArgMax writes the label: the class indices 0..n_targets-1
        if label_type != onnx.TensorProto.INT64:
            raise NoMatch("a label written by ArgMax must be int64")
        classes = np.arange(int(attrs(reg).get("n_targets", 0)), dtype=np.int64)
    elif classes.dtype == np.int64 and label_type == onnx.TensorProto.INT64:
        pass
    elif classes.dtype == object and label_type == onnx.TensorProto.STRING:
        classes = np.array(
            [c.decode() if isinstance(c, bytes) else str(c) for c in classes], object
        )
    else:
        raise NoMatch("the class list must be int64 or strings, as the label output")
    tec = parse_tree_ensemble_classifier(reg, classes)
    k = len(classes)
    if len(tec.base) not in (0, k):
        raise UnsupportedModel("base_values must be empty or one per class")
    base = tec.base if len(tec.base) else np.zeros(k)
    origin = ("original",) * len(tec.trees)
    props = {p.key: p.value for p in model.metadata_props}
    if "pace_cert.origin" in props:
        import json

        try:
            o = tuple(json.loads(props["pace_cert.origin"]))
            if len(o) == len(tec.trees) and set(o) <= {"original", "new"}:
                origin = o
        except ValueError:
            pass
    return Ensemble(
        trees=tuple(tec.trees),
        weights=np.ones(len(tec.trees)),
        base=base,
        classes=classes,
        n_features=n_features(model, tec.trees),
        kind="margin",
        margin_scale=1.0,
        pattern="pace-cert-argmax",
        runtime_guard=sum_guard(tec.trees, base),
        origin=origin,
    )
