"""Compress and verify from Python: train, export, compress (prune-only), verify, report.

Run from the repository root: ``.venv/bin/python examples/library_api.py [OUT_DIR]``.
docs/lower-level-api.md documents these calls; the example with the top-level names
(docs/python-api.md) is examples/notebook_quickstart.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from pace_cert import zoo
from pace_cert.app import run_compress
from pace_cert.cert.verify import run_verify
from pace_cert.errors import InputError
from pace_cert.model.runtime import labels, session
from pace_cert.report import write_report
from pace_cert.settings import CompressConfig


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    X, y, names = zoo.load_dataset("cancer")
    X = zoo.bin_features(X)
    Xtr, Xte, ytr, _ = zoo.split(X, y)
    forest = zoo.make_model("ada", 50, 1).fit(Xtr, ytr)  # AdaBoost, 50 stumps
    (out / "ada.onnx").write_bytes(zoo.export_onnx(forest, X.shape[1]).SerializeToString())
    zoo.write_csv(out / "train.csv", Xtr, ytr, names)

    # global faithfulness (eta = delta = 0), at most 300 s; settings are checked here
    cfg = CompressConfig.of(mode="prune", time_limit=300, threads=2)
    try:
        res = run_compress(
            out / "ada.onnx",
            out / "train.csv",
            out / "prune",
            cfg,
            on_commit=lambda cert: print(f"  committed: {cert.summary.trees_after} trees"),
        )
    except InputError as e:  # bad input (exit code 3): nothing was written
        print(f"error: {e}")
        return e.exit_code
    s = res.certificate.summary
    print(f"{res.status}: {s.trees_before} -> {s.trees_after} trees in {s.seconds:.1f}s")
    cov = res.certificate.region.coverage
    print(f"region: {cov.inside} of {cov.rows} training rows inside")

    comp, cert = out / "prune" / "compressed.onnx", out / "prune" / "certificate.json"
    rep = run_verify(out / "ada.onnx", comp, cert, data_path=out / "train.csv")
    print(f"verify: {rep.status} ({rep.message})")
    for claim in rep.claims:
        print(f"  {claim['status']}: {claim['key']}")

    write_report(cert, out / "report.html")
    print(f"report: {out / 'report.html'}")

    lo = labels(session((out / "ada.onnx").read_bytes()), Xte.astype(np.float32))
    lc = labels(session(comp.read_bytes()), Xte.astype(np.float32))
    print(f"held-out agreement with the original: {np.mean(lo == lc):.4f}")
    return max(res.exit_code, rep.exit_code)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("out/library")))
