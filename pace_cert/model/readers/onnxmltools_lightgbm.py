"""Recogniser: LightGBM classifiers converted by onnxmltools (``convert_lightgbm``).

onnxmltools writes one TreeEnsembleClassifier (named ``LgbmClassifier``) reading the
input, then copies its outputs: label -> Identity -> Cast to int64 (int64 labels) or
Identity (string labels) -> the label output; probabilities -> Identity -> Mul by the
constant 1 (``zipmap=False``) or ZipMap -> the probability output. The label is the
classifier's label output, so :func:`~pace_cert.model.tree_ensemble_op.decision_rule`'s
rules apply as for skl2onnx, on LightGBM's layouts:

* binary (objective ``binary``): one score column (class 0's ids carry every tree's
  leaf values), no base values, post_transform LOGISTIC: label 1 iff the raw score > 0,
  or > 0.5 when every leaf value is >= 0 (onnxruntime's rule for probability-like
  weights; rare for a booster, reproduced all the same);
* multi-class (``multiclass``, ``multiclassova``): one tree per class and round (tree t
  scores class t mod K), no base values, post_transform SOFTMAX: argmax of the raw
  scores, ties to the lowest index; LightGBM's init scores are inside the first
  round's leaf values;
* the post transform never matters: onnxruntime takes the label before it.

Split modes: LightGBM's numerical splits are BRANCH_LEQ (read as is). Its categorical
splits become chains of BRANCH_EQ nodes, which are rejected (the split mode is named).
``nodes_missing_value_tracks_true`` (default-left splits) is read past: NaN is outside
every proof, and LightGBM's zero-as-missing handling (``missing_type`` Zero) is not in
the ONNX graph, so onnxruntime (and the IR) compare 0 like any other value.
``boosting_type='rf'`` exports take the label from an ArgMax over transformed
probabilities, which is not modelled: rejected.
"""

from __future__ import annotations

import onnx

from pace_cert.model.ensemble import Ensemble
from pace_cert.model.onnx_graph import NoMatch, UnsupportedModel
from pace_cert.model.readers.single_tec import tec_ensemble, the_classifier

FAMILY = "LightGBM LGBMClassifier (onnxmltools)"
LIGHTGBM_TAIL_OPS = {"Identity", "Cast", "Mul", "ZipMap"}
RF_OPS = {"ArrayFeatureExtractor", "Div", "Sub", "Concat", "ArgMax", "Reshape"}
#: how onnxmltools names the classifier node: alone (LgbmClassifier) or through skl2onnx's
#: converter registry in a Pipeline (LightGbmLGBMClassifier)
LIGHTGBM_NODE_NAMES = ("Lgbm", "LightGbm")


def is_onnxmltools(model: onnx.ModelProto) -> bool:
    return model.producer_name == "OnnxMLTools"


def recognise_lightgbm(model: onnx.ModelProto) -> Ensemble:
    """onnxmltools' LightGBM classifier (one TreeEnsembleClassifier named as onnxmltools
    names it, alone or inside a skl2onnx Pipeline export)."""
    tecs = [n for n in model.graph.node if n.op_type == "TreeEnsembleClassifier"]
    if len(tecs) != 1 or not tecs[0].name.startswith(LIGHTGBM_NODE_NAMES):
        raise NoMatch("not onnxmltools' LightGBM classifier (a TreeEnsembleClassifier named Lgbm*)")
    ops = {n.op_type for n in model.graph.node}
    if ops & RF_OPS:
        raise UnsupportedModel(
            "LightGBM boosting_type='rf' export: its label is an ArgMax over the "
            "classifier's post-transformed probabilities, which is not modelled"
        )
    node = the_classifier(model, LIGHTGBM_TAIL_OPS)
    ens, _ = tec_ensemble(model, node, "onnxmltools-lightgbm", FAMILY)
    return ens
