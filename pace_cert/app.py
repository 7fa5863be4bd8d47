"""Use cases behind the CLI: compress (read → PACE → write model + certificate).

Inputs are validated before any long computation; outputs are written atomically and
only at the end, so a bad input or an interrupted run leaves nothing half-written.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pace_cert.budget import Budget
from pace_cert.cert.build import build_certificate
from pace_cert.cert.certificate import Certificate, Plausibility
from pace_cert.data import read_csv
from pace_cert.driver.runner import compress
from pace_cert.driver.state import Progress
from pace_cert.errors import InputError
from pace_cert.model.onnx_reader import load_onnx, read_ensemble
from pace_cert.model.onnx_writer import ensemble_to_onnx, write_atomic
from pace_cert.model.runtime import loadable_session
from pace_cert.settings import CompressConfig, SettingError, check_for_model


@dataclass(frozen=True)
class CompressOutcome:
    exit_code: int
    status: str
    out_dir: Path
    certificate: Certificate


def prepare_out_dir(out: Path) -> None:
    """Create OUT_DIR if needed and check that it is writable (before any work)."""
    if out.exists() and not out.is_dir():
        raise InputError(out, "output path exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".pace-cert-probe-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise InputError(out, f"output directory is not writable ({e.strerror})") from None


def run_compress(
    model_path: Path,
    data_path: Path,
    out_dir: Path,
    cfg: CompressConfig,
    target: str = "target",
    progress: Progress | None = None,
    budget: Budget | None = None,
) -> CompressOutcome:
    """Read the model and the training CSV, compress, write the compressed model and
    the certificate (and the plausibility artifact) to ``out_dir``. ``budget``: the
    run's time (default ``cfg.time_limit`` from now; the CLI counts it from process
    start)."""
    original_bytes = _read_bytes(model_path)
    ensemble, info = read_ensemble(model_path)
    loadable_session(original_bytes, model_path)  # the certificate is about its labels
    try:
        check_for_model(cfg, ensemble.kind)
    except SettingError as e:
        raise InputError(None, str(e)) from None
    data = read_csv(data_path, ensemble.classes, ensemble.n_features, target)
    if cfg.delta > 0 and len(data.X) < 2:
        raise InputError(data_path, "--delta > 0 needs at least 2 training rows")
    prepare_out_dir(out_dir)

    result = compress(ensemble, data.X, cfg, progress, budget)

    if result.certified:
        comp_bytes = ensemble_to_onnx(result.compressed, info).SerializeToString()
    else:  # the original is always a valid (uncompressed) fallback
        comp_bytes = original_bytes
    files: dict[str, bytes] = {"compressed.onnx": comp_bytes}
    plaus = None
    if result.plausibility is not None:
        from pace_cert.region.plausibility import to_json_dict

        pbytes = (json.dumps(to_json_dict(result.plausibility), indent=1) + "\n").encode()
        files["plausibility.json"] = pbytes
        plaus = Plausibility(
            path="plausibility.json",
            sha256=hashlib.sha256(pbytes).hexdigest(),
            n_estimators=cfg.iforest_estimators,
            max_samples=int(result.plausibility.max_samples_used),
            seed=cfg.seed,
        )
    cert = build_certificate(
        result,
        cfg,
        str(model_path),
        hashlib.sha256(original_bytes).hexdigest(),
        str(out_dir / "compressed.onnx"),
        hashlib.sha256(comp_bytes).hexdigest(),
        plaus,
        data,
    )
    files["certificate.json"] = (cert.model_dump_json(indent=1) + "\n").encode()
    for name, blob in files.items():  # certificate last: it is the commit point
        write_atomic(out_dir / name, blob)
    return CompressOutcome(0 if result.certified else 2, result.status, out_dir, cert)


def _read_bytes(path: Path) -> bytes:
    load_onnx(path)  # raises InputError with a clear message for unreadable/non-ONNX
    return Path(path).read_bytes()
