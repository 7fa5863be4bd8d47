"""Fitted estimators to ONNX, as the library's :func:`pace_cert.compress` takes them.

scikit-learn classifiers and Pipelines go through skl2onnx, LightGBM's
``LGBMClassifier`` and XGBoost's ``XGBClassifier`` through onnxmltools (the converters
the tests and the realistic benchmark suite use): float32 input named as the converter
names it, zipmap off. Whether the exported graph is a supported tree ensemble is the
reader's question (:mod:`pace_cert.model.onnx_reader`), asked afterwards. Every problem
is an :class:`~pace_cert.errors.InputError` naming the estimator.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np
import onnx

from pace_cert.errors import InputError

#: the estimator families and their converters (by the estimator's top-level module)
CONVERTERS = {"sklearn": "skl2onnx", "lightgbm": "onnxmltools", "xgboost": "onnxmltools"}


def estimator_name(model: object) -> str:
    """How messages and certificates name an in-memory model: ``<RandomForestClassifier>``."""
    return f"<{type(model).__name__}>"


def is_estimator(model: object) -> bool:
    """Whether ``model`` looks like a scikit-learn-style estimator (has fit and predict)."""
    return callable(getattr(model, "fit", None)) and callable(getattr(model, "predict", None))


def feature_names(model: object) -> list[str] | None:
    """The column names a fitted estimator saw (``feature_names_in_``), if any."""
    names = getattr(model, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


def with_feature_names(proto: onnx.ModelProto, names: list[str] | None) -> onnx.ModelProto:
    """``proto`` recording ``names`` (the estimator's columns, in input order) under the
    reader's metadata key, so that data given later is matched to them by name."""
    from pace_cert.model.onnx_graph import FEATURE_NAMES_KEY

    if names is not None:
        entry = proto.metadata_props.add()
        entry.key, entry.value = FEATURE_NAMES_KEY, json.dumps(list(names))
    return proto


def _not_a_classifier(final: Any) -> str:
    """Why an estimator without ``classes_`` cannot be compressed: a regressor (or any
    other non-classifier) is not what pace-cert compresses; else it is not fitted."""
    kind = getattr(final, "_estimator_type", None)
    if kind is None:
        tags = getattr(final, "__sklearn_tags__", None)
        kind = getattr(tags(), "estimator_type", None) if callable(tags) else None
    if kind not in (None, "classifier"):
        return (
            f"is a {kind}, not a classifier: pace-cert compresses classifiers only (their "
            "labels are what it certifies)"
        )
    return "is not a fitted classifier (no classes_): fit it first"


def estimator_to_onnx(model: Any) -> onnx.ModelProto:
    """The fitted classifier ``model`` as ONNX (float32 input, zipmap off)."""
    name = estimator_name(model)
    family = type(model).__module__.split(".")[0]
    if family not in CONVERTERS:
        raise InputError(
            name,
            "unsupported estimator: pace-cert converts fitted scikit-learn classifiers and "
            "Pipelines, LightGBM LGBMClassifier and XGBoost XGBClassifier; export others "
            "to ONNX and pass the ModelProto, its bytes or its path",
        )
    n_features = _n_features(model, name)
    try:
        proto = (
            _sklearn(model, n_features)
            if family == "sklearn"
            else _booster(model, family, n_features)
        )
        return with_feature_names(proto, feature_names(model))
    except ImportError as e:
        raise InputError(
            name,
            f"needs {CONVERTERS[family]} to export it ({e}); pip install 'pace-cert[boosters]'",
        ) from None
    except InputError:
        raise
    except Exception as e:  # the converters raise many types for models they cannot write
        text = str(e).strip().splitlines()
        raise InputError(
            name, f"cannot export to ONNX ({text[0] if text else type(e).__name__})"
        ) from None


def _n_features(model: Any, name: str) -> int:
    n = getattr(model, "n_features_in_", None)
    if n is None:
        raise InputError(name, "is not fitted (no n_features_in_): fit it first")
    return int(n)


def _sklearn(model: Any, n_features: int) -> onnx.ModelProto:
    from skl2onnx import to_onnx
    from sklearn.pipeline import Pipeline

    final = model.steps[-1][1] if isinstance(model, Pipeline) else model
    if not hasattr(final, "classes_"):
        raise InputError(estimator_name(model), _not_a_classifier(final))
    x0 = np.zeros((1, n_features), np.float32)
    return to_onnx(model, x0, options={id(final): {"zipmap": False}})


def _booster(model: Any, family: str, n_features: int) -> onnx.ModelProto:
    if not hasattr(model, "classes_"):
        raise InputError(estimator_name(model), _not_a_classifier(model))
    from onnxmltools.convert import convert_lightgbm, convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    types = [("X", FloatTensorType([None, n_features]))]
    if family == "lightgbm":
        return convert_lightgbm(model, initial_types=types, zipmap=False)
    # onnxmltools reads XGBoost's tree dump, which names features by the booster's
    # feature names; it only understands f0, f1, ...: a copy without names
    plain = copy.deepcopy(model)
    plain.get_booster().feature_names = None
    return convert_xgboost(plain, initial_types=types)
