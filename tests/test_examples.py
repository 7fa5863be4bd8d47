"""The shipped examples run as documented (the README's library entry point and its CLI
commands, which examples/cli_walkthrough.sh repeats)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_library_api_example_runs(tmp_path):
    p = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "library_api.py"), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "certified" in p.stdout and "verified" in p.stdout
    assert (tmp_path / "out").exists()


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
