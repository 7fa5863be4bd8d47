"""The shipped examples run as documented (they are the README's library entry point)."""

from __future__ import annotations

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
