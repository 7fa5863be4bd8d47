"""Recogniser: skl2onnx RandomForest / ExtraTrees / DecisionTree / GradientBoosting /
HistGradientBoosting classifiers (one TreeEnsembleClassifier; zipmap on or off).

skl2onnx writes all five as one TreeEnsembleClassifier reading the input, its label
output copied to the graph's (through Identity or int64 Casts when zipmap is on). The
rules are :func:`~pace_cert.model.tree_ensemble_op.decision_rule`'s:

* forests and decision trees: leaf weights are class probabilities (divided by the
  number of trees), post_transform NONE; multi-class: argmax; binary: one score column
  (label 1 iff score > 0.5) or both classes named (label 1 iff the class-1 score > 0);
* GradientBoosting: base values, post_transform LOGISTIC (binary: one score column,
  class 0's, and one base value: label 1 iff score + base > 0, or > 0.5 when every
  leaf weight is >= 0) or SOFTMAX (K > 2: one tree per class and round, argmax of the
  raw scores plus base values);
* HistGradientBoosting: the same layouts as GradientBoosting, with
  ``nodes_missing_value_tracks_true`` set where scikit-learn sends missing values left
  (read past: NaN is outside every proof). Categorical splits are exported by skl2onnx
  as ordinary BRANCH_LEQ splits on the category code, which is what onnxruntime (and so
  the IR) computes, whatever scikit-learn does with them.

The post transform never matters: onnxruntime takes the label before it.

The family is named from skl2onnx's graph name ``ONNX(<estimator class>)`` when it is a
known classifier, else (``ONNX(Pipeline)``) from the attributes, in the same class
names: GradientBoosting or HistGradientBoosting when there are base values or a
LOGISTIC/SOFTMAX transform, RandomForest, ExtraTrees or DecisionTree otherwise. The name
does not change the rule.
"""

from __future__ import annotations

import dataclasses
import re

import onnx

from pace_cert.model.ensemble import (
    Ensemble,
)
from pace_cert.model.readers.single_tec import tec_ensemble, the_classifier
from pace_cert.model.tree_ensemble_op import ParsedTrees

SKLEARN_CLASSIFIERS = (
    "RandomForestClassifier",
    "ExtraTreesClassifier",
    "DecisionTreeClassifier",
    "ExtraTreeClassifier",
    "GradientBoostingClassifier",
    "HistGradientBoostingClassifier",
)


#: the scikit-learn classes one TreeEnsembleClassifier can come from, by its rule: the
#: names a family is given when the graph does not name its estimator (a Pipeline)
FOREST_CLASSES = "RandomForestClassifier, ExtraTreesClassifier or DecisionTreeClassifier"
BOOSTING_CLASSES = "GradientBoostingClassifier or HistGradientBoostingClassifier"


def sklearn_family(model: onnx.ModelProto, tec: ParsedTrees) -> str:
    """The family in scikit-learn's class names: the estimator's own when skl2onnx named
    the graph after it, else (a Pipeline) the classes its rule admits, so a forest is a
    RandomForestClassifier or "RandomForestClassifier, ExtraTreesClassifier or ..."
    everywhere, never another word for the same thing."""
    m = re.fullmatch(r"ONNX\((\w+)\)", model.graph.name)
    if m and m.group(1) in SKLEARN_CLASSIFIERS:
        return f"scikit-learn {m.group(1)} (skl2onnx)"
    boosting = len(tec.base) > 0 or tec.post_transform in ("LOGISTIC", "SOFTMAX")
    what = BOOSTING_CLASSES if boosting else FOREST_CLASSES
    if model.graph.name == "ONNX(Pipeline)":
        return f"scikit-learn Pipeline ending in a {what} (skl2onnx)"
    return f"scikit-learn {what} (skl2onnx)"


def recognise_tree_ensemble_classifier(model: onnx.ModelProto) -> Ensemble:
    """skl2onnx RandomForest / ExtraTrees / DecisionTree / GradientBoosting /
    HistGradientBoosting classifiers."""
    node = the_classifier(model, {"Identity", "ZipMap", "Cast"})
    ens, tec = tec_ensemble(model, node, "skl2onnx-tree-ensemble-classifier", "")
    return dataclasses.replace(ens, family=sklearn_family(model, tec))
