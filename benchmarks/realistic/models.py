"""The realistic-model suite's models: ensembles users train, on raw (unbinned) features.

Datasets: scikit-learn's built-in breast cancer (30 real features), wine (13 real, 3
classes) and digits (64 pixel counts, 10 classes), and the bundled diabetes (8 real),
seeds (7 real, 3 classes) and spambase (57 real) files, each split 80/20 stratified
(seed 0); features cast to float32 (what the ONNX model reads). Families: random
forests of 100 trees of depth 4 and 50 of depth 8, ExtraTrees 50 x depth 5, gradient
boosting 100 x depth 3 (binary and multi-class) and AdaBoost 50 x depth 2, exported
with skl2onnx (float32 input, zipmap off); LightGBM and XGBoost 50 x depth 3 (binary
and multi-class; LightGBM with at most 8 leaves per tree), exported with onnxmltools
(``pip install -e ".[boosters]"``).
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
    family: str  # rf | et | gb | ada | lgbm | xgb
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
    Model("lgbm50d3-diabetes", "diabetes", "lgbm", 50, 3),
    Model("lgbm50d3-wine", "wine", "lgbm", 50, 3),
    Model("xgb50d3-diabetes", "diabetes", "xgb", 50, 3),
    Model("xgb50d3-wine", "wine", "xgb", 50, 3),
)

BOOSTERS = ("lgbm", "xgb")


def make_model(family: str, n: int, depth: int, seed: int = 0):
    """An unfitted classifier of ``family``: the scikit-learn ones of
    :func:`pace_cert.zoo.make_model`, or LightGBM / XGBoost (``n`` rounds of trees of
    depth <= ``depth``; single-threaded and seeded, so a rebuild gives the same model)."""
    if family == "lgbm":
        import lightgbm

        return lightgbm.LGBMClassifier(
            n_estimators=n,
            max_depth=depth,
            num_leaves=2**depth,
            random_state=seed,
            n_jobs=1,
            verbose=-1,
        )
    if family == "xgb":
        import xgboost

        return xgboost.XGBClassifier(
            n_estimators=n, max_depth=depth, random_state=seed, n_jobs=1, tree_method="exact"
        )
    from pace_cert import zoo

    return zoo.make_model(family, n, depth, seed)


def export(family: str, est, n_features: int):
    """The fitted classifier as ONNX: float32 input, zipmap off (onnxmltools for LightGBM
    and XGBoost, skl2onnx otherwise)."""
    if family not in BOOSTERS:
        from pace_cert import zoo

        return zoo.export_onnx(est, n_features)
    from onnxmltools.convert import convert_lightgbm, convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    types = [("X", FloatTensorType([None, n_features]))]
    if family == "lgbm":
        return convert_lightgbm(est, initial_types=types, zipmap=False)
    return convert_xgboost(est, initial_types=types)


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
    est = make_model(model.family, model.n, model.depth, seed=0).fit(Xtr, ytr)
    paths[0].write_bytes(export(model.family, est, X.shape[1]).SerializeToString())
    zoo.write_csv(paths[1], Xtr, ytr, names)
    zoo.write_csv(paths[2], Xte, yte, names)
    return paths
