"""onnxruntime as the reference semantics: labels of an ONNX model on float32 rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort

from pace_cert.errors import InputError


def session(model: bytes) -> ort.InferenceSession:
    """A single-threaded CPU session (deterministic summation order)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def loadable_session(model: bytes, path: str | Path) -> ort.InferenceSession:
    """``session(model)``, or InputError naming ``path`` when onnxruntime cannot load
    the model: certificates speak about onnxruntime's labels, so such a file is bad
    input (checked before any solving)."""
    try:
        return session(model)
    except Exception as e:  # onnxruntime raises several exception types for bad graphs
        text = str(e).strip()
        msg = text.splitlines()[0] if text else type(e).__name__
        raise InputError(path, f"onnxruntime cannot load the model ({msg})") from None


def labels(sess: ort.InferenceSession, X: np.ndarray, batch: int = 65536) -> np.ndarray:
    """First output (the label) for each row of X."""
    name = sess.get_inputs()[0].name
    X = np.asarray(X, np.float32)
    if len(X) == 0:
        return np.zeros(0)
    parts = [sess.run(None, {name: X[i : i + batch]})[0] for i in range(0, len(X), batch)]
    return np.concatenate(parts)


def class_indices(sess: ort.InferenceSession, X: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """onnxruntime's label for each row of X as an index into ``classes`` (int64)."""

    def key(v: object) -> object:
        return str(v) if isinstance(v, str | bytes | np.str_) else int(v)  # type: ignore[call-overload]

    lookup = {key(c): i for i, c in enumerate(classes)}
    return np.array([lookup[key(v)] for v in labels(sess, X)], np.int64)
