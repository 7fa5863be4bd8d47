"""The frontier on the realistic suite: ``python -m benchmarks.frontier`` (``make
bench-frontier``).

Every model of ``benchmarks/realistic/models.py`` gets the default ladder, as a user
would run it: ``pace-cert frontier MODEL --data train.csv --test test.csv --time-limit T``
in a fresh process (the limit counts from process start, for the whole ladder). Then
each rung directory is checked with ``pace-cert verify`` (a fresh CP-SAT proof), timed
against the rung's own compress time. Per rung: status, trees and leaves before and
after, the lower bounds the certificate states, coverage of the test rows, the rung's
wall time and whether the limit cut it, verify's verdict and time; per model: wall
time, overrun beyond the limit and the peak RSS of the frontier process (``os.wait4``).
Written to ``benchmarks/results/profiles/frontier.md`` (+ ``.csv``) with the command and
commit in the header.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.harness.report import git_revision
from benchmarks.procs import run_process
from benchmarks.realistic.models import MODELS, build

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "pace_cert.cli.main"]


@dataclass
class Row:
    key: str
    rung: str
    state: str
    eta: float
    delta: float
    status: str
    trees_before: int
    trees_after: int
    leaves_before: int
    leaves_after: int
    size_lower_bound: int | None
    witness_bound: int | None
    pruning_bound: int | None
    test_inside: str
    test_agreement: float | None
    rung_seconds: float
    cut: bool
    verify: str
    verify_seconds: float
    frontier_exit: int
    frontier_wall: float
    overrun: float
    peak_rss_mb: float


def run_model(model, limit: float, work: Path, threads: int) -> list[Row]:
    folder = work / model.key
    onnx_path, train, test = build(model, folder)
    out = folder / "frontier"
    cmd = [
        *CLI, "frontier", str(onnx_path), "--data", str(train), "--test", str(test),
        "--out", str(out), "--time-limit", str(limit), "--threads", str(threads), "--quiet",
    ]  # fmt: skip
    code, _out, err, wall, rss = run_process(cmd, timeout=3 * limit + 120)
    path = out / "frontier.json"
    if not path.exists():
        last = err.strip().splitlines()[-1][:120] if err.strip() else ""
        return [Row(model.key, "-", "-", 0, 0, f"no frontier.json: {last}", 0, 0, 0, 0, None, None,
                    None, "-", None, 0.0, False, "-", 0.0, code, round(wall, 1),
                    round(max(0.0, wall - limit), 1), round(rss))]  # fmt: skip
    rows = []
    for r in json.loads(path.read_text())["rungs"]:
        verify, vsec = "-", 0.0
        d = out / r["name"]
        if r["status"] not in ("empty region", "nothing written", "not started"):
            vcmd = [*CLI, "verify", str(onnx_path), str(d / "compressed.onnx"),
                    str(d / "certificate.json"), "--threads", str(threads)]  # fmt: skip
            vcode, _vo, _ve, vsec, _ = run_process(vcmd, timeout=1800)
            verify = {0: "verified", 1: "REFUTED", 2: "inconclusive"}.get(vcode, f"exit {vcode}")
        b, t = r["bounds"], r.get("test") or {}
        rows.append(
            Row(
                model.key, r["name"], r.get("state", "finished"), r["eta"], r["delta"],
                r["status"],
                r["trees_before"], r["trees_after"], r["leaves_before"], r["leaves_after"],
                b.get("size_lower_bound"), b.get("witness_bound"), b.get("pruning_bound"),
                f"{t.get('inside', '-')}/{t.get('rows', '-')}", t.get("agreement"),
                round(r["seconds"], 1), r["time_limited"], verify, round(vsec, 1), code,
                round(wall, 1), round(max(0.0, wall - limit), 1), round(rss),
            )
        )  # fmt: skip
    return rows


def _share(v: str | float | None) -> str:
    return "-" if v in (None, "") else f"{float(v):.4f}"


def report(rows: list[dict], command: str, commit: str, machine: str) -> str:
    head = ("model", "rung", "state", "status", "trees", "leaves", "lb", "wit", "prune", "test in",
            "agree", "rung s", "cut", "verify", "verify s", "frontier s", "RSS MB")  # fmt: skip
    lines = [
        "# Frontier on the realistic suite",
        "",
        f"- command: `{command}`",
        f"- commit: {commit}",
        f"- date (UTC): {datetime.now(UTC).strftime('%Y-%m-%d %H:%M')}",
        f"- machine: {machine}",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in rows:
        lines.append(
            "| " + " | ".join(str(v) for v in [
                r["key"], r["rung"], r["state"], r["status"],
                f"{r['trees_before']} -> {r['trees_after']}",
                f"{r['leaves_before']} -> {r['leaves_after']}",
                r["size_lower_bound"] or "-", r["witness_bound"] or "-",
                r["pruning_bound"] or "-", r["test_inside"], _share(r["test_agreement"]),
                r["rung_seconds"], r["cut"], r["verify"], r["verify_seconds"],
                r["frontier_wall"], r["peak_rss_mb"],
            ]) + " |"
        )  # fmt: skip
    slower = [r for r in rows if float(r["verify_seconds"]) > float(r["rung_seconds"])]
    worst = max((float(r["overrun"]) for r in rows), default=0.0)
    rss = max((float(r["peak_rss_mb"]) for r in rows), default=0.0)
    refuted = sum(r["verify"] == "REFUTED" for r in rows)
    exits = {r["key"]: int(r["frontier_exit"]) for r in rows}
    failed = sorted(f"{k} (exit {c})" for k, c in exits.items() if c not in (0, 2))
    lines += [
        f"- frontier processes ending other than 0 / 2: {', '.join(failed) or 'none'}",
        "",
        f"- rungs certified smaller: {sum(r['status'] == 'certified' for r in rows)}/{len(rows)}",
        f"- verify slower than the rung's compress: {len(slower)} rung(s)",
        f"- refuted by verify: {refuted}",
        f"- largest overrun beyond the limit: {worst:.1f} s; peak RSS {rss:.0f} MB",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.frontier", description=__doc__)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/profiles")
    ap.add_argument("--work", type=Path, default=ROOT / ".bench-frontier")
    ap.add_argument("--only", default="", help="regex on model keys")
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds per model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--name", default="frontier", help="result file stem")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    for model in MODELS:
        if args.only and not re.search(args.only, model.key):
            continue
        print(f"[frontier] {model.key} ...", flush=True)
        got = run_model(model, args.time_limit, args.work, args.threads)
        rows += got
        print(f"[frontier] {model.key}: " + ", ".join(
            f"{r.rung} {r.trees_after} ({r.verify})" for r in got), flush=True)  # fmt: skip
    csv_path, md_path = args.out / f"{args.name}.csv", args.out / f"{args.name}.md"
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, [fl.name for fl in fields(Row)])
        w.writeheader()
        for r in rows:
            w.writerow(asdict(r))
    commit = git_revision(ROOT)
    command = "python -m benchmarks.frontier " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    machine = (
        f"{os.cpu_count()} cores; each frontier in a fresh process, `--threads {args.threads}`"
    )
    with open(csv_path, newline="") as f:
        md_path.write_text(report(list(csv.DictReader(f)), command.strip(), commit, machine))
    print(md_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
