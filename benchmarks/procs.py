"""Running a command as a user would, in a fresh process, for the benchmark scripts."""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time


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
