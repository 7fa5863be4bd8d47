"""In-memory models and data as the files the use cases read (:mod:`pace_cert.api`).

``compress``, ``verify`` and ``frontier`` read an ONNX file and a training CSV. The
library takes a fitted estimator, an ONNX ``ModelProto`` or its bytes, and a pandas
DataFrame or numpy arrays: :func:`model_input` and :func:`table_input` turn them into
bytes and a :class:`Table`, :func:`write_table` into the CSV (deterministic: the same
table always gives the same bytes, so its SHA-256 in a certificate can be re-computed).
Each call writes them into a private temporary directory (:func:`private_dir`). Names:
an in-memory model is named like ``<RandomForestClassifier>``, a DataFrame
``<DataFrame>``, arrays ``<ndarray>``, in messages and in the certificate.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pace_cert.data import ColumnMismatch, column_order
from pace_cert.errors import EmptyRegion, InputError
from pace_cert.export import estimator_name, estimator_to_onnx, feature_names, is_estimator

DATAFRAME = "<DataFrame>"
ARRAY = "<ndarray>"


@dataclass(frozen=True)
class ModelInput:
    """A model as ONNX bytes. ``path``: the file it came from (None: it came in memory);
    ``name``: how messages name it; ``columns``: the feature names it records (its
    estimator's ``feature_names_in_``, or the ONNX metadata): data is matched to them
    by name; None: by position."""

    onnx_bytes: bytes
    name: str
    path: Path | None = None
    columns: list[str] | None = None

    @property
    def in_memory(self) -> bool:
        return self.path is None


def model_input(model: Any) -> ModelInput:
    """A fitted estimator, an ONNX ``ModelProto``, its serialized bytes, or a path."""
    import onnx

    if isinstance(model, str | os.PathLike):
        from pace_cert.model.onnx_reader import read_onnx_bytes

        path = Path(model)
        blob = read_onnx_bytes(path)
        return ModelInput(blob, str(path), path, _recorded_names(blob))
    if isinstance(model, onnx.ModelProto):
        blob = model.SerializeToString()
        return ModelInput(blob, "<ModelProto>", None, _recorded_names(blob))
    if isinstance(model, bytes | bytearray | memoryview):
        return ModelInput(bytes(model), "<bytes>", None, _recorded_names(bytes(model)))
    if is_estimator(model):
        proto = estimator_to_onnx(model)  # records feature_names_in_, when it has them
        blob = proto.SerializeToString()
        return ModelInput(blob, estimator_name(model), None, feature_names(model))
    raise InputError(
        None,
        f"model: expected a fitted estimator, an ONNX ModelProto, bytes or a path, got "
        f"{type(model).__name__}",
    )


def _recorded_names(blob: bytes) -> list[str] | None:
    """The feature names an ONNX model records (its metadata), if any; None also when
    the bytes are no ONNX model or the entry is malformed (the reader says why later)."""
    import onnx

    from pace_cert.model.onnx_graph import recorded_feature_names

    try:
        names = recorded_feature_names(onnx.load_from_string(blob), None)
    except Exception:  # not ONNX, or a malformed entry: the reader says why later
        return None
    return None if names is None else list(names)


@dataclass(frozen=True)
class Table:
    """Rows in memory: float64 features [n, d] (NaN: a missing value), their labels [n],
    the feature names in model order, and how messages name the table."""

    X: np.ndarray
    y: np.ndarray
    names: list[str]
    name: str


def table_input(
    X: Any, y: Any = None, target: str = "target", columns: Sequence[str] | None = None
) -> Table | Path:
    """A CSV path (returned as it is: its ``target`` column holds the labels), a pandas
    DataFrame (labels in ``y`` or in its ``target`` column; when the model records its
    feature names ``columns``, the frame's other columns must be exactly those, in any
    order, and are taken by name; else in order), or a 2-D array with labels ``y``
    (columns by position: an array has no names)."""
    if isinstance(X, str | os.PathLike):
        if y is not None:
            raise InputError(X, "y is given but X is a CSV path: its target column has the labels")
        return Path(X)
    if _is_dataframe(X):
        return _frame(X, y, target, columns)
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(ARRAY, "X holds values that are not numbers") from None
    if arr.ndim != 2:
        raise InputError(ARRAY, f"X must be 2-D (rows x features), got shape {arr.shape}")
    if y is None:
        raise InputError(
            ARRAY, f"y is needed with an array X (or pass a DataFrame with a {target!r} column)"
        )
    names = list(columns) if columns is not None and len(columns) == arr.shape[1] else None
    names = names or [f"x{i}" for i in range(arr.shape[1])]
    return Table(arr, _labels(y, len(arr), ARRAY), names, ARRAY)


def _is_dataframe(X: Any) -> bool:
    return type(X).__module__.split(".")[0] == "pandas" and hasattr(X, "columns")


def _frame(df: Any, y: Any, target: str, columns: Sequence[str] | None) -> Table:
    import pandas as pd

    names = [str(c) for c in df.columns]
    if y is None:
        if target not in names:
            raise InputError(
                DATAFRAME,
                f"no labels: pass y, or a {target!r} column (target= names another column)",
            )
        y = df.iloc[:, names.index(target)]
        df = df.iloc[:, [i for i, n in enumerate(names) if n != target]]
    elif target in names:
        raise InputError(
            DATAFRAME,
            f"has a column {target!r} and y is given: drop it, or name the label column of "
            "the certificate with target=",
        )
    names = [str(c) for c in df.columns]
    if columns is not None:  # the model's names: matched exactly, never by position
        try:
            order = column_order(names, columns)
        except ColumnMismatch as e:
            raise InputError(DATAFRAME, str(e)) from None
        df = df.iloc[:, order]
        names = [names[i] for i in order]  # model order, as the frame names them
    for c, dtype in zip(names, df.dtypes):
        if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)):
            raise InputError(
                DATAFRAME, f"column {c!r} is not numeric ({dtype}): encode it as numbers first"
            )
    X = df.to_numpy(dtype=np.float64, na_value=np.nan)
    return Table(X, _labels(y, len(X), DATAFRAME), names, DATAFRAME)


def _labels(y: Any, n: int, name: str) -> np.ndarray:
    arr = np.asarray(y)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise InputError(name, f"y must be one label per row, got shape {arr.shape}")
    if len(arr) != n:
        raise InputError(name, f"y has {len(arr)} labels but X has {n} rows")
    return arr


def write_table(path: Path, table: Table, target: str) -> None:
    """The CSV ``compress --data`` reads: a header of the feature names and ``target``,
    then one row per sample, values as Python's ``repr`` of the float64 (``nan`` for a
    missing value), labels as ``str``."""
    if target in table.names:
        raise InputError(
            table.name, f"has a feature named {target!r}, the label column's name: pass target="
        )
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*table.names, target])
    for row, label in zip(table.X.tolist(), table.y.tolist()):
        w.writerow([*map(repr, row), _label_text(label)])
    Path(path).write_text(buf.getvalue())


def _label_text(label: Any) -> str:
    if isinstance(label, bytes):
        return label.decode()
    if isinstance(label, float) and label.is_integer():
        return str(int(label))
    return str(label)


@contextlib.contextmanager
def private_dir() -> Iterator[Path]:
    """A fresh temporary directory for one call (never shared with another call),
    removed with everything in it afterwards."""
    path = Path(tempfile.mkdtemp(prefix="pace-cert-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def renamed(e: InputError, names: dict[str, str]) -> InputError:
    """``e`` with the private files it names (``names``: path -> name) named as the
    caller knows them: ``/tmp/pace-cert-x/train.csv: row 3 ...`` becomes
    ``<DataFrame>: row 3 ...``."""
    path, problem = e.path, e.problem
    for private, name in names.items():
        problem = problem.replace(private, name)
        if path == private:
            path = name
    if isinstance(e, EmptyRegion):
        return EmptyRegion(problem, e.region, path=path)
    return InputError(path, problem)
