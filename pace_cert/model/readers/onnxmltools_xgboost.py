"""Recogniser: XGBoost classifiers converted by onnxmltools (``convert_xgboost``).

onnxmltools writes one TreeEnsembleClassifier reading the input whose outputs are the
graph's (``binary:hinge`` adds Greater/Where on the probability output only). The label
is the classifier's label output, so
:func:`~pace_cert.model.tree_ensemble_op.decision_rule`'s rules apply, on XGBoost's
layouts:

* split mode BRANCH_LT (``x < t``; on float32 inputs ``x <= prev_float32(t)``);
* binary (``binary:logistic``, ``binary:logitraw``, ``binary:hinge``): one score column
  (class 0's ids) and one base value, ``base_score`` as a margin
  (-log(1/base_score - 1)) or absent when base_score is 0.5, post_transform LOGISTIC
  (hinge: NONE): label 1 iff score + base > 0, or > 0.5 when every leaf value is >= 0
  (onnxruntime's rule for probability-like weights, reproduced all the same);
* multi-class (``multi:softprob``, ``multi:softmax``): one tree per class and round
  (tree t scores class t mod K), K base values, post_transform SOFTMAX (softmax: NONE):
  argmax of the raw scores plus base values, ties to the lowest index;
* the post transform never matters: onnxruntime takes the label before it.

Categorical splits become chains of BRANCH_EQ nodes, which are rejected (the split mode
is named). ``nodes_missing_value_tracks_true`` (XGBoost's default direction) is read
past: NaN is outside every proof.
"""

from __future__ import annotations

import onnx

from pace_cert.model.ensemble import Ensemble
from pace_cert.model.onnx_graph import NoMatch
from pace_cert.model.readers.onnxmltools_lightgbm import LIGHTGBM_NODE_NAMES, is_onnxmltools
from pace_cert.model.readers.single_tec import tec_ensemble, the_classifier

FAMILY = "XGBoost XGBClassifier (onnxmltools)"
XGBOOST_TAIL_OPS = {"Identity", "Cast", "Greater", "Where"}


def recognise_xgboost(model: onnx.ModelProto) -> Ensemble:
    """onnxmltools' XGBoost classifier (one TreeEnsembleClassifier)."""
    tecs = [n for n in model.graph.node if n.op_type == "TreeEnsembleClassifier"]
    if not is_onnxmltools(model) or len(tecs) != 1 or tecs[0].name.startswith(LIGHTGBM_NODE_NAMES):
        raise NoMatch("not onnxmltools' XGBoost classifier")
    node = the_classifier(model, XGBOOST_TAIL_OPS)
    ens, _ = tec_ensemble(model, node, "onnxmltools-xgboost", FAMILY)
    return ens
