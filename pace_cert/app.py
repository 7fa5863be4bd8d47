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
from pace_cert.driver.result import CompressResult
from pace_cert.driver.runner import compress
from pace_cert.driver.state import Progress
from pace_cert.errors import InputError
from pace_cert.model.onnx_reader import load_onnx, read_ensemble
from pace_cert.model.onnx_writer import ensemble_to_onnx
from pace_cert.model.runtime import loadable_session
from pace_cert.outputs import Committed, OutputDir
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
    output: OutputDir | None = None,
) -> CompressOutcome:
    """Read the model and the training CSV, compress, write the compressed model and
    the certificate (and the plausibility artifact) to ``out_dir``. ``budget``: the
    run's time (default ``cfg.time_limit`` from now; the CLI counts it from process
    start). Inputs are checked before anything is written; from then on ``out_dir``
    always holds a complete set (:mod:`pace_cert.outputs`): the original unchanged
    first, then each smaller certified model as it is found. Exit code 0 when the
    result is smaller than the original, else 2 (the original's bytes are written)."""
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

    output = OutputDir(out_dir) if output is None else output
    render = _Renderer(cfg, model_path, original_bytes, info, out_dir, data)

    def publish(res: CompressResult) -> None:
        output.commit(*render.files(res)[:2])

    result = compress(ensemble, data.X, cfg, progress, budget, on_improve=publish)
    files, committed, cert = render.files(result)
    output.commit(files, committed)
    return CompressOutcome(committed.exit_code, cert.summary.status, out_dir, cert)


class _Renderer:
    """The files a result commits: the compressed model (the original's own bytes
    unless a smaller model was certified), the plausibility artifact, the certificate."""

    def __init__(self, cfg, model_path, original_bytes, info, out_dir, data) -> None:
        self.cfg, self.model_path, self.original_bytes = cfg, model_path, original_bytes
        self.info, self.out_dir, self.data = info, out_dir, data
        self.original_sha = hashlib.sha256(original_bytes).hexdigest()

    def files(self, result: CompressResult) -> tuple[dict[str, bytes], Committed, Certificate]:
        cfg = self.cfg
        if result.smaller:
            comp_bytes = ensemble_to_onnx(result.compressed, self.info).SerializeToString()
        else:  # nothing smaller: the original, unchanged, is the answer
            result = result.unchanged()
            comp_bytes = self.original_bytes
        files: dict[str, bytes] = {}
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
        files["compressed.onnx"] = comp_bytes
        cert = build_certificate(
            result,
            cfg,
            str(self.model_path),
            self.original_sha,
            str(self.out_dir / "compressed.onnx"),
            hashlib.sha256(comp_bytes).hexdigest(),
            plaus,
            self.data,
        )
        files["certificate.json"] = (cert.model_dump_json(indent=1) + "\n").encode()  # last
        s = cert.summary
        line = f"{s.status}: {s.trees_before} -> {s.trees_after} trees"
        return files, Committed(0 if result.smaller else 2, line), cert


def _read_bytes(path: Path) -> bytes:
    load_onnx(path)  # raises InputError with a clear message for unreadable/non-ONNX
    return Path(path).read_bytes()
