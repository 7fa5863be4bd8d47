"""Shared fixtures: tiny zoo models and cached `compress` runs.

Both are built once per test session and shared by the xdist workers (an fcntl lock
on a directory under the session's common temp root), so no configuration is trained
or compressed twice. Tests must copy an output directory before modifying it.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def _each_invocation_is_its_own_process():
    """An in-process ``CliRunner`` call counts its ``--time-limit`` from the call.

    The CLI counts the limit from process start (``pace_cert.plumbing.budget.process_start``), as
    a user's ``pace-cert`` process should. Inside an xdist worker that has run for
    minutes, that start lies before the test: a ``--time-limit 120`` test late in the
    suite (or on a loaded machine) would find its time spent before it began (CI: two
    NaN-row tests ended 'nothing smaller certified (0.0s)'). Each in-process invocation
    therefore starts its own clock, as its own process would; the process-start rule
    itself is pinned by the subprocess tests in ``test_process_guard.py``."""
    import time

    from pace_cert.plumbing import budget

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(budget, "process_start", time.perf_counter)
        yield


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    root = root / "pace-shared"
    root.mkdir(exist_ok=True)
    return root


def _once(root: Path, key: str, build: Callable[[Path], None]) -> Path:
    """Run ``build(root/key)`` exactly once across xdist workers; return the directory."""
    key = re.sub(r"[^A-Za-z0-9_.=-]+", "_", key)
    d = root / key
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (d / ".done").exists():
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir()
            build(d)
            (d / ".done").touch()
    return d


@pytest.fixture(scope="session")
def zoo_model(tmp_path_factory) -> Callable[..., tuple[Path, Path]]:
    """``zoo_model(dataset, kind, n, depth)`` -> (model.onnx, train.csv).

    A scikit-learn ensemble trained on the binned 80% split of a bundled dataset,
    exported with skl2onnx; the CSV holds the training rows (header, ``target``).
    """
    root = _shared_root(tmp_path_factory)

    def make(dataset: str, kind: str, n: int, depth: int) -> tuple[Path, Path]:
        def build(d: Path) -> None:
            import onnx

            from pace_cert import zoo

            X, y, names = zoo.load_dataset(dataset)
            X = zoo.bin_features(X)
            Xtr, _, ytr, _ = zoo.split(X, y)
            model = zoo.make_model(kind, n, depth).fit(Xtr, ytr)
            onnx.save(zoo.export_onnx(model, X.shape[1]), d / "model.onnx")
            zoo.write_csv(d / "train.csv", Xtr, ytr, names)

        d = _once(root, f"model-{dataset}-{kind}{n}-d{depth}", build)
        return d / "model.onnx", d / "train.csv"

    return make


@dataclass(frozen=True)
class CompressRun:
    model: Path
    data: Path
    out: Path  # OUT_DIR: compressed.onnx, certificate.json[, plausibility.json]
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture(scope="session")
def compress_run(tmp_path_factory, zoo_model) -> Callable[..., CompressRun]:
    """``compress_run(dataset, kind, n, depth, *flags)``: `pace-cert compress` run once
    (in-process through typer's CliRunner) on a :func:`zoo_model`; read-only result."""
    root = _shared_root(tmp_path_factory)

    def run(dataset: str, kind: str, n: int, depth: int, *flags: str) -> CompressRun:
        model, data = zoo_model(dataset, kind, n, depth)

        def build(d: Path) -> None:
            from typer.testing import CliRunner

            from pace_cert.cli.main import app

            args = ["compress", str(model), "--data", str(data), "--out", str(d / "out")]
            res = CliRunner().invoke(app, [*args, "--quiet", *flags])
            log = {"exit_code": res.exit_code, "stdout": res.stdout, "stderr": res.stderr}
            (d / "run.json").write_text(json.dumps(log))

        key = "-".join(["run", dataset, f"{kind}{n}", f"d{depth}", *flags])
        d = _once(root, key, build)
        log = json.loads((d / "run.json").read_text())
        return CompressRun(model, data, d / "out", **log)

    return run
