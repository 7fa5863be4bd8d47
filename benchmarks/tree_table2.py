"""The paper's Table 2 forests in deployment units: one certified tree, prune and PACE.

Each forest of the paper's Table 2 (random forest of depth 2, n = 25 / 50 / 100 trees,
the bundled datasets binned, the 80/20 split of seed 0: ``benchmarks/harness/prepare.py``)
is compressed by the CLI in a fresh process at eta = delta = 0.1 (the limit counted from
process start) in each asked mode: ``tree`` (one certified tree), ``prune`` and ``pace``
(with ``--objective leaves --learner-depth D``), and each result is checked with
``pace-cert verify``. Per run: exit code, trees and leaves before and after, the tree's
depth, wall time, peak RSS, and from the certificate's ``summary.deployment`` the
onnxruntime latency of both models (per row over the training rows in one batch, and
at a batch of one row: measured side by side in the compress process). The report puts
the three modes' leaves side by side per forest, and the tree's latency ratios.
Resumable (``--fresh`` starts over); ``--jobs 2`` runs two at once.

    python -m benchmarks.tree_table2 --time-limit 600 --modes tree
    python -m benchmarks.tree_table2 --time-limit 300 --modes prune,pace --jobs 2 --threads 1
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.harness.report import git_revision
from benchmarks.procs import append_row, read_rows, run_process

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "pace_cert.cli.main"]
DATASETS = ("cancer", "compas", "diabetes", "fico", "seeds", "spambase")
SIZES = (25, 50, 100)
#: the pace-versus-prune target's configurations (issue 68)
TARGET = ("cancer", "diabetes", "seeds", "spambase")


@dataclass
class Row:
    key: str
    dataset: str
    n: int
    mode: str
    time_limit: float
    exit_code: int
    trees_before: int
    trees_after: int
    leaves_before: int
    leaves_after: int
    depth_after: int
    phase: str
    wall: float
    peak_rss_mb: float
    lat_row_before: float | None
    lat_row_after: float | None
    lat_one_before: float | None
    lat_one_after: float | None
    verify: str
    note: str


def forest(name: str, n: int, folder: Path) -> tuple[Path, Path]:
    """The Table 2 forest (RF n x depth 2, seed 0) as ONNX, and its training CSV."""
    from benchmarks.harness.prepare import prepare
    from benchmarks.harness.records import Config
    from pace_cert import zoo

    model, data = folder / "forest.onnx", folder / "train.csv"
    if model.exists() and data.exists():
        return model, data
    folder.mkdir(parents=True, exist_ok=True)
    prep = prepare(Config(name, "rf", n, 2, "prune", 0.1, 0.1, 0))
    X, y, names = zoo.load_dataset(name)
    Xtr, _, ytr, _ = zoo.split(zoo.bin_features(X), y, 0)
    model.write_bytes(prep.onnx_bytes)
    zoo.write_csv(data, Xtr, ytr, names)
    return model, data


def run_one(name: str, n: int, mode: str, limit: float, work: Path, threads: int,
            depth: int) -> Row:  # fmt: skip
    folder = work / f"{name}-{n}"
    model, data = forest(name, n, folder)
    out = folder / f"out-{mode}"
    extra = ["--objective", "leaves", "--learner-depth", str(depth)] if mode == "pace" else []
    cmd = [
        *CLI, "compress", str(model), "--data", str(data), "--out", str(out), "--mode", mode,
        "--eta", "0.1", "--delta", "0.1", "--time-limit", str(limit), "--threads",
        str(threads), "--quiet", "--json", *extra,
    ]  # fmt: skip
    code, _out, err, wall, rss = run_process(cmd, timeout=3 * limit + 120)
    key = f"{name}-{n}-{mode}"
    cert_path = out / "certificate.json"
    if not cert_path.exists():
        note = err.strip().splitlines()[-1][:200] if err.strip() else ""
        return Row(key, name, n, mode, limit, code, 0, 0, 0, 0, 0, "", round(wall, 1),
                   round(rss), None, None, None, None, "no certificate", note)  # fmt: skip
    cert = json.loads(cert_path.read_text())
    s = cert["summary"]
    dep = s.get("deployment") or {}
    before, after = dep.get("before") or {}, dep.get("after") or {}
    verify, note = "identical (original written)", ""
    if cert["compressed"]["sha256"] != cert["original"]["sha256"]:
        vcmd = [*CLI, "verify", str(model), str(out / "compressed.onnx"), str(cert_path),
                "--json", "--threads", str(threads)]  # fmt: skip
        vcode, vout, verr, _vsec, _ = run_process(vcmd, timeout=1800)
        try:
            verify = json.loads(vout)["status"]
        except (json.JSONDecodeError, KeyError):
            verify = f"verify exit {vcode}"
            note = verr.strip().splitlines()[-1][:200] if verr.strip() else ""
    return Row(
        key, name, n, mode, limit, code, s["trees_before"], s["trees_after"],
        s["leaves_before"], s["leaves_after"], cert["compressed"]["max_depth"],
        s.get("phase") or "", round(wall, 1), round(rss),
        before.get("latency_us_per_row_batch"), after.get("latency_us_per_row_batch"),
        before.get("latency_us_batch1"), after.get("latency_us_batch1"), verify,
        note or (s.get("stop_reason") or "")[:160],
    )  # fmt: skip


def _f(v: str, spec: str = ".3g") -> str:
    return "-" if v in ("", None) else format(float(v), spec)


def report(rows: list[dict], command: str, commit: str) -> str:
    """Per forest: the leaves each mode certified (exit 0 and verified; else the
    original's), and the certified tree's latency against the original's."""
    by = {(r["dataset"], int(r["n"]), r["mode"]): r for r in rows}

    def leaves(r: dict | None) -> str:
        if r is None:
            return "-"
        ok = r["exit_code"] == "0" and r["verify"] == "verified"
        return r["leaves_after"] if ok else f"({r['leaves_before']})"

    lines = [
        "# Table 2 forests in deployment units: one certified tree, prune and PACE",
        "",
        f"- command: `{command}`",
        f"- commit: {commit}",
        f"- date (UTC): {datetime.now(UTC).strftime('%Y-%m-%d %H:%M')}",
        "- leaves: of the certified, verified model; in parentheses the original's when "
        "the run certified nothing smaller (exit 2)",
        "- latency: onnxruntime, 1 thread, measured by compress with both models side by "
        "side (certificate `summary.deployment`): per row over the training rows in one "
        "batch, and one call at a batch of one row",
        "",
        "| forest | original leaves | prune | pace (leaves objective) | tree | tree depth | "
        "tree s | tree per-row latency (us) | ratio | tree batch-1 latency (us) | pace < prune |",
        "|" + "---|" * 11,
    ]
    for name in DATASETS:
        for n in SIZES:
            t, p, q = (by.get((name, n, m)) for m in ("tree", "prune", "pace"))
            if t is None and p is None and q is None:
                continue
            first = t or p or q
            lat, one, ratio, better = "-", "-", "-", "-"
            if t is not None and t["lat_row_after"]:
                lat = f"{_f(t['lat_row_before'])} -> {_f(t['lat_row_after'])}"
                ratio = f"{float(t['lat_row_before']) / float(t['lat_row_after']):.1f}x"
                one = f"{_f(t['lat_one_before'])} -> {_f(t['lat_one_after'])}"
            if p is not None and q is not None:
                lp = int(leaves(p).strip("()"))
                lq = int(leaves(q).strip("()"))
                better = "yes" if lq < lp else ("equal" if lq == lp else "NO: more")
            lines.append(
                f"| rf-{name}-{n} | {first['leaves_before']} | {leaves(p)} | {leaves(q)} | "
                f"{leaves(t)} | {t['depth_after'] if t else '-'} | {t['wall'] if t else '-'} | "
                f"{lat} | {ratio} | {one} | {better} |"
            )
    head = ("run", "exit", "trees", "leaves", "depth", "phase", "wall s", "RSS MB", "verify",
            "note")  # fmt: skip
    lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join([
            r["key"], r["exit_code"], f"{r['trees_before']} -> {r['trees_after']}",
            f"{r['leaves_before']} -> {r['leaves_after']}", r["depth_after"], r["phase"] or "-",
            r["wall"], r["peak_rss_mb"], r["verify"], r["note"],
        ]) + " |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.tree_table2", description=__doc__)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/profiles")
    ap.add_argument("--name", default="tree-table2")
    ap.add_argument("--work", type=Path, default=ROOT / ".bench-tree-table2")
    ap.add_argument("--modes", default="tree,prune,pace")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--learner-depth", type=int, default=8)
    ap.add_argument("--only", default="", help="regex on run keys (dataset-n-mode)")
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    csv_path = args.out / f"{args.name}.csv"
    if args.fresh and csv_path.exists():
        csv_path.unlink()
    command = "python -m benchmarks.tree_table2 " + " ".join(argv or sys.argv[1:])
    if not args.report_only:
        done = {r["key"] for r in read_rows(csv_path)}
        todo = [
            (name, int(n), mode)
            for name in args.datasets.split(",")
            for n in args.sizes.split(",")
            for mode in args.modes.split(",")
            if f"{name}-{n}-{mode}" not in done
            and (not args.only or re.search(args.only, f"{name}-{n}-{mode}"))
            and (mode == "tree" or name in TARGET or args.datasets != ",".join(DATASETS))
        ]
        for name, n, _ in todo:  # train every forest first, one at a time
            forest(name, n, args.work / f"{name}-{n}")

        def one(job: tuple[str, int, str]) -> None:
            row = run_one(*job, args.time_limit, args.work, args.threads, args.learner_depth)
            append_row(csv_path, row)
            print(f"{row.key}: exit {row.exit_code}, leaves {row.leaves_before} -> "
                  f"{row.leaves_after}, {row.wall:.1f} s, {row.verify}", flush=True)  # fmt: skip

        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(one, todo))
    (args.out / f"{args.name}.md").write_text(
        report(read_rows(csv_path), command, git_revision(ROOT))
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
