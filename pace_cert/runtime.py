"""onnxruntime as the reference semantics: labels of an ONNX model on float32 rows."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort


def session(model: bytes) -> ort.InferenceSession:
    """A single-threaded CPU session (deterministic summation order)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def labels(sess: ort.InferenceSession, X: np.ndarray, batch: int = 65536) -> np.ndarray:
    """First output (the label) for each row of X."""
    name = sess.get_inputs()[0].name
    X = np.asarray(X, np.float32)
    if len(X) == 0:
        return np.zeros(0)
    parts = [sess.run(None, {name: X[i : i + batch]})[0] for i in range(0, len(X), batch)]
    return np.concatenate(parts)
