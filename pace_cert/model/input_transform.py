"""Per-feature monotone transforms between the model input and the trees, folded into
the split thresholds (scikit-learn Pipelines exported by skl2onnx).

A Pipeline such as ``make_pipeline(SimpleImputer(), StandardScaler(), RandomForest...)``
exports as ``input -> Imputer -> Scaler -> TreeEnsembleClassifier``. Every split of the
trees then tests ``g_f(x_f) <= theta`` where ``g_f`` is the float32 transform of feature
f as onnxruntime computes it. Accepted transforms, each per feature and monotone on
non-NaN float32 inputs, never producing NaN from them:

* ``Scaler`` (ai.onnx.ml): ``float32((x - offset) * scale)`` with finite offset and
  finite, non-zero scale (one value or one per feature); increasing when scale > 0,
  decreasing when < 0 (StandardScaler, RobustScaler and MaxAbsScaler export as Scaler);
* ``Imputer`` (ai.onnx.ml) replacing NaN (``replaced_value_float`` NaN) with float
  values: the identity on every non-NaN input, and NaN is outside every proof; an
  Imputer replacing a number (``missing_values=0``, ...) is not monotone: rejected;
* ``Identity`` and ``Cast`` to float (the identity on a float tensor).

A composition of correctly rounded monotone operations is monotone, so for each split
the set {x : g_f(x) <= theta} of non-NaN float32 x is a down-set or an up-set of the
float32 line: ``x <= t`` or its negation, or every x or none. :func:`fold_input` finds t
by bisection over the ordered float32 values, evaluating g_f with onnxruntime itself (a
session of the transforms alone), then confirms with onnxruntime on both sides of every
boundary (t, the next float32 above it and a few neighbours) and at spread-out probe
points. The folded split reads the raw input: ``x_f <= t`` (children swapped when g_f
decreases), or the node is replaced by the child every input reaches. The IR records
every fold (:class:`~pace_cert.model.ensemble.InputFolding`), and the compressed model,
written from the folded IR, reads the raw input directly.

Anything else in front of the trees is rejected (exit 3) with a line naming the op and
what to export instead: the final estimator alone, fed the transformed features.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from pace_cert.model.ensemble import (
    LEAF,
    Ensemble,
    FoldedSplit,
    InputFolding,
    Tree,
)
from pace_cert.model.onnx_graph import ML_DOMAIN, UnsupportedModel, attrs, interface_input

TREE_OPS = {"TreeEnsembleClassifier", "TreeEnsembleRegressor", "TreeEnsemble"}
ARITHMETIC = {"Mul", "Add", "Sub", "Div"}
EXPORT_HINT = (
    "pace-cert folds only per-feature monotone transforms (Scaler, Imputer of NaN) into "
    "the splits: export the final estimator alone (e.g. pipeline[-1]) and feed it the "
    "transformed features"
)


@dataclass(frozen=True)
class InputPrefix:
    """The transform nodes from the model input to the tensor the trees read."""

    nodes: tuple[onnx.NodeProto, ...]
    output: str
    width: int
    ops: tuple[str, ...]  # one description per node


def _reject(node: onnx.NodeProto, why: str) -> UnsupportedModel:
    hint = EXPORT_HINT
    if node.op_type in ARITHMETIC:
        hint = (
            "skl2onnx writes MinMaxScaler as Mul and Add, which pace-cert does not fold: "
            "use StandardScaler, RobustScaler or MaxAbsScaler (exported as Scaler), or "
            "export the final estimator alone (e.g. pipeline[-1]) and feed it the "
            "transformed features"
        )
    return UnsupportedModel(f"{node.op_type} between the input and the trees ({why}); {hint}")


def _describe(node: onnx.NodeProto, width: int) -> str:
    """What the node computes, or UnsupportedModel when it is not a transform we fold."""
    a = attrs(node)
    op, dom = node.op_type, node.domain
    if op == "Identity" and dom in ("", "ai.onnx"):
        return "Identity"
    if op == "Cast" and dom in ("", "ai.onnx"):
        if a.get("to") != onnx.TensorProto.FLOAT:
            to = onnx.TensorProto.DataType.Name(int(a.get("to", 0)))
            raise _reject(node, f"a Cast to {to} changes the values the trees compare")
        return "Cast(float)"
    if op == "Scaler" and dom == ML_DOMAIN:
        offset = np.asarray(a.get("offset", []), np.float32)
        scale = np.asarray(a.get("scale", []), np.float32)
        if set(a) - {"offset", "scale"}:
            raise _reject(node, f"attributes {sorted(set(a) - {'offset', 'scale'})}")
        if len(scale) == 0 or len(offset) != len(scale) or len(scale) not in (1, width):
            raise _reject(node, "offset and scale must both have 1 or one value per feature")
        if not (np.isfinite(offset).all() and np.isfinite(scale).all()):
            raise _reject(node, "non-finite offset or scale")
        if np.any(scale == 0):
            raise _reject(node, "a zero scale maps every input to one value (and inf to NaN)")
        return "Scaler((x - offset) * scale)"
    if op == "Imputer" and dom == ML_DOMAIN:
        replaced = a.get("replaced_value_float", 0.0)
        if "imputed_value_int64s" in a or "replaced_value_int64" in a:
            raise _reject(node, "an int64 Imputer")
        if not np.isnan(replaced):
            raise _reject(
                node,
                f"replaced_value_float {replaced!r}: replacing a number is not monotone",
            )
        values = a.get("imputed_value_floats", [])
        if len(values) not in (1, width):
            raise _reject(node, "imputed_value_floats must have 1 or one value per feature")
        return "Imputer(NaN -> imputed value; the identity on non-NaN inputs)"
    raise _reject(node, "not a per-feature monotone transform pace-cert folds")


def find_prefix(model: onnx.ModelProto) -> InputPrefix | None:
    """The chain of transforms between the input and the trees, or None when the input
    is read by tree-ensemble nodes only or by several nodes (a graph the recognisers
    judge as it is). A chain reaching anything but tree-ensemble nodes is rejected."""
    g = model.graph
    inp = interface_input(model)
    consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for n in g.node:
        for i in n.input:
            consumers[i].append(n)
    outputs = {o.name for o in g.output}
    cons = consumers[inp.name]
    if len(cons) != 1 or cons[0].op_type in TREE_OPS:
        return None
    dim = inp.type.tensor_type.shape.dim[1]
    if not dim.HasField("dim_value"):
        raise UnsupportedModel(
            f"{cons[0].op_type} between the input and the trees needs a fixed input width"
        )
    width = int(dim.dim_value)
    nodes, ops, cur = [], [], inp.name
    while True:
        cons = consumers[cur]
        if cur in outputs:
            raise UnsupportedModel(f"the transformed input {cur!r} is also a graph output")
        if cons and all(n.op_type in TREE_OPS for n in cons) and cur != inp.name:
            return InputPrefix(tuple(nodes), cur, width, tuple(ops))
        if len(cons) != 1:
            raise UnsupportedModel(
                f"the transformed input {cur!r} is read by {len(cons)} nodes, not only by "
                f"the trees; {EXPORT_HINT}"
            )
        n = cons[0]
        if len(n.input) != 1 or len(n.output) != 1:
            raise _reject(n, "a transform reads one tensor and writes one")
        ops.append(_describe(n, width))
        nodes.append(n)
        cur = n.output[0]


def strip_prefix(model: onnx.ModelProto, prefix: InputPrefix) -> onnx.ModelProto:
    """A copy of ``model`` without the transforms: the trees read the input itself (the
    recognisers then judge the rest of the graph as it is)."""
    m = copy.deepcopy(model)
    inp = interface_input(model).name
    drop = {o for n in prefix.nodes for o in n.output}
    keep = [n for n in m.graph.node if not (set(n.output) & drop)]
    del m.graph.node[:]
    m.graph.node.extend(keep)
    for n in m.graph.node:
        for i, name in enumerate(n.input):
            if name == prefix.output:
                n.input[i] = inp
    return m


def prefix_model(model: onnx.ModelProto, prefix: InputPrefix) -> onnx.ModelProto:
    """The transforms alone: input -> ... -> the tensor the trees read."""
    shape = [None, prefix.width]
    g = helper.make_graph(
        [copy.deepcopy(n) for n in prefix.nodes],
        "pace_cert_input_transform",
        [helper.make_tensor_value_info(interface_input(model).name, onnx.TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(prefix.output, onnx.TensorProto.FLOAT, shape)],
    )
    m = helper.make_model(g, opset_imports=list(model.opset_import))
    m.ir_version = model.ir_version
    return m


# --- the ordered float32 line ------------------------------------------------------------

KEY_NEG_INF = -0x7F800000
KEY_POS_INF = 0x7F800000


def float_key(x: np.ndarray) -> np.ndarray:
    """An int64 key per non-NaN float32, in the order of the values (-0.0 and +0.0 share 0)."""
    i = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
    return np.where(i >= 0, i, -(i & 0x7FFFFFFF))


def key_float(k: np.ndarray) -> np.ndarray:
    """The float32 of each key (key 0: +0.0)."""
    k = np.asarray(k, np.int64)
    bits = np.where(k >= 0, k, 0x80000000 | (-k)).astype(np.uint32)
    return bits.view(np.float32)


class _Probe:
    """Evaluates P_i(x) = [g_{f_i}(x) <= theta_i] for many (feature, theta) items at once,
    with onnxruntime running the transforms."""

    def __init__(self, sess, feats: np.ndarray, thetas: np.ndarray, width: int):
        self.sess, self.feats, self.thetas, self.width = sess, feats, thetas, width
        self.row = np.zeros(len(feats), np.int64)  # item i sits at (row[i], feats[i])
        seen: dict[int, int] = defaultdict(int)
        for i, f in enumerate(feats):
            self.row[i] = seen[int(f)]
            seen[int(f)] += 1
        self.rows = max(seen.values(), default=0)
        self.name = sess.get_inputs()[0].name

    def __call__(self, keys: np.ndarray) -> np.ndarray:
        """P_i at the float32 of ``keys[i]`` (one key per item), or [items, m] for
        ``keys`` of shape [items, m]."""
        keys = np.asarray(keys, np.int64)
        cols = keys.reshape(len(self.feats), -1)
        m = cols.shape[1]
        X = np.zeros((self.rows * m, self.width), np.float32)
        r = (self.row[:, None] * m + np.arange(m)[None, :]).ravel()
        X[r, np.repeat(self.feats, m)] = key_float(cols.ravel())
        Y = self.sess.run(None, {self.name: X})[0]
        out = Y[r, np.repeat(self.feats, m)] <= np.repeat(self.thetas, m)
        return out.reshape(keys.shape)


def fold_input(ens: Ensemble, model: onnx.ModelProto, prefix: InputPrefix) -> Ensemble:
    """``ens`` (read from the model without its transforms) with every split folded onto
    the raw input (see the module docstring)."""
    from pace_cert.model.runtime import session

    sess = session(prefix_model(model, prefix).SerializeToString())
    items = sorted(
        {
            (int(t.feature[j]), float(t.threshold[j]))
            for t in ens.trees
            for j in np.flatnonzero(t.left != LEAF)
        }
    )
    if not items:
        folding = InputFolding(prefix.ops, ())
        return dataclasses.replace(ens, input_folding=folding)
    feats = np.array([f for f, _ in items], np.int64)
    thetas = np.array([th for _, th in items], np.float32)
    probe = _Probe(sess, feats, thetas, prefix.width)
    m = len(items)
    lo = np.full(m, KEY_NEG_INF, np.int64)
    hi = np.full(m, KEY_POS_INF, np.int64)
    at_lo, at_hi = probe(lo), probe(hi)
    split = at_lo != at_hi  # else constant: every input goes one way
    while np.any(split & (hi - lo > 1)):
        mid = (lo + hi) // 2
        p = probe(mid)
        move_lo = split & (p == at_lo)
        move_hi = split & (p != at_lo)
        lo = np.where(move_lo, mid, lo)
        hi = np.where(move_hi, mid, hi)
    _confirm(probe, lo, at_lo, at_hi, split, items)
    raw = key_float(lo)
    table: dict[tuple[int, float], FoldedSplit] = {}
    for i, (f, th) in enumerate(items):
        if not split[i]:
            how = "always-left" if at_lo[i] else "always-right"
            table[(f, th)] = FoldedSplit(f, th, None, how)
            continue
        if lo[i] == KEY_NEG_INF:
            raise UnsupportedModel(
                f"feature {f}: the split at {th!r} after the input transform holds only for "
                "x = -inf on the raw input; not modelled"
            )
        how = "same" if at_lo[i] else "swapped"
        table[(f, th)] = FoldedSplit(f, th, float(raw[i]), how)
    trees = tuple(_fold_tree(t, table) for t in ens.trees)
    folding = InputFolding(prefix.ops, tuple(table[k] for k in items))
    return dataclasses.replace(ens, trees=trees, input_folding=folding)


PROBE_SPREAD = 64


def _confirm(probe, lo, at_lo, at_hi, split, items) -> None:
    """onnxruntime on both sides of every boundary (t and three float32 values below it,
    the next three above it) and at spread-out points of the whole float32 line: P must
    be ``at_lo`` up to t and ``at_hi`` beyond it (a constant split: ``at_lo`` everywhere)."""
    near = np.clip(lo[:, None] + np.arange(-3, 4)[None, :], KEY_NEG_INF, KEY_POS_INF)
    spread = np.linspace(KEY_NEG_INF, KEY_POS_INF, PROBE_SPREAD).astype(np.int64)
    keys = np.concatenate([near, np.broadcast_to(spread, (len(lo), PROBE_SPREAD))], axis=1)
    got = probe(keys)
    want = np.where(keys <= lo[:, None], at_lo[:, None], at_hi[:, None])
    want = np.where(split[:, None], want, at_lo[:, None])
    bad = np.flatnonzero(~np.all(got == want, axis=1))
    if len(bad):
        f, th = items[int(bad[0])]
        raise UnsupportedModel(
            f"feature {f}: onnxruntime's input transform is not monotone around the split at "
            f"{th!r}; not modelled"
        )


def _fold_tree(tree: Tree, table: dict[tuple[int, float], FoldedSplit]) -> Tree:
    """``tree`` with its splits folded: constant splits replaced by the child every input
    reaches, decreasing ones with their children swapped."""
    feature, threshold, left, right, rows = [], [], [], [], []

    def through(i: int) -> int:
        while tree.left[i] != LEAF:
            fs = table[(int(tree.feature[i]), float(tree.threshold[i]))]
            if fs.how == "always-left":
                i = int(tree.left[i])
            elif fs.how == "always-right":
                i = int(tree.right[i])
            else:
                break
        return i

    def alloc(old: int) -> int:
        feature.append(LEAF)
        threshold.append(np.float32(0))
        left.append(LEAF)
        right.append(LEAF)
        rows.append(tree.value[old])
        return len(feature) - 1

    start = through(0)
    stack = [(start, alloc(start))]
    while stack:
        old, new = stack.pop()
        if tree.left[old] == LEAF:
            continue
        fs = table[(int(tree.feature[old]), float(tree.threshold[old]))]
        a, b = through(int(tree.left[old])), through(int(tree.right[old]))
        if fs.how == "swapped":
            a, b = b, a
        na, nb = alloc(a), alloc(b)
        feature[new], threshold[new], left[new], right[new] = fs.feature, np.float32(fs.raw), na, nb
        stack += [(a, na), (b, nb)]
    return Tree(
        np.asarray(feature, np.int64),
        np.asarray(threshold, np.float32),
        np.asarray(left, np.int64),
        np.asarray(right, np.int64),
        np.asarray(rows, np.float64).reshape(len(rows), tree.value.shape[1]),
    )
