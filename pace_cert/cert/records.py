"""What a certificate records of a model file and a run, read from them: file hashes,
solver versions, class labels, a model's summary (with its folded input transform), the
time stamp and the scaling method's text; the models these fill are ``certificate.py``'s."""

from __future__ import annotations

import datetime as _dt
import hashlib
from importlib import metadata
from pathlib import Path

import numpy as np

from pace_cert.cert.certificate import (
    FoldedThreshold,
    InputTransform,
    Label,
    ModelSummary,
    Solvers,
)
from pace_cert.model.ensemble import family_of


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def solver_versions(gurobi_used: bool = False) -> Solvers:
    def v(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return Solvers(
        ortools=v("ortools") or "?",
        highspy=v("highspy") or "?",
        gurobipy=v("gurobipy") if gurobi_used else None,
    )


def label(classes: np.ndarray, i: int) -> Label:
    c = classes[int(i)]
    return str(c) if isinstance(c, str | np.str_) else int(c)


def input_transform(ens) -> InputTransform | None:
    """The certificate's record of ``ens.input_folding`` (None without one)."""
    fold = ens.input_folding
    if fold is None:
        return None
    return InputTransform(
        ops=list(fold.ops),
        folded=[
            FoldedThreshold(
                feature=s.feature, threshold=s.threshold, raw_threshold=s.raw, how=s.how
            )
            for s in fold.splits
        ],
    )


def model_summary(path: str, sha: str, ens) -> ModelSummary:
    return ModelSummary(
        path=str(path),
        sha256=sha,
        trees=ens.n_trees,
        max_depth=ens.max_depth,
        leaves=ens.n_leaves,
        classes=[label(ens.classes, i) for i in range(ens.n_classes)],
        features=ens.n_features,
        pattern=ens.pattern,
        family=family_of(ens),
        estimators=ens.n_estimators,
        input_transform=input_transform(ens),
    )


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


SCALING_METHOD = (
    "per condition: s = 2**p with sum of per-tree max |coefficient| * s in (2**47, 2**48]; "
    "coefficients rounded to nearest (error <= 1 unit each incl. float64 error); "
    "right-hand sides rounded outward with exact rationals so the integer set is a superset"
)
SCALING_DERIVATION = (
    "E_req = 2 * gamma_(n+1) * (sum_t max_leaf |v_t| + max |base|), gamma_m = m u/(1-m u), "
    "u = 2**-24, n = trees: onnxruntime's float32 error on each of two class scores, any order"
)
