"""Preparing one configuration's model as the paper's protocol says.

``shared/paper/REPRODUCTION.md``: bundled dataset -> 10 ordinal bins -> stratified
80/20 split with the seed -> scikit-learn ensemble -> skl2onnx -> read back with
pace-cert's ONNX reader (so we measure what onnxruntime runs), the IR checked against
onnxruntime's labels on every decided training and test row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort

from benchmarks.harness.records import Config
from pace_cert import zoo
from pace_cert.model.ensemble import Ensemble
from pace_cert.model.onnx_reader import OnnxModelInfo, ensemble_from_model


class MismatchError(AssertionError):
    """onnxruntime and the IR disagree: a bug in pace-cert, never a benchmark outcome."""


@dataclass
class Prepared:
    """A trained, exported and re-read model with its data split."""

    original: Ensemble
    info: OnnxModelInfo
    onnx_bytes: bytes
    X_train: np.ndarray  # float32
    X_test: np.ndarray  # float32
    y_test: np.ndarray
    ort_train: np.ndarray  # onnxruntime labels of the original ONNX
    ort_test: np.ndarray


def ort_labels(onnx_bytes: bytes, X: np.ndarray) -> np.ndarray:
    """Labels that onnxruntime returns for float32 rows ``X`` (first output)."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(onnx_bytes, opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return np.asarray(sess.run(None, {name: X})[0]).reshape(-1)


def check_agree(what: str, cfg: Config, expected: np.ndarray, got: np.ndarray) -> None:
    """Raise :class:`MismatchError` naming the first disagreeing rows."""
    bad = np.flatnonzero(np.asarray(expected) != np.asarray(got))
    if len(bad):
        raise MismatchError(
            f"{cfg.key}: {what} disagree on {len(bad)}/{len(expected)} rows "
            f"(first rows {bad[:5].tolist()}: expected {np.asarray(expected)[bad[:5]].tolist()}, "
            f"got {np.asarray(got)[bad[:5]].tolist()})"
        )


def decided_rows(model: Ensemble, X: np.ndarray) -> np.ndarray:
    """Rows whose IR margin exceeds the model's runtime guard: there onnxruntime's label
    provably equals the IR's. Rows inside the guard (e.g. an exact 0.5/0.5 vote whose
    float32 leaf values differ in the last bit) lie outside every faithfulness region
    (c_o >= the guard), so they are left out of the agreement check."""
    S = model.scores(X)
    top = np.sort(S, axis=1)
    margin = top[:, -1] - top[:, -2] if S.shape[1] > 1 else np.full(len(X), np.inf)
    return margin > model.runtime_guard


def prepare(cfg: Config) -> Prepared:
    """Data → bins → split → train → ONNX → IR, with the IR checked against onnxruntime."""
    X, y, _ = zoo.load_dataset(cfg.dataset)
    X_train, X_test, y_train, y_test = zoo.split(zoo.bin_features(X), y, cfg.seed)
    model = zoo.make_model(cfg.family, cfg.n_estimators, cfg.depth, cfg.seed)
    model.fit(X_train, y_train)
    onnx_bytes = zoo.export_onnx(model, X.shape[1]).SerializeToString()
    original, info = ensemble_from_model(onnx.load_from_string(onnx_bytes))
    X_train32, X_test32 = X_train.astype(np.float32), X_test.astype(np.float32)
    ort_train, ort_test = ort_labels(onnx_bytes, X_train32), ort_labels(onnx_bytes, X_test32)
    for what, X32, labels in (("test", X_test32, ort_test), ("training", X_train32, ort_train)):
        decided = decided_rows(original, X32)  # near-ties: float32 rounding decides them
        check_agree(
            f"original ONNX (onnxruntime) and its IR on {what} rows (margin > runtime guard)",
            cfg,
            labels[decided],
            original.predict(X32[decided]),
        )
    return Prepared(original, info, onnx_bytes, X_train32, X_test32, y_test, ort_train, ort_test)
