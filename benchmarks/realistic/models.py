"""The realistic-model suite's models: ensembles users train, on raw (unbinned) features.

Datasets: scikit-learn's built-in breast cancer (30 real features), wine (13 real, 3
classes) and digits (64 pixel counts, 10 classes), and the bundled diabetes (8 real),
seeds (7 real, 3 classes) and spambase (57 real) files, each split 80/20 stratified
(seed 0); features cast to float32 (what the ONNX model reads). Families: random
forests of 100 trees of depth 4 and 50 of depth 8, ExtraTrees 50 x depth 5, gradient
boosting 100 x depth 3 (binary and multi-class) and AdaBoost 50 x depth 2, exported
with skl2onnx (float32 input, zipmap off).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Model:
    """One suite model: ``key`` names it in results."""

    key: str
    dataset: str
    family: str  # rf | et | gb | ada
    n: int
    depth: int


MODELS: tuple[Model, ...] = (
    Model("rf100d4-cancer", "breast_cancer", "rf", 100, 4),
    Model("rf100d4-wine", "wine", "rf", 100, 4),
    Model("rf100d4-digits", "digits", "rf", 100, 4),
    Model("rf50d8-diabetes", "diabetes", "rf", 50, 8),
    Model("rf50d8-seeds", "seeds", "rf", 50, 8),
    Model("et50d5-cancer", "breast_cancer", "et", 50, 5),
    Model("et50d5-spambase", "spambase", "et", 50, 5),
    Model("gb100d3-cancer", "breast_cancer", "gb", 100, 3),
    Model("gb100d3-diabetes", "diabetes", "gb", 100, 3),
    Model("gb100d3-wine", "wine", "gb", 100, 3),
    Model("ada50d2-seeds", "seeds", "ada", 50, 2),
    Model("ada50d2-spambase", "spambase", "ada", 50, 2),
)


def load(dataset: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Raw features (float32 values as float64), integer labels, feature names."""
    if dataset in ("breast_cancer", "wine", "digits", "iris"):
        from sklearn import datasets

        d = getattr(datasets, f"load_{dataset}")()
        X, y = d.data, d.target
        names = [f"f{i}" for i in range(X.shape[1])]
    else:
        from pace_cert import zoo

        X, y, names = zoo.load_dataset(dataset)
        names = [n.replace(",", "_") for n in names]
    return X.astype(np.float32).astype(np.float64), np.asarray(y, np.int64), names


def build(model: Model, folder: Path) -> tuple[Path, Path, Path]:
    """Train, export and write ``model.onnx``, ``train.csv`` and ``test.csv`` into
    ``folder`` (kept: a second call reuses them). Returns the three paths."""
    from pace_cert import zoo

    paths = (folder / "model.onnx", folder / "train.csv", folder / "test.csv")
    if all(p.exists() for p in paths):
        return paths
    folder.mkdir(parents=True, exist_ok=True)
    X, y, names = load(model.dataset)
    Xtr, Xte, ytr, yte = zoo.split(X, y, seed=0)
    est = zoo.make_model(model.family, model.n, model.depth, seed=0).fit(Xtr, ytr)
    paths[0].write_bytes(zoo.export_onnx(est, X.shape[1]).SerializeToString())
    zoo.write_csv(paths[1], Xtr, ytr, names)
    zoo.write_csv(paths[2], Xte, yte, names)
    return paths
