"""Read ONNX tree-ensemble classifiers into the IR, exactly as onnxruntime runs them.

Table-driven: every attribute of a TreeEnsembleClassifier is read into numpy arrays
once, split into trees as onnxruntime splits them (only the canonical layout, where
onnxruntime's roots are node 0, is accepted) and each tree is built by one code path.
Each exporter pattern is one recogniser that returns an
:class:`~pace_cert.model.ensemble.Ensemble` or raises :class:`UnsupportedModel` saying why.
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
  through positive scalings and Exp; the label is the argmax of the summed votes;
* onnxmltools LightGBM and XGBoost, skl2onnx HistGradientBoosting: one
  TreeEnsembleClassifier with the rules above (readers/onnxmltools_*.py,
  readers/skl2onnx_trees.py say which layouts each exporter writes);
* TreeEnsemble (ai.onnx.ml opset 5) -> ArgMax [-> Gather]: argmax of the summed leaf
  weights, post_transform NONE (readers/onnx_tree_ensemble_v5.py).

Per-feature monotone transforms between the input and the trees (a skl2onnx Pipeline's
Scaler, an Imputer of NaN) are folded into the split thresholds first
(:mod:`pace_cert.model.input_transform`); anything else there is rejected with the op
named and what to export instead.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import onnx

from pace_cert.errors import InputError
from pace_cert.model.ensemble import (
    Ensemble,
)
from pace_cert.model.input_transform import TREE_OPS, find_prefix, fold_input, strip_prefix
from pace_cert.model.onnx_graph import (
    FEATURE_NAMES_KEY,
    NoMatch,
    OnnxModelInfo,
    UnsupportedModel,
    all_tensors,
    check_single_definitions,
    interface,
)
from pace_cert.model.readers.onnx_tree_ensemble_v5 import recognise_tree_ensemble_v5
from pace_cert.model.readers.onnxmltools_lightgbm import recognise_lightgbm
from pace_cert.model.readers.onnxmltools_xgboost import recognise_xgboost
from pace_cert.model.readers.pace_cert_argmax import recognise_pace_cert_argmax
from pace_cert.model.readers.pace_cert_tree import recognise_pace_cert_tree
from pace_cert.model.readers.skl2onnx_adaboost import recognise_adaboost_samme
from pace_cert.model.readers.skl2onnx_trees import recognise_tree_ensemble_classifier


def read_onnx_bytes(path: str | Path) -> bytes:
    """The bytes of the ONNX file at ``path``; InputError (exit 3) naming the file when
    it cannot be read."""
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise InputError(p, "file not found") from None
    except IsADirectoryError:
        raise InputError(p, "is a directory, expected an ONNX file") from None
    except OSError as e:
        raise InputError(p, f"cannot read file ({e.strerror})") from None


def load_onnx(path: str | Path) -> onnx.ModelProto:
    """Load an ONNX file without following external-data paths (exit 3 on failure)."""
    p = Path(path)
    data = read_onnx_bytes(p)
    try:
        model = onnx.load_from_string(data)
    except Exception:
        raise InputError(p, "not an ONNX model (protobuf parse failed)") from None
    if not model.graph.node:
        raise InputError(p, "not an ONNX model (empty graph)")
    for t in all_tensors(model):
        if t.data_location == onnx.TensorProto.EXTERNAL or t.external_data:
            raise InputError(p, f"tensor {t.name!r} uses external data, which is never followed")
    return model


def read_ensemble(path: str | Path) -> tuple[Ensemble, OnnxModelInfo]:
    """Read ``path`` into the IR; unsupported or malformed models raise InputError."""
    model = load_onnx(path)
    if not any(n.op_type in TREE_OPS for n in model.graph.node):
        ops = ", ".join(dict.fromkeys(n.op_type for n in model.graph.node))
        raise InputError(
            None,
            f"no tree ensemble found in {path} (its graph has no TreeEnsembleClassifier "
            f"or TreeEnsemble node, only {ops}); pace-cert compresses tree-ensemble "
            "classifiers",
        )
    try:
        return ensemble_from_model(model)
    except UnsupportedModel as e:
        raise InputError(path, f"unsupported model: {e}") from None


def ensemble_from_model(model: onnx.ModelProto) -> tuple[Ensemble, OnnxModelInfo]:
    """Fold the input transforms in front of the trees, if any (a Pipeline), then try
    every recogniser in turn on the rest; the first that matches wins."""
    check_single_definitions(model)
    info = interface(model)
    prefix = find_prefix(model)
    inner = model if prefix is None else strip_prefix(model, prefix)
    reasons = []
    for recognise in RECOGNISERS:
        try:
            ens = recognise(inner)
        except NoMatch as e:
            reasons.append(f"{recognise.__name__}: {e}")
            continue
        ens = ens if prefix is None else fold_input(ens, model, prefix)
        if info.feature_names is not None and len(info.feature_names) != ens.n_features:
            raise UnsupportedModel(
                f"metadata {FEATURE_NAMES_KEY} names {len(info.feature_names)} features, "
                f"the model reads {ens.n_features}"
            )
        return ens, info
    raise UnsupportedModel("; ".join(reasons))


#: one recogniser per exporter pattern, tried in this order (the exporter-specific ones
#: before skl2onnx's generic single-classifier pattern, which their graphs may also fit:
#: the rule is the same, only the family named differs)
RECOGNISERS: tuple[Callable[[onnx.ModelProto], Ensemble], ...] = (
    recognise_pace_cert_tree,  # pace-cert's one-tree classifier: named by its metadata
    recognise_lightgbm,
    recognise_xgboost,
    recognise_tree_ensemble_classifier,
    recognise_adaboost_samme,
    recognise_tree_ensemble_v5,
    recognise_pace_cert_argmax,
)


__all__ = [
    "RECOGNISERS",
    "OnnxModelInfo",
    "UnsupportedModel",
    "ensemble_from_model",
    "load_onnx",
    "read_ensemble",
]
