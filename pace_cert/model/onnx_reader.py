"""Read ONNX tree-ensemble classifiers into the IR, exactly as onnxruntime runs them.

Table-driven: every attribute of a TreeEnsembleClassifier is read into numpy arrays
once, split into trees as onnxruntime splits them (only the canonical layout, where
onnxruntime's roots are node 0, is accepted) and each tree is built by one code path.
Each exporter pattern is one recogniser that returns an
:class:`~pace_cert.ensemble.Ensemble` or raises :class:`UnsupportedModel` saying why.
A graph that defines a tensor name twice, or whose scores could overflow float32, is
rejected before or inside every recogniser.

Decision rules reproduced (measured on onnxruntime 1.32, pinned by tests):

* multi-class TreeEnsembleClassifier: label = argmax of (sum of leaf weights + base),
  ties to the lowest index, taken before any post transform;
* binary with a single score column: label 1 iff score + base > t, t = 0.5 when every
  class weight is >= 0, else t = 0 (post transforms do not matter);
* binary whose class_ids name both classes: label 1 iff the class-1 score > 0 (the
  class-0 scores are ignored), provided class 1 has a score on every path;
* skl2onnx AdaBoost (SAMME): a graph of one TreeEnsembleClassifier per estimator,
  per-estimator ArgMax votes mapped by Where/Mul to +w / sym*w, summed and pushed
  through positive scalings and Exp; the label is the argmax of the summed votes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from pace_cert.errors import InputError
from pace_cert.model.ensemble import (
    LEAF,
    Ensemble,
    Tree,
    float32_sum_guard,
    next_float32,
    prev_float32,
    summation_error_bound,
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


def load_onnx(path: str | Path) -> onnx.ModelProto:
    """Load an ONNX file without following external-data paths (exit 3 on failure)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(p, "file not found") from None
    except IsADirectoryError:
        raise InputError(p, "is a directory, expected an ONNX file") from None
    except OSError as e:
        raise InputError(p, f"cannot read file ({e.strerror})") from None
    try:
        model = onnx.load_from_string(data)
    except Exception:
        raise InputError(p, "not an ONNX model (protobuf parse failed)") from None
    if not model.graph.node:
        raise InputError(p, "not an ONNX model (empty graph)")
    for t in _all_tensors(model):
        if t.data_location == onnx.TensorProto.EXTERNAL or t.external_data:
            raise InputError(p, f"tensor {t.name!r} uses external data, which is never followed")
    return model


def _all_tensors(model: onnx.ModelProto):
    yield from model.graph.initializer
    for n in model.graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                yield a.t
            elif a.type == onnx.AttributeProto.TENSORS:
                yield from a.tensors


def read_ensemble(path: str | Path) -> tuple[Ensemble, OnnxModelInfo]:
    """Read ``path`` into the IR; unsupported or malformed models raise InputError."""
    model = load_onnx(path)
    try:
        return ensemble_from_model(model)
    except UnsupportedModel as e:
        raise InputError(path, f"unsupported model: {e}") from None


def ensemble_from_model(model: onnx.ModelProto) -> tuple[Ensemble, OnnxModelInfo]:
    """Try every recogniser in turn; the first that matches wins."""
    _check_single_definitions(model)
    info = _interface(model)
    reasons = []
    for recognise in RECOGNISERS:
        try:
            return recognise(model), info
        except _NoMatch as e:
            reasons.append(f"{recognise.__name__}: {e}")
    raise UnsupportedModel("; ".join(reasons))


class _NoMatch(UnsupportedModel):
    pass


# ----------------------------------------------------------------------------- interface


def _check_single_definitions(model: onnx.ModelProto) -> None:
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


def _interface(model: onnx.ModelProto) -> OnnxModelInfo:
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
    return OnnxModelInfo(inp.name, label.name, scores, ltype == onnx.TensorProto.STRING)


def _n_features(model: onnx.ModelProto, trees: list[Tree]) -> int:
    dim = _interface_input(model).type.tensor_type.shape.dim[1]
    used = max((int(t.feature.max()) for t in trees), default=-1) + 1
    if dim.HasField("dim_value"):
        if dim.dim_value < used:
            raise UnsupportedModel("a tree uses a feature beyond the declared input width")
        return int(dim.dim_value)
    return used


def _interface_input(model: onnx.ModelProto):
    init_names = {i.name for i in model.graph.initializer}
    return next(i for i in model.graph.input if i.name not in init_names)


# ------------------------------------------------------------------- TreeEnsembleClassifier


@dataclass(frozen=True)
class _TEC:
    """A parsed TreeEnsembleClassifier node: trees with per-class leaf weights."""

    trees: list[Tree]
    classes: np.ndarray
    base: np.ndarray
    class_ids_used: np.ndarray
    all_weights_nonneg: bool
    has_class_on_all_paths: np.ndarray  # bool [n_classes]


def _attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _tree_runs(tree_ids: np.ndarray, node_ids: np.ndarray) -> list[np.ndarray]:
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
) -> _TEC:
    """Parse one TreeEnsembleClassifier node into trees (values: one column per class).

    With ``n_targets_classes`` the node is a TreeEnsembleRegressor whose targets are
    the given classes (``target_*`` attributes instead of ``class_*``).
    """
    a = _attrs(node)
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
    for sel in _tree_runs(tree_ids, node_ids):  # sel[j]: attribute position of node id j
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
    return _TEC(
        trees=trees,
        classes=classes,
        base=base,
        class_ids_used=np.unique(c_id),
        all_weights_nonneg=bool(np.all(c_w >= 0)),
        has_class_on_all_paths=has_all,
    )


def _decision_from_tec(tec: _TEC) -> tuple[list[Tree], np.ndarray, str, float, str]:
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
        trees = [_single_column(tr, col) for tr in tec.trees]
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
    trees = [_single_column(tr, 1) for tr in tec.trees]
    return trees, np.zeros(2), "margin", 1.0, "binary_class1_positive"


def _sum_guard(trees: list[Tree], base: np.ndarray) -> float:
    """:func:`~pace_cert.ensemble.float32_sum_guard`; scores that could overflow float32
    in onnxruntime (or too many trees for the error bound) are unsupported."""
    try:
        return float32_sum_guard(trees, base)
    except ValueError as e:
        raise UnsupportedModel(str(e)) from None


def _single_column(tree: Tree, col: int) -> Tree:
    value = np.zeros_like(tree.value)
    value[:, 1] = tree.value[:, col]
    return Tree(tree.feature, tree.threshold, tree.left, tree.right, value)


# ------------------------------------------------------------------------- recognisers


def _producers(model: onnx.ModelProto) -> dict[str, onnx.NodeProto]:
    return {o: n for n in model.graph.node for o in n.output}


def _label_source(model: onnx.ModelProto, prod) -> tuple[str, list[int]]:
    """The tensor the label output copies, and the Cast targets on the way: skl2onnx
    ends the label path with Identity nodes (string labels, zipmap on) or Casts to
    int64 (int64 labels, zipmap on), which leave every label as it is when the labels
    are int64 already (the recognisers check that with the class list)."""
    label, casts = model.graph.output[0].name, []
    while prod.get(label) is not None and prod[label].op_type in ("Identity", "Cast"):
        n = prod[label]
        if n.op_type == "Cast":
            casts.append(_attrs(n).get("to"))
        label = n.input[0]
    return label, casts


def _check_label_casts(casts: list[int], classes: np.ndarray) -> None:
    if casts and (set(casts) != {onnx.TensorProto.INT64} or classes.dtype.kind not in "iu"):
        raise _NoMatch("the label may only be cast from int64 class labels to int64")


def recognise_tree_ensemble_classifier(model: onnx.ModelProto) -> Ensemble:
    """skl2onnx RandomForest / ExtraTrees / GradientBoosting / DecisionTree classifiers."""
    nodes = model.graph.node
    tecs = [n for n in nodes if n.op_type == "TreeEnsembleClassifier"]
    if len(tecs) != 1:
        raise _NoMatch("not a single TreeEnsembleClassifier")
    other = {n.op_type for n in nodes} - {"TreeEnsembleClassifier", "Identity", "ZipMap", "Cast"}
    if other:
        raise _NoMatch(f"unexpected ops {sorted(other)}")
    node = tecs[0]
    if node.domain != ML_DOMAIN:
        raise _NoMatch("TreeEnsembleClassifier outside ai.onnx.ml")
    prod = _producers(model)
    label, casts = _label_source(model, prod)
    if prod.get(label) is not node or label != node.output[0]:
        raise _NoMatch("the label output does not come from the TreeEnsembleClassifier")
    if node.input[0] != _interface_input(model).name:
        raise _NoMatch("the tree ensemble does not read the model input directly")
    tec = parse_tree_ensemble_classifier(node)
    _check_label_casts(casts, tec.classes)
    trees, base, kind, scale, rule = _decision_from_tec(tec)
    guard = _sum_guard(trees, base)
    return Ensemble(
        trees=tuple(trees),
        weights=np.ones(len(trees)),
        base=base,
        classes=tec.classes,
        n_features=_n_features(model, trees),
        kind=kind,
        margin_scale=scale,
        pattern=f"skl2onnx-tree-ensemble-classifier/{rule}",
        runtime_guard=guard,
        origin=("original",) * len(trees),
    )


def _const(model: onnx.ModelProto, name: str) -> np.ndarray:
    """The value of an initializer or a Constant node's tensor (each name is defined
    once: :func:`_check_single_definitions`)."""
    for i in model.graph.initializer:
        if i.name == name:
            return numpy_helper.to_array(i)
    n = _producers(model).get(name)
    if n is not None and n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
        for a in n.attribute:
            if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                return numpy_helper.to_array(a.t)
    raise _NoMatch(f"{name!r} is not a constant")


def _scalar(model: onnx.ModelProto, name: str) -> float:
    """A finite numeric constant with one element and rank <= 2.

    Broadcast against the [N, K] vote matrix such a constant acts on every entry alike
    and keeps the shape; a per-class vector (or a [1, 1, 1] tensor, which moves the
    classes off axis 1) would change what the final ArgMax ranks.
    """
    a = np.asarray(_const(model, name))
    if a.dtype.kind not in "biuf" or a.size != 1 or a.ndim > 2:
        raise _NoMatch(f"{name!r} must be a single number")
    v = float(a.reshape(-1)[0])
    if not np.isfinite(v):
        raise _NoMatch(f"{name!r} is not finite")
    return v


def _expect(prod: dict[str, onnx.NodeProto], name: str, op: str) -> onnx.NodeProto:
    n = prod.get(name)
    if n is None or n.op_type != op:
        raise _NoMatch(f"expected {op} producing {name!r}, found {n.op_type if n else 'input'}")
    return n


def _leaf_votes_ort(tec: _TEC, tree: Tree) -> np.ndarray:
    """Class index that ArgMax picks on the estimator's probability output, per node.

    Emulates what onnxruntime writes to the ``probabilities`` output in float32:
    multi-class -> the class scores; binary single column -> [1 - s, s] when all
    weights are >= 0, else [-s, s]; ArgMax takes the first maximum.
    """
    k = len(tec.classes)
    v32 = tree.value.astype(np.float32)
    if k > 2:
        if len(tec.base):
            v32 = v32 + tec.base.astype(np.float32)
        probs = v32
    else:
        if len(tec.class_ids_used) > 1 or len(tec.base):
            raise _NoMatch("AdaBoost estimator with a two-column binary layout")
        col = int(tec.class_ids_used[0]) if len(tec.class_ids_used) else 0
        s = v32[:, col]
        other = (np.float32(1) - s) if tec.all_weights_nonneg else -s
        probs = np.stack([other, s], axis=1).astype(np.float32)
    return np.argmax(probs, axis=1)


MAX_EXP_ARG = 60.0
"""Largest accepted bound on |argument| of the AdaBoost graph's Exp.

float32 exp overflows to inf above ~88.7 and leaves the normal range below ~-87.3;
with |a| <= 60 every exp lies in [8.7e-27, 1.2e26], so none is 0 or inf, the row sum
of up to 10**12 classes stays finite and the relative error bound of the runtime guard
holds. skl2onnx's SAMME graphs have |a| <= about 1 (the votes are normalised by the
sum of the estimator weights)."""


def _check_ones(model: onnx.ModelProto, prod, name: str, probs: set[str]) -> None:
    """``name`` (Where's value for the predicted class) is 1 everywhere and keeps the
    [N, K] vote shape: skl2onnx's ConstantOfShape(Shape(an estimator's probabilities))
    of value 1, or a constant 1 (see :func:`_scalar`)."""
    n = prod.get(name)
    if n is None or n.op_type != "ConstantOfShape":
        if _scalar(model, name) != 1.0:
            raise _NoMatch("Where must select 1 or a symmetric weight")
        return
    sh = _expect(prod, n.input[0], "Shape")
    value = [a.t for a in n.attribute if a.name == "value" and a.type == a.TENSOR]
    if sh.attribute or sh.input[0] not in probs or len(value) != 1:
        raise _NoMatch("ConstantOfShape must take the shape of an estimator's probabilities")
    v = numpy_helper.to_array(value[0])
    if v.size != 1 or float(v.reshape(-1)[0]) != 1.0:
        raise _NoMatch("Where must select 1 or a symmetric weight")


def _check_row_normaliser(model: onnx.ModelProto, prod, add: onnx.NodeProto, exp_out: str):
    """The final Div's divisor is one positive number per row, so it cannot change the
    row's argmax: skl2onnx's ``n = Reshape(ReduceSum(exp), [-1, 1])`` plus
    ``Cast(Equal(Cast(n), zero))`` (1 where the sum truncates to 0), both [rows, 1]."""
    resh = _expect(prod, add.input[0], "Reshape")
    rs = _expect(prod, resh.input[0], "ReduceSum")
    if rs.input[0] != exp_out:
        raise _NoMatch("normaliser is not the row sum of the exponentials")
    shape = np.asarray(_const(model, resh.input[1]))
    if shape.shape != (2,) or list(shape) != [-1, 1]:
        raise _NoMatch("normaliser must be reshaped to one column")
    fix = _expect(prod, add.input[1], "Cast")
    if _attrs(fix).get("to") != onnx.TensorProto.FLOAT:
        raise _NoMatch("normaliser correction must be cast to float")
    eq = _expect(prod, fix.input[0], "Equal")
    cast = _expect(prod, eq.input[0], "Cast")
    if cast.input[0] != resh.output[0]:
        raise _NoMatch("normaliser correction must test the normaliser")
    _scalar(model, eq.input[1])  # one number: the correction stays [rows, 1]


def recognise_adaboost_samme(model: onnx.ModelProto) -> Ensemble:
    """skl2onnx AdaBoostClassifier (SAMME): many TreeEnsembleClassifier nodes + vote graph."""
    prod = _producers(model)
    label_name, casts = _label_source(model, prod)
    n = prod.get(label_name)
    if n is None or n.op_type != "Reshape":
        raise _NoMatch("label is not Reshape(ArrayFeatureExtractor(classes, ArgMax))")
    afe = _expect(prod, n.input[0], "ArrayFeatureExtractor")
    classes = _const(model, afe.input[0]).reshape(-1)
    _check_label_casts(casts, classes)
    am = _expect(prod, afe.input[1], "ArgMax")
    if _attrs(am).get("axis", 0) != 1 or _attrs(am).get("select_last_index", 0) != 0:
        raise _NoMatch("final ArgMax must be over axis 1, first index")
    div = _expect(prod, am.input[0], "Div")
    exp = _expect(prod, div.input[0], "Exp")
    _check_row_normaliser(model, prod, _expect(prod, div.input[1], "Add"), exp.output[0])
    mul = _expect(prod, exp.input[0], "Mul")
    c2 = _scalar(model, mul.input[1])
    div2 = _expect(prod, mul.input[0], "Div")
    c1 = _scalar(model, div2.input[1])
    if not (c1 > 0 and c2 > 0):
        raise _NoMatch("vote scaling constants must be positive")
    sm = prod.get(div2.input[0])
    terms = list(sm.input) if sm is not None and sm.op_type == "Sum" else [div2.input[0]]
    k = len(classes)
    trees: list[Tree] = []
    weights: list[float] = []
    sym_values = set()
    ones: set[str] = set()
    probs: set[str] = set()
    for term in terms:
        m = _expect(prod, term, "Mul")
        w = _scalar(model, m.input[1])
        wh = _expect(prod, m.input[0], "Where")
        ones.add(wh.input[1])
        sym_values.add(_scalar(model, wh.input[2]))
        eq = _expect(prod, wh.input[0], "Equal")
        ind = np.asarray(_const(model, eq.input[1]))
        if ind.shape not in ((k,), (1, k)) or list(ind.reshape(-1)) != list(range(k)):
            raise _NoMatch("class index constant must be 0..K-1")
        vam = _expect(prod, eq.input[0], "ArgMax")
        va = _attrs(vam)
        if va.get("axis", 0) != 1 or va.get("select_last_index", 0) or not va.get("keepdims", 1):
            raise _NoMatch("estimator ArgMax must be over axis 1, first index, keepdims")
        tnode = _expect(prod, vam.input[0], "TreeEnsembleClassifier")
        if tnode.domain != ML_DOMAIN or vam.input[0] != tnode.output[1]:
            raise _NoMatch("estimator vote must read an ai.onnx.ml probability output")
        if _attrs(tnode).get("post_transform", b"NONE") not in (b"NONE", "NONE"):
            raise _NoMatch("estimator post_transform must be NONE")
        if tnode.input[0] != _interface_input(model).name:
            raise _NoMatch("estimator does not read the model input directly")
        probs.add(tnode.output[1])
        tec = parse_tree_ensemble_classifier(tnode)
        if len(tec.classes) != k or len(tec.trees) != 1:
            raise _NoMatch("each estimator must be one tree over the same classes")
        tree = tec.trees[0]
        votes = _leaf_votes_ort(tec, tree)
        value = np.zeros((len(tree.feature), k))
        value[np.arange(len(tree.feature)), votes] = 1.0
        value[tree.left != LEAF] = 0.0
        trees.append(Tree(tree.feature, tree.threshold, tree.left, tree.right, value))
        weights.append(w)
    for name in ones:
        _check_ones(model, prod, name, probs)
    if len(sym_values) != 1:
        raise _NoMatch("estimators disagree on the symmetric weight")
    sym = sym_values.pop()
    if not sym < 1.0:
        raise _NoMatch("symmetric weight must be < 1 for votes to count")
    wts = np.asarray(weights)
    if np.any(wts < 0):
        raise _NoMatch("negative estimator weights are not supported")
    # runtime guard: float32 products, sum of n terms, two scalings, Exp, and the
    # final division by a common normaliser (which may create ties): see docs.
    amp = max(1.0, abs(sym))
    n = len(trees)
    a_abs = c2 * float(wts.sum()) * amp / c1  # bound on |Exp argument|
    if not a_abs <= MAX_EXP_ARG:
        raise UnsupportedModel(
            f"the Exp argument may reach {a_abs:.3g}; float32 exp is only modelled "
            f"within +-{MAX_EXP_ARG:g}"
        )
    try:
        g_err = summation_error_bound(n + 2, float(wts.sum()) * amp)  # per class score
    except ValueError as e:
        raise UnsupportedModel(str(e)) from None
    a_err = 2 * g_err * c2 / c1 + 8 * U32 * a_abs + 64 * U32  # exp argument difference
    guard = 2.0 * a_err * c1 / c2 / (1.0 - sym)  # back to IR score units
    return Ensemble(
        trees=tuple(trees),
        weights=wts,
        base=np.zeros(k),
        classes=classes.astype(np.int64) if classes.dtype.kind in "iu" else classes.astype(object),
        n_features=_n_features(model, trees),
        kind="voting",
        margin_scale=float(wts.sum()) if wts.sum() > 0 else 1.0,
        pattern="skl2onnx-adaboost-samme",
        runtime_guard=guard,
        origin=("original",) * len(trees),
    )


PACE_CERT_OPSETS = {"": 17, ML_DOMAIN: 3}  # what onnx_writer.ensemble_to_onnx writes
PACE_CERT_IR_VERSION = 8
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
_PACE_CERT_ATTRS = {
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


def _check_pace_cert_graph(model: onnx.ModelProto, reg, am, gather) -> None:
    """The graph is exactly what :func:`pace_cert.onnx_writer.ensemble_to_onnx` writes.

    Nodes: the TreeEnsembleRegressor reading the input, ArgMax, Gather from the class
    list, plus optionally one Identity copying the scores to the second output; outputs:
    the label (and that copy); one initializer, the class list; the writer's opsets and
    IR version; only the attributes the writer sets. The certificate covers this graph;
    anything more (an output leaking the input, a node onnxruntime cannot load, ...) is
    not a model pace-cert wrote.
    """
    g = model.graph
    ops = sorted(n.op_type for n in g.node)
    idents = [n for n in g.node if n.op_type == "Identity"]
    if ops != sorted(["TreeEnsembleRegressor", "ArgMax", "Gather", *["Identity"] * len(idents)]):
        raise _NoMatch(f"nodes other than pace-cert's: {ops}")
    if len(idents) > 1 or len(g.output) != 1 + len(idents):
        raise _NoMatch("outputs other than the label and one copy of the scores")
    for n in g.node:
        if n.domain != (ML_DOMAIN if n.op_type == "TreeEnsembleRegressor" else ""):
            raise _NoMatch(f"{n.op_type} in domain {n.domain!r}")
        extra = {a.name for a in n.attribute} - _PACE_CERT_ATTRS[n.op_type]
        if extra:
            raise _NoMatch(f"{n.op_type} with attributes {sorted(extra)}")
    scores = reg.output[0]
    wiring = [
        (reg, [_interface_input(model).name], [scores]),
        (am, [scores], [am.output[0]]),
        (gather, [gather.input[0], am.output[0]], [g.output[0].name]),
        *((n, [scores], [g.output[1].name]) for n in idents),
    ]
    if any(list(n.input) != ins or list(n.output) != outs for n, ins, outs in wiring):
        raise _NoMatch("nodes are not wired as pace-cert writes them")
    if idents and g.output[1].type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
        raise _NoMatch("the scores output must be float")
    if [i.name for i in g.initializer] != [gather.input[0]] or g.sparse_initializer:
        raise _NoMatch("the class list must be the only initializer")
    if len(g.input) != 1 or model.functions:
        raise _NoMatch("inputs or functions other than pace-cert's")
    if not _interface_input(model).type.tensor_type.shape.dim[1].HasField("dim_value"):
        raise _NoMatch("the input width must be fixed, as pace-cert writes it")
    opsets = [(o.domain, o.version) for o in model.opset_import]
    if sorted(opsets) != sorted(PACE_CERT_OPSETS.items()):
        raise _NoMatch(f"opsets {opsets}, pace-cert writes {PACE_CERT_OPSETS}")
    if model.ir_version != PACE_CERT_IR_VERSION:
        raise _NoMatch(f"IR version {model.ir_version}, pace-cert writes {PACE_CERT_IR_VERSION}")


def recognise_pace_cert_argmax(model: onnx.ModelProto) -> Ensemble:
    """pace-cert's own output: TreeEnsembleRegressor -> ArgMax -> Gather(class labels),
    exactly as the writer lays it out (:func:`_check_pace_cert_graph`)."""
    prod = _producers(model)
    gather = prod.get(model.graph.output[0].name)
    if gather is None or gather.op_type != "Gather" or _attrs(gather).get("axis", 0) != 0:
        raise _NoMatch("label is not Gather(classes, ArgMax(scores))")
    classes = _const(model, gather.input[0]).reshape(-1)
    am = _expect(prod, gather.input[1], "ArgMax")
    at = _attrs(am)
    if at.get("axis", 0) != 1 or at.get("select_last_index", 0) != 0 or at.get("keepdims", 1):
        raise _NoMatch("ArgMax must be over axis 1, first index, keepdims=0")
    reg = _expect(prod, am.input[0], "TreeEnsembleRegressor")
    _check_pace_cert_graph(model, reg, am, gather)
    if _attrs(reg).get("post_transform", b"NONE") not in (b"NONE", "NONE"):
        raise _NoMatch("regressor post_transform must be NONE")
    label_type = model.graph.output[0].type.tensor_type.elem_type
    if classes.dtype == np.int64 and label_type == onnx.TensorProto.INT64:
        pass
    elif classes.dtype == object and label_type == onnx.TensorProto.STRING:
        classes = np.array(
            [c.decode() if isinstance(c, bytes) else str(c) for c in classes], object
        )
    else:
        raise _NoMatch("the class list must be int64 or strings, as the label output")
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
        n_features=_n_features(model, tec.trees),
        kind="margin",
        margin_scale=1.0,
        pattern="pace-cert-argmax",
        runtime_guard=_sum_guard(tec.trees, base),
        origin=origin,
    )


RECOGNISERS: tuple[Callable[[onnx.ModelProto], Ensemble], ...] = (
    recognise_tree_ensemble_classifier,
    recognise_adaboost_samme,
    recognise_pace_cert_argmax,
)

__all__ = [
    "OnnxModelInfo",
    "UnsupportedModel",
    "ensemble_from_model",
    "load_onnx",
    "next_float32",
    "read_ensemble",
]
