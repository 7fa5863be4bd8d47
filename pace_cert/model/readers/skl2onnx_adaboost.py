"""Recogniser: skl2onnx AdaBoostClassifier (SAMME).

A graph of one TreeEnsembleClassifier per estimator, per-estimator ArgMax votes mapped
by Where/Mul to +w / sym*w, summed and pushed through positive scalings and Exp; the
label is the argmax of the summed votes. The vote graph is checked in full."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from pace_cert.model.ensemble import (
    LEAF,
    Ensemble,
    Tree,
    summation_error_bound,
)
from pace_cert.model.onnx_graph import (
    ML_DOMAIN,
    U32,
    NoMatch,
    UnsupportedModel,
    attrs,
    check_label_casts,
    const,
    expect,
    interface_input,
    label_source,
    n_features,
    producers,
    scalar,
)
from pace_cert.model.tree_ensemble_op import (
    ParsedTrees,
    parse_tree_ensemble_classifier,
)


def leaf_votes_ort(tec: ParsedTrees, tree: Tree) -> np.ndarray:
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
            raise NoMatch("AdaBoost estimator with a two-column binary layout")
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


def check_ones(model: onnx.ModelProto, prod, name: str, probs: set[str]) -> None:
    """``name`` (Where's value for the predicted class) is 1 everywhere and keeps the
    [N, K] vote shape: skl2onnx's ConstantOfShape(Shape(an estimator's probabilities))
    of value 1, or a constant 1 (see :func:`scalar`)."""
    n = prod.get(name)
    if n is None or n.op_type != "ConstantOfShape":
        if scalar(model, name) != 1.0:
            raise NoMatch("Where must select 1 or a symmetric weight")
        return
    sh = expect(prod, n.input[0], "Shape")
    value = [a.t for a in n.attribute if a.name == "value" and a.type == a.TENSOR]
    if sh.attribute or sh.input[0] not in probs or len(value) != 1:
        raise NoMatch("ConstantOfShape must take the shape of an estimator's probabilities")
    v = numpy_helper.to_array(value[0])
    if v.size != 1 or float(v.reshape(-1)[0]) != 1.0:
        raise NoMatch("Where must select 1 or a symmetric weight")


def check_row_normaliser(model: onnx.ModelProto, prod, add: onnx.NodeProto, exp_out: str):
    """The final Div's divisor is one positive number per row, so it cannot change the
    row's argmax: skl2onnx's ``n = Reshape(ReduceSum(exp), [-1, 1])`` plus
    ``Cast(Equal(Cast(n), zero))`` (1 where the sum truncates to 0), both [rows, 1]."""
    resh = expect(prod, add.input[0], "Reshape")
    rs = expect(prod, resh.input[0], "ReduceSum")
    if rs.input[0] != exp_out:
        raise NoMatch("normaliser is not the row sum of the exponentials")
    shape = np.asarray(const(model, resh.input[1]))
    if shape.shape != (2,) or list(shape) != [-1, 1]:
        raise NoMatch("normaliser must be reshaped to one column")
    fix = expect(prod, add.input[1], "Cast")
    if attrs(fix).get("to") != onnx.TensorProto.FLOAT:
        raise NoMatch("normaliser correction must be cast to float")
    eq = expect(prod, fix.input[0], "Equal")
    cast = expect(prod, eq.input[0], "Cast")
    if cast.input[0] != resh.output[0]:
        raise NoMatch("normaliser correction must test the normaliser")
    scalar(model, eq.input[1])  # one number: the correction stays [rows, 1]


def recognise_adaboost_samme(model: onnx.ModelProto) -> Ensemble:
    """skl2onnx AdaBoostClassifier (SAMME): many TreeEnsembleClassifier nodes + vote graph."""
    prod = producers(model)
    label_name, casts = label_source(model, prod)
    n = prod.get(label_name)
    if n is None or n.op_type != "Reshape":
        raise NoMatch("label is not Reshape(ArrayFeatureExtractor(classes, ArgMax))")
    afe = expect(prod, n.input[0], "ArrayFeatureExtractor")
    classes = const(model, afe.input[0]).reshape(-1)
    check_label_casts(casts, classes)
    am = expect(prod, afe.input[1], "ArgMax")
    if attrs(am).get("axis", 0) != 1 or attrs(am).get("select_last_index", 0) != 0:
        raise NoMatch("final ArgMax must be over axis 1, first index")
    div = expect(prod, am.input[0], "Div")
    exp = expect(prod, div.input[0], "Exp")
    check_row_normaliser(model, prod, expect(prod, div.input[1], "Add"), exp.output[0])
    mul = expect(prod, exp.input[0], "Mul")
    c2 = scalar(model, mul.input[1])
    div2 = expect(prod, mul.input[0], "Div")
    c1 = scalar(model, div2.input[1])
    if not (c1 > 0 and c2 > 0):
        raise NoMatch("vote scaling constants must be positive")
    sm = prod.get(div2.input[0])
    terms = list(sm.input) if sm is not None and sm.op_type == "Sum" else [div2.input[0]]
    k = len(classes)
    trees: list[Tree] = []
    weights: list[float] = []
    sym_values = set()
    ones: set[str] = set()
    probs: set[str] = set()
    for term in terms:
        m = expect(prod, term, "Mul")
        w = scalar(model, m.input[1])
        wh = expect(prod, m.input[0], "Where")
        ones.add(wh.input[1])
        sym_values.add(scalar(model, wh.input[2]))
        eq = expect(prod, wh.input[0], "Equal")
        ind = np.asarray(const(model, eq.input[1]))
        if ind.shape not in ((k,), (1, k)) or list(ind.reshape(-1)) != list(range(k)):
            raise NoMatch("class index constant must be 0..K-1")
        vam = expect(prod, eq.input[0], "ArgMax")
        va = attrs(vam)
        if va.get("axis", 0) != 1 or va.get("select_last_index", 0) or not va.get("keepdims", 1):
            raise NoMatch("estimator ArgMax must be over axis 1, first index, keepdims")
        tnode = expect(prod, vam.input[0], "TreeEnsembleClassifier")
        if tnode.domain != ML_DOMAIN or vam.input[0] != tnode.output[1]:
            raise NoMatch("estimator vote must read an ai.onnx.ml probability output")
        if attrs(tnode).get("post_transform", b"NONE") not in (b"NONE", "NONE"):
            raise NoMatch("estimator post_transform must be NONE")
        if tnode.input[0] != interface_input(model).name:
            raise NoMatch("estimator does not read the model input directly")
        probs.add(tnode.output[1])
        tec = parse_tree_ensemble_classifier(tnode)
        if len(tec.classes) != k or len(tec.trees) != 1:
            raise NoMatch("each estimator must be one tree over the same classes")
        tree = tec.trees[0]
        votes = leaf_votes_ort(tec, tree)
        value = np.zeros((len(tree.feature), k))
        value[np.arange(len(tree.feature)), votes] = 1.0
        value[tree.left != LEAF] = 0.0
        trees.append(Tree(tree.feature, tree.threshold, tree.left, tree.right, value))
        weights.append(w)
    for name in ones:
        check_ones(model, prod, name, probs)
    if len(sym_values) != 1:
        raise NoMatch("estimators disagree on the symmetric weight")
    sym = sym_values.pop()
    if not sym < 1.0:
        raise NoMatch("symmetric weight must be < 1 for votes to count")
    wts = np.asarray(weights)
    if np.any(wts < 0):
        raise NoMatch("negative estimator weights are not supported")
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
        n_features=n_features(model, trees),
        kind="voting",
        margin_scale=float(wts.sum()) if wts.sum() > 0 else 1.0,
        pattern="skl2onnx-adaboost-samme",
        runtime_guard=guard,
        origin=("original",) * len(trees),
    )
