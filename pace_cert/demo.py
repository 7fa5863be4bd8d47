"""``pace-cert demo``: train, export, compress, verify and summarise on a bundled dataset."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from pace_cert import zoo
from pace_cert.app import run_compress
from pace_cert.cert.coverage import coverage_line
from pace_cert.cert.verify import run_verify
from pace_cert.cert.words import bound_lines
from pace_cert.model.runtime import labels, session
from pace_cert.plumbing.outputs import write_atomic
from pace_cert.report import write_report
from pace_cert.settings import CompressConfig


def run_demo(
    out: Path,
    dataset: str,
    trees: int,
    depth: int,
    eta: float,
    delta: float,
    mode: str,
    echo: Callable[[str], None] = print,
) -> int:
    """Returns the worst exit code of compress and verify (0 when all is well)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    X, y, names = zoo.load_dataset(dataset)
    X = zoo.bin_features(X)
    Xtr, Xte, ytr, yte = zoo.split(X, y)
    echo(f"dataset {dataset}: {len(Xtr)} training rows, {X.shape[1]} features (binned)")
    model = zoo.make_model("rf", trees, depth).fit(Xtr, ytr)
    onnx_model = zoo.export_onnx(model, X.shape[1])
    model_path = out / "original.onnx"
    write_atomic(model_path, onnx_model.SerializeToString())
    train_csv = out / "train.csv"
    zoo.write_csv(train_csv, Xtr, ytr, names)
    zoo.write_csv(out / "test.csv", Xte, yte, names)  # the held-out rows (frontier --test)
    echo(f"trained a random forest ({trees} trees, depth {depth}) -> {model_path}")
    cfg = CompressConfig(mode=mode, eta=eta, delta=delta, threads=2, seed=0)
    res = run_compress(model_path, train_csv, out / "compressed", cfg, progress=echo)
    s = res.certificate.summary
    comp_path = out / "compressed" / "compressed.onnx"
    cert_path = out / "compressed" / "certificate.json"
    rep = run_verify(model_path, comp_path, cert_path, threads=2)
    report_path = out / "compressed" / "report.html"
    write_report(cert_path, report_path)
    lo = labels(session(model_path.read_bytes()), Xte.astype(np.float32))
    lc = labels(session(comp_path.read_bytes()), Xte.astype(np.float32))
    echo("")
    echo(f"compress: {res.status} ({mode}, eta={eta}, delta={delta})")
    echo(
        f"  trees {s.trees_before} -> {s.trees_after}, leaves {s.leaves_before} -> {s.leaves_after}"
        f", {s.new_learner_share:.0%} generated, {s.seconds:.1f}s"
    )
    cert = res.certificate
    for line in bound_lines(s, cert.original.max_depth, cert.compressed.max_depth):
        echo("  " + line)
    reg = res.certificate.region
    if reg.coverage is not None:
        echo("  region: " + coverage_line(reg.coverage, reg.eta, reg.delta))
    echo(
        f"  held-out: fidelity {np.mean(lo == lc):.4f}, accuracy original "
        f"{np.mean(lo == yte):.4f} / compressed {np.mean(lc == yte):.4f}"
    )
    echo(f"verify:   {rep.status}: {rep.message}")
    echo(f"files:    {comp_path}, {cert_path}, {report_path}")
    return max(res.exit_code, rep.exit_code)
