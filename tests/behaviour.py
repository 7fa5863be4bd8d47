"""Fixed compress runs whose certificates pin the driver's behaviour.

Each run trains a small scikit-learn ensemble on a bundled dataset, compresses it
through the public use case (``pace_cert.app.run_compress``) with one thread (the
deterministic, sequential pair schedule) and no time limit, and reduces the
certificate to a *fingerprint*: the phase that won, sizes, every pair's status and
history length, the lower bounds, why generation stopped. A restructure of the driver
must leave every fingerprint unchanged (``tests/test_behaviour.py``).

Record again (only when a change of behaviour is intended, and say so in the commit)::

    .venv/bin/python -m tests.behaviour record
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FINGERPRINTS = Path(__file__).with_name("data") / "behaviour_fingerprints.json"


@dataclass(frozen=True)
class Run:
    """One fixture run: model family and size, dataset, and compress settings."""

    name: str
    dataset: str
    kind: str  # rf | et | ada | gb | dt
    n: int
    depth: int
    mode: str
    eta: float = 0.0
    delta: float = 0.0
    raw: bool = False  # raw (unbinned) features instead of the paper's 10 bins
    recompress: bool = False  # compress the run's own output again (pace-cert's format)


RUNS: tuple[Run, ...] = (
    Run("rf-compas-prune-global", "compas", "rf", 10, 2, "prune"),
    Run("rf-compas-pace-region", "compas", "rf", 10, 2, "pace", 0.1, 0.1),
    Run("rf-compas-generate-global", "compas", "rf", 10, 2, "generate"),
    Run("et-compas-prune-eta", "compas", "et", 8, 3, "prune", 0.1),
    Run("ada-compas-pace-global", "compas", "ada", 10, 1, "pace"),
    Run("gb-compas-prune-global", "compas", "gb", 10, 2, "prune"),
    Run("gb3-seeds-pace-region", "seeds", "gb", 4, 2, "pace", 0.1, 0.1),
    Run("rf3-seeds-generate-eta", "seeds", "rf", 8, 2, "generate", 0.1),
    Run("dt-compas-prune-global", "compas", "dt", 1, 3, "prune"),
    Run("own-compas-prune-global", "compas", "rf", 10, 2, "prune", recompress=True),
    Run("rf-diabetes-prune-delta", "diabetes", "rf", 6, 2, "prune", 0.0, 0.1),
    Run("ada-diabetes-pace-delta", "diabetes", "ada", 8, 1, "pace", 0.0, 0.1),
    Run("rf-cancer-raw-prune-region", "cancer", "rf", 6, 2, "prune", 0.1, 0.1, raw=True),
)


def _model_and_data(run: Run, d: Path) -> tuple[Path, Path]:
    import onnx
    from sklearn.tree import DecisionTreeClassifier

    from pace_cert import zoo

    X, y, names = zoo.load_dataset(run.dataset)
    if not run.raw:
        X = zoo.bin_features(X)
    Xtr, _, ytr, _ = zoo.split(X, y)
    Xtr = Xtr.astype(np.float32).astype(np.float64)  # the CSV holds float32 values
    if run.kind == "dt":
        model = DecisionTreeClassifier(max_depth=run.depth, random_state=0).fit(Xtr, ytr)
    else:
        model = zoo.make_model(run.kind, run.n, run.depth).fit(Xtr, ytr)
    onnx.save(zoo.export_onnx(model, X.shape[1]), d / "model.onnx")
    zoo.write_csv(d / "train.csv", Xtr, ytr, names)
    return d / "model.onnx", d / "train.csv"


def fingerprint(cert) -> dict:
    """What a certificate says about the run, without timings or paths."""
    s = cert.summary
    return {
        "status": s.status,
        "phase": s.phase,
        "trees": [s.trees_before, s.trees_after],
        "leaves": [s.leaves_before, s.leaves_after],
        "new_learners": sum(lr.origin == "new" for lr in cert.learners),
        "merged": [lr.merged for lr in cert.learners],
        "pairs": {f"{p.y0}>{p.y}": [p.status, len(p.history)] for p in cert.pairs},
        "size_lower_bound": s.size_lower_bound,
        "witness_bound": s.witness_bound,
        "generation_stop": s.generation_stop,
        "pricing": s.pricing,
        "l0_optimal": s.l0_optimal,
        "l1_rounds": len(s.l1_values),
        "fidelity": round(s.fidelity, 6),
        "samples": [cert.region.samples_kept, cert.region.samples_dropped],
    }


def run_fixture(run: Run, work: Path) -> dict:
    """Compress ``run`` in ``work`` and return the certificate's fingerprint."""
    from pace_cert.app import run_compress
    from pace_cert.settings import CompressConfig

    model, data = _model_and_data(run, work)
    cfg = CompressConfig(mode=run.mode, eta=run.eta, delta=run.delta, threads=1, seed=0)
    out = run_compress(model, data, work / "out", cfg)
    if run.recompress:
        out = run_compress(work / "out" / "compressed.onnx", data, work / "again", cfg)
    return fingerprint(out.certificate)


def record() -> None:
    prints = {}
    for run in RUNS:
        with tempfile.TemporaryDirectory() as tmp:
            prints[run.name] = run_fixture(run, Path(tmp))
        print(run.name, prints[run.name]["trees"], prints[run.name]["phase"], flush=True)
    FINGERPRINTS.parent.mkdir(exist_ok=True)
    FINGERPRINTS.write_text(json.dumps(prints, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["record"]:
        sys.exit("usage: python -m tests.behaviour record")
    record()
