"""Peak memory of ``pace-cert compress``: ``python -m benchmarks.memory``.

Each realistic-suite model (``benchmarks/realistic/models.py``) is compressed as a user
would, ``pace-cert compress --mode pace --time-limit T --quiet`` in a fresh child
process, one run at a time; the peak resident set size is the kernel's for that child
(``os.wait4``'s ``ru_maxrss``), so a run the process guard ends counts too. With
``--code DIR`` the child runs the pace_cert source tree in ``DIR`` (e.g. an older
revision unpacked with ``git archive``) through ``PYTHONPATH``, with this environment's
packages. ``--sample`` also reads the child's ``VmRSS`` every 0.2 s and reports when it
peaked, next to the progress line printed last before that moment (where the memory goes).

Writes ``OUT.csv`` (one row per run, appended; ``--fresh`` starts over) and beside it
``OUT.md``: the Markdown table with the command and the commit.

    python -m benchmarks.memory --regions eta-delta --time-limit 300 --sample
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness.report import git_revision
from benchmarks.procs import append_row
from benchmarks.realistic.__main__ import REGIONS
from benchmarks.realistic.models import MODELS, build

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Run:
    key: str
    region: str
    time_limit: float
    exit_code: int
    peak_rss_mb: float
    wall: float
    trees: str
    phase: str
    peak_at: float | None  # seconds after start when VmRSS was highest (--sample)
    peak_during: str  # the progress line printed last before that (--sample)


def _vm_rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def measure(cmd: list[str], env: dict, timeout: float, sample: bool) -> tuple:
    """(exit code, peak RSS MB, wall s, stderr, samples [(t, rss MB)]) of ``cmd``."""
    samples: list[tuple[float, float]] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as fe:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=fe, text=True, env=env)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        done = threading.Event()

        def poll() -> None:
            while not done.wait(0.2):
                rss = _vm_rss_mb(proc.pid)
                if rss is not None:
                    samples.append((time.perf_counter() - t0, rss))

        watcher = threading.Thread(target=poll, daemon=True)
        if sample:
            watcher.start()
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            done.set()
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        fe.seek(0)
        err = fe.read()
    return code, usage.ru_maxrss / 1024, wall, err, samples


def _peak(samples: list[tuple[float, float]], err: str) -> tuple[float | None, str]:
    """When VmRSS peaked and the progress line printed last before then."""
    if not samples:
        return None, ""
    at, _rss = max(samples, key=lambda s: s[1])
    said = ""
    for line in err.splitlines():
        m = re.match(r"\[\s*([0-9.]+)s\] (.*)", line)
        if m and float(m.group(1)) <= at:
            said = m.group(2)[:120]
    return round(at, 1), said


def run_one(model, region: str, args) -> Run:
    eta, delta = REGIONS[region]
    onnx_path, train, _test = build(model, args.work / model.key)
    env = dict(os.environ)
    if args.code is not None:
        env["PYTHONPATH"] = str(args.code.resolve())
    with tempfile.TemporaryDirectory(prefix="pace-mem-") as tmp:
        out = Path(tmp) / "out"
        cmd = [
            sys.executable, "-m", "pace_cert.cli.main", "compress", str(onnx_path),
            "--data", str(train), "--out", str(out), "--mode", "pace",
            "--eta", str(eta), "--delta", str(delta), "--time-limit", str(args.time_limit),
            "--threads", str(args.threads),
        ]  # fmt: skip
        if not args.sample:
            cmd.append("--quiet")
        code, rss, wall, err, samples = measure(cmd, env, 3 * args.time_limit + 120, args.sample)
        trees, phase = "-", "-"
        cert = out / "certificate.json"
        if cert.exists():
            s = json.loads(cert.read_text())["summary"]
            trees, phase = f"{s['trees_before']} -> {s['trees_after']}", s.get("phase") or "-"
    at, during = _peak(samples, err)
    return Run(model.key, region, args.time_limit, code, round(rss), round(wall, 1), trees,
               phase, at, during)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.memory", description=__doc__)
    ap.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/profiles/memory.csv", help="CSV"
    )
    ap.add_argument("--work", type=Path, default=ROOT / ".bench-real", help="models and CSVs")
    ap.add_argument("--only", default="", help="regex on run keys (model/region)")
    ap.add_argument("--regions", default="global,delta")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--code", type=Path, default=None, help="pace_cert source tree to run")
    ap.add_argument("--sample", action="store_true", help="sample VmRSS: when it peaked")
    ap.add_argument("--fresh", action="store_true")
    args = ap.parse_args(argv)
    if args.fresh and args.out.exists():
        args.out.unlink()
    for region in args.regions.split(","):
        for model in MODELS:
            key = f"{model.key}/{region}"
            if args.only and not re.search(args.only, key):
                continue
            run = run_one(model, region, args)
            append_row(args.out, run)
            print(f"[memory] {key}: {run.peak_rss_mb:.0f} MB, exit {run.exit_code}, "
                  f"{run.wall} s {run.peak_during!r}", flush=True)  # fmt: skip
    text = table(args.out)
    command = "python -m benchmarks.memory " + " ".join(argv if argv is not None else sys.argv[1:])
    md = f"# Peak RSS of compress\n\n`{command}` at commit {git_revision(ROOT)}\n\n{text}\n"
    args.out.with_suffix(".md").write_text(md)
    print(text)
    return 0


def table(path: Path) -> str:
    """The runs in ``path`` as a Markdown table, largest peak last line."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    head = ["model", "region", "exit", "trees", "phase", "wall s", "peak RSS MB"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["key"], r["region"], r["exit_code"], r["trees"], r["phase"], r["wall"],
                 r["peak_rss_mb"]]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    peak = max((float(r["peak_rss_mb"]) for r in rows), default=0.0)
    lines.append(f"\nlargest peak RSS: {peak:.0f} MB")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
