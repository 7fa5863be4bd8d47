"""Running a command as a user would, in a fresh process, for the benchmark scripts."""

from __future__ import annotations

import csv
import os
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any


def run_process(cmd: list[str], timeout: float) -> tuple[int, str, str, float, float]:
    """(exit code, stdout, stderr, wall seconds, peak RSS in MB) of ``cmd`` in a fresh
    process. The peak RSS is the kernel's for that child (``os.wait4``), so it counts a
    process that ends by ``os._exit`` at its time limit too."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe, text=True)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    if wall >= timeout:
        err += f"\n[benchmark] killed after {timeout:.0f} s"
    return code, out, err, wall, usage.ru_maxrss / 1024


def read_rows(path: Path) -> list[dict]:
    """The rows of the CSV at ``path`` (none when it does not exist yet)."""
    if not path.exists():
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def append_row(path: Path, row: Any) -> None:
    """Append dataclass ``row`` to the CSV at ``path`` (its header first if new): the
    benchmark scripts write each run as it ends, so a stopped run keeps the others."""
    new = not path.exists()
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, [fl.name for fl in fields(row)])
        if new:
            w.writeheader()
        w.writerow(asdict(row))
