"""Bundled datasets and scikit-learn ensembles exported with skl2onnx.

Used by ``pace-cert demo``, the tests and the benchmarks. Preprocessing follows the
paper's appendix D as measured in ``shared/paper/REPRODUCTION.md``: every column with
more than two distinct values becomes 10 ordinal bins (quantile bins, or uniform bins
when quantile edges coincide or a bin is empty); stratified 80/20 split.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import onnx

DATASETS = ("cancer", "compas", "diabetes", "fico", "seeds", "spambase")


def dataset_path(name: str) -> Path:
    """Path of a bundled CSV (header row, features, last column ``target``)."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose from {', '.join(DATASETS)}")
    return Path(str(resources.files("pace_cert") / "data" / f"{name}.csv"))


def load_dataset(name: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Features (float64), integer labels and feature names of a bundled dataset."""
    path = dataset_path(name)
    with open(path) as f:
        header = f.readline().strip().split(",")
    data = np.genfromtxt(path, delimiter=",", skip_header=1)
    return data[:, :-1], data[:, -1].astype(np.int64), header[:-1]


def bin_features(X: np.ndarray, n_bins: int = 10) -> np.ndarray:
    """Ordinal 0..n_bins-1 bins for every column with more than two distinct values."""
    out = X.astype(np.float64).copy()
    for j in range(X.shape[1]):
        col = X[:, j]
        if len(np.unique(col)) <= 2:
            continue
        edges = np.quantile(col, np.linspace(0, 1, n_bins + 1))
        codes = None
        if len(np.unique(edges)) == len(edges):
            # right-closed intervals (a, b], first one closed on the left (pandas.qcut)
            codes = np.clip(np.searchsorted(edges, col, side="left") - 1, 0, n_bins - 1)
            if len(np.unique(codes)) < n_bins:
                codes = None
        if codes is None:
            lo, hi = col.min(), col.max()
            edges = np.linspace(lo, hi, n_bins + 1)
            codes = np.clip(np.searchsorted(edges, col, side="right") - 1, 0, n_bins - 1)
        out[:, j] = codes
    return out


def split(X: np.ndarray, y: np.ndarray, seed: int = 0):
    """Stratified 80/20 split (train first)."""
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=0.2, stratify=y, random_state=seed)


def make_model(kind: str, n_estimators: int, max_depth: int, seed: int = 0):
    """An unfitted scikit-learn ensemble of the given family."""
    from sklearn.ensemble import (
        AdaBoostClassifier,
        ExtraTreesClassifier,
        GradientBoostingClassifier,
        RandomForestClassifier,
    )
    from sklearn.tree import DecisionTreeClassifier

    if kind == "rf":
        return RandomForestClassifier(n_estimators, max_depth=max_depth, random_state=seed)
    if kind == "et":
        return ExtraTreesClassifier(n_estimators, max_depth=max_depth, random_state=seed)
    if kind == "ada":
        return AdaBoostClassifier(
            DecisionTreeClassifier(max_depth=max_depth),
            n_estimators=n_estimators,
            random_state=seed,
        )
    if kind == "gb":
        return GradientBoostingClassifier(
            n_estimators=n_estimators, max_depth=max_depth, random_state=seed
        )
    raise ValueError(f"unknown model kind {kind!r} (rf, et, ada, gb)")


def export_onnx(model, n_features: int) -> onnx.ModelProto:
    """Export a fitted classifier with skl2onnx: float32 input, zipmap off."""
    from skl2onnx import to_onnx

    x0 = np.zeros((1, n_features), np.float32)
    return to_onnx(model, x0, options={id(model): {"zipmap": False}})


def write_csv(path: Path, X: np.ndarray, y: np.ndarray, names: list[str], target: str = "target"):
    """Write features and labels with a header row (labels as given, e.g. int)."""
    with open(path, "w") as f:
        f.write(",".join([*names, target]) + "\n")
        for row, lab in zip(X, y):
            f.write(",".join(repr(float(v)) for v in row) + f",{lab}\n")
