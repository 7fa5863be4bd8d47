"""The shipped examples run as documented (the README's library entry point, its CLI
commands, which examples/cli_walkthrough.sh repeats, and the CI gate in examples/ci)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str, out: Path) -> subprocess.CompletedProcess:
    """``examples/NAME`` run as a script with ``out`` as its argument."""
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )


def test_library_api_example_runs(tmp_path):
    p = run_example("library_api.py", tmp_path / "out")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "certified" in p.stdout and "verified" in p.stdout
    assert "checked: faithfulness" in p.stdout and "stated: run" in p.stdout
    assert (tmp_path / "out" / "report.html").exists()


def test_notebook_quickstart_runs(tmp_path):
    """examples/notebook_quickstart.py: a forest trained on a DataFrame, compressed with
    pace_cert.compress, printed, verified and saved (about 10 s)."""
    p = run_example("notebook_quickstart.py", tmp_path / "q")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "CertifiedModel" in p.stdout and "trees" in p.stdout
    assert "verify: verified" in p.stdout
    saved = sorted(f.name for f in (tmp_path / "q").iterdir())
    assert saved == ["certificate.json", "compressed.onnx", "original.onnx", "report.html"]
    from typer.testing import CliRunner

    from pace_cert.cli.main import app

    files = [str(tmp_path / "q" / n) for n in ("original.onnx", "compressed.onnx")]
    res = CliRunner().invoke(app, ["verify", *files, str(tmp_path / "q" / "certificate.json")])
    assert res.exit_code == 0, res.output


@pytest.mark.slow  # about 50 s (two compress runs, verify, report): make test-slow
def test_cli_walkthrough_runs(tmp_path):
    env = {
        **os.environ,
        "BIN": str(Path(sys.executable).parent),
        "DEMO": str(tmp_path / "demo"),
        "OUT": str(tmp_path / "out"),
    }
    p = subprocess.run(
        ["bash", str(ROOT / "examples" / "cli_walkthrough.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=env,
    )
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert "verified: all 2 pairs proved INFEASIBLE" in p.stdout, p.stdout[-2000:]
    assert '"status": "verified"' in p.stdout  # the --exhaustive --json verify
    assert "probe: 20000 random points near the data replayed" in p.stdout
    for mode in ("prune", "pace"):
        assert (tmp_path / "out" / mode / "certificate.json").exists()
    assert (tmp_path / "out" / "pace" / "report.html").exists()


def _gate(tmp_path, model, data, out, *flags, **env):
    return subprocess.run(
        ["bash", str(ROOT / "examples" / "ci" / "gate.sh"), str(model), str(data), str(out),
         *flags],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "PACE_CERT": str(Path(sys.executable).parent / "pace-cert"), **env},
    )  # fmt: skip


@pytest.mark.slow  # three CLI runs through the script
def test_ci_gate_script_gates_on_exit_codes(tmp_path, zoo_model):
    """examples/ci/gate.sh: 0 ships a certified and re-verified smaller model (with the
    report); 2 when nothing smaller was certified, 0 with ALLOW_UNCHANGED=1; 3 on bad
    input."""
    from .behaviour import RUNS, _model_and_data

    model, data = zoo_model("compas", "rf", 20, 2)
    p = _gate(tmp_path, model, data, tmp_path / "ok", "--mode", "prune", "--eta", "0.1")
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert "gate: verified; ship" in p.stdout
    assert (tmp_path / "ok" / "report.html").exists()
    assert json.loads((tmp_path / "ok" / "verify.json").read_text())["verified"] is True

    run = next(r for r in RUNS if r.name == "dt-compas-prune-global")  # 1 tree: nothing smaller
    (tmp_path / "dt").mkdir()
    dt_model, dt_data = _model_and_data(run, tmp_path / "dt")
    p = _gate(tmp_path, dt_model, dt_data, tmp_path / "same", "--mode", "prune")
    assert p.returncode == 2, (p.stdout[-2000:], p.stderr[-2000:])
    assert "certified nothing smaller" in p.stdout
    allow = {"ALLOW_UNCHANGED": "1"}
    p = _gate(tmp_path, dt_model, dt_data, tmp_path / "kept", "--mode", "prune", **allow)
    assert p.returncode == 0 and "keeping the original" in p.stdout, p.stdout[-2000:]

    p = _gate(tmp_path, tmp_path / "missing.onnx", data, tmp_path / "bad")
    assert p.returncode == 3 and "bad input" in p.stdout, p.stdout[-2000:]


def test_ci_workflow_runs_the_gate():
    text = (ROOT / "examples" / "ci" / "pace-cert.yml").read_text()
    assert "examples/ci/gate.sh" in text and "report.html" in text
    try:
        import yaml
    except ImportError:
        return
    wf = yaml.safe_load(text)
    steps = wf["jobs"]["certify"]["steps"]
    assert any("gate.sh" in s.get("run", "") for s in steps)
