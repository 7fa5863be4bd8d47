"""What every ONNX recogniser shares: the model's interface, graph look-ups (producers,
constants, scalars, expected ops), the label path, and the checks made before any
recogniser runs (every tensor name defined once)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from pace_cert.model.ensemble import (
    Tree,
    float32_sum_guard,
)

ML_DOMAIN = "ai.onnx.ml"


U32 = 2.0**-24


class UnsupportedModel(ValueError):
    """The graph is ONNX but not a tree ensemble pattern we can model exactly."""


@dataclass(frozen=True)
class OnnxModelInfo:
    """What the writer needs to mimic the original's interface."""

    input_name: str
    label_name: str
    scores_name: str | None
    label_is_string: bool
    #: the feature columns by name, in input order (metadata ``FEATURE_NAMES_KEY``),
    #: when the model records them: data is then matched to it by name, never by position
    feature_names: tuple[str, ...] | None = None


#: the metadata key under which a model records its feature columns' names: a JSON list
#: of strings in input order (written by :func:`pace_cert.export.estimator_to_onnx` from
#: a fitted estimator's ``feature_names_in_`` and carried to the compressed model)
FEATURE_NAMES_KEY = "pace_cert.feature_names"


def recorded_feature_names(
    model: onnx.ModelProto, n_features: int | None
) -> tuple[str, ...] | None:
    """The feature names ``model`` records under :data:`FEATURE_NAMES_KEY` (None when it
    records none). UnsupportedModel when the entry is not a JSON list of distinct
    strings, one per input column (``n_features``, when the input's width is fixed)."""
    raw = next((p.value for p in model.metadata_props if p.key == FEATURE_NAMES_KEY), None)
    if raw is None:
        return None
    try:
        names = json.loads(raw)
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise UnsupportedModel(f"metadata {FEATURE_NAMES_KEY} is not a JSON list of strings")
    if len(set(names)) != len(names):
        raise UnsupportedModel(f"metadata {FEATURE_NAMES_KEY} names a feature twice")
    if n_features is not None and len(names) != n_features:
        raise UnsupportedModel(
            f"metadata {FEATURE_NAMES_KEY} names {len(names)} features, the input has {n_features}"
        )
    return tuple(names)


class NoMatch(UnsupportedModel):
    pass


def all_tensors(model: onnx.ModelProto):
    yield from model.graph.initializer
    for n in model.graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                yield a.t
            elif a.type == onnx.AttributeProto.TENSORS:
                yield from a.tensors


def check_single_definitions(model: onnx.ModelProto) -> None:
    """Every tensor name of the graph is defined once.

    The recognisers look a name up once (an initializer, else the node producing it),
    but onnxruntime resolves a doubly defined name its own way (a later duplicate
    initializer wins, a node output replaces an initializer of the same name), so the
    reader and onnxruntime could read different tensors (e.g. another class list).
    Rejected: duplicate initializer names (dense or sparse), duplicate graph inputs, a
    node output named like an initializer, a graph input or another node output. An
    initializer that is also a graph input (the legacy default-value form) is allowed.
    """
    g = model.graph
    defined: set[str] = set()
    for t in [*g.initializer, *(s.values for s in g.sparse_initializer)]:
        if t.name in defined:
            raise UnsupportedModel(f"initializer {t.name!r} is defined more than once")
        defined.add(t.name)
    inputs: set[str] = set()
    for i in g.input:
        if i.name in inputs:
            raise UnsupportedModel(f"graph input {i.name!r} is declared more than once")
        inputs.add(i.name)
    defined |= inputs
    for n in g.node:
        for o in n.output:
            if not o:  # an omitted optional output
                continue
            if o in defined:
                raise UnsupportedModel(f"tensor {o!r} is defined more than once")
            defined.add(o)


def interface(model: onnx.ModelProto) -> OnnxModelInfo:
    g = model.graph
    init_names = {i.name for i in g.initializer}
    inputs = [i for i in g.input if i.name not in init_names]
    if len(inputs) != 1:
        raise UnsupportedModel(f"expected one input tensor, found {len(inputs)}")
    inp = inputs[0]
    tt = inp.type.tensor_type
    if tt.elem_type != onnx.TensorProto.FLOAT:
        raise UnsupportedModel("the input must be a float32 tensor")
    if len(tt.shape.dim) != 2:
        raise UnsupportedModel("the input must be a 2-D tensor [rows, features]")
    if len(g.output) < 1:
        raise UnsupportedModel("no outputs")
    label = g.output[0]
    ltype = label.type.tensor_type.elem_type
    if ltype not in (onnx.TensorProto.INT64, onnx.TensorProto.STRING):
        raise UnsupportedModel("the first output must be an int64 or string label tensor")
    scores = g.output[1].name if len(g.output) > 1 else None
    width = tt.shape.dim[1].dim_value if tt.shape.dim[1].HasField("dim_value") else None
    names = recorded_feature_names(model, width)
    return OnnxModelInfo(inp.name, label.name, scores, ltype == onnx.TensorProto.STRING, names)


def n_features(model: onnx.ModelProto, trees: list[Tree]) -> int:
    dim = interface_input(model).type.tensor_type.shape.dim[1]
    used = max((int(t.feature.max()) for t in trees), default=-1) + 1
    if dim.HasField("dim_value"):
        if dim.dim_value < used:
            raise UnsupportedModel("a tree uses a feature beyond the declared input width")
        return int(dim.dim_value)
    return used


def interface_input(model: onnx.ModelProto):
    init_names = {i.name for i in model.graph.initializer}
    return next(i for i in model.graph.input if i.name not in init_names)


def producers(model: onnx.ModelProto) -> dict[str, onnx.NodeProto]:
    return {o: n for n in model.graph.node for o in n.output}


def attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def const(model: onnx.ModelProto, name: str) -> np.ndarray:
    """The value of an initializer or a Constant node's tensor (each name is defined
    once: :func:`check_single_definitions`)."""
    for i in model.graph.initializer:
        if i.name == name:
            return numpy_helper.to_array(i)
    n = producers(model).get(name)
    if n is not None and n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
        for a in n.attribute:
            if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                return numpy_helper.to_array(a.t)
    raise NoMatch(f"{name!r} is not a constant")


def scalar(model: onnx.ModelProto, name: str) -> float:
    """A finite numeric constant with one element and rank <= 2.

    Broadcast against the [N, K] vote matrix such a constant acts on every entry alike
    and keeps the shape; a per-class vector (or a [1, 1, 1] tensor, which moves the
    classes off axis 1) would change what the final ArgMax ranks.
    """
    a = np.asarray(const(model, name))
    if a.dtype.kind not in "biuf" or a.size != 1 or a.ndim > 2:
        raise NoMatch(f"{name!r} must be a single number")
    v = float(a.reshape(-1)[0])
    if not np.isfinite(v):
        raise NoMatch(f"{name!r} is not finite")
    return v


def expect(prod: dict[str, onnx.NodeProto], name: str, op: str) -> onnx.NodeProto:
    n = prod.get(name)
    if n is None or n.op_type != op:
        raise NoMatch(f"expected {op} producing {name!r}, found {n.op_type if n else 'input'}")
    return n


def label_source(model: onnx.ModelProto, prod) -> tuple[str, list[int]]:
    """The tensor the label output copies, and the Cast targets on the way: skl2onnx
    ends the label path with Identity nodes (string labels, zipmap on) or Casts to
    int64 (int64 labels, zipmap on), which leave every label as it is when the labels
    are int64 already (the recognisers check that with the class list)."""
    label, casts = model.graph.output[0].name, []
    while prod.get(label) is not None and prod[label].op_type in ("Identity", "Cast"):
        n = prod[label]
        if n.op_type == "Cast":
            casts.append(attrs(n).get("to"))
        label = n.input[0]
    return label, casts


def check_label_casts(casts: list[int], classes: np.ndarray) -> None:
    if casts and (set(casts) != {onnx.TensorProto.INT64} or classes.dtype.kind not in "iu"):
        raise NoMatch("the label may only be cast from int64 class labels to int64")


def sum_guard(trees: list[Tree], base: np.ndarray) -> float:
    """:func:`~pace_cert.model.ensemble.float32_sum_guard`; scores that could overflow float32
    in onnxruntime (or too many trees for the error bound) are unsupported."""
    try:
        return float32_sum_guard(trees, base)
    except ValueError as e:
        raise UnsupportedModel(str(e)) from None
