"""Scaling study: time and peak memory as the forest grows in trees and in depth.

    python -m benchmarks.scaling [--dataset cancer] [--trees 25,50,100,200,500]
        [--depths 2,3,4,5,6,7] [--fixed-depth 3] [--fixed-trees 50] [--time-limit 120]
        [--out benchmarks/results/profiles]

Two sweeps on one bundled dataset (random forests, seed 0, prepared as in the
harness; confidence region eta = 0.1 by default, delta = 0): trees at a fixed
depth, depth at a fixed number of trees. Every measurement runs in a fresh subprocess
so that peak RSS (``ru_maxrss``, CP-SAT's C++ memory included) belongs to that measurement alone:

* ``round``: one separation round — build the oracle for the original, solve the L1
  master on the initial samples, run CP-SAT on every label pair for that candidate
  (no enumeration pre-search). Times: oracle build, separation.
* ``proof``: the hardest round — the candidate is the original itself (every tree at
  its own weight, folded to float32 as the product writes it), so CP-SAT must prove
  every pair INFEASIBLE: the cost of certifying a model as large as the original.
* ``prune``: a full ``compress --mode prune`` under ``--time-limit`` (the result is the
  best certified model by then; "time limit" marks points that did not converge).

Writes ``<out>/scaling.csv``, ``scaling.md`` and ``scaling.png`` (time and memory
against trees and against depth, log scales).
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks import harness
from pace_cert.driver.runner import compress
from pace_cert.driver.state import RunState
from pace_cert.learners.pool import fold
from pace_cert.oracle.score_model import ScoreModel
from pace_cert.plumbing.budget import Budget
from pace_cert.region.margins import required_margin
from pace_cert.settings import CompressConfig

DEFAULT_OUT = harness.PROFILES_OUT
REPO = Path(__file__).resolve().parents[1]  # the subprocesses run ``-m`` from here
FIELDS = [
    "sweep",
    "dataset",
    "trees",
    "depth",
    "leaves",
    "what",
    "status",
    "trees_after",
    "build_s",
    "seconds",
    "pairs_proved",
    "pairs",
    "peak_rss_mb",
    "rss_after_prepare_mb",
]

MD_COLUMNS = (  # (markdown header, row key)
    ("trees", "trees"),
    ("depth", "depth"),
    ("leaves", "leaves"),
    ("what", "what"),
    ("status", "status"),
    ("trees after", "trees_after"),
    ("build (s)", "build_s"),
    ("time (s)", "seconds"),
    ("pairs proved", "pairs_proved"),
    ("peak RSS (MiB)", "peak_rss_mb"),
    ("RSS after prepare (MiB)", "rss_after_prepare_mb"),
)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure_one(
    dataset: str, trees: int, depth: int, what: str, time_limit: float, eta: float
) -> dict:
    """Run one measurement in this process (called in a subprocess by :func:`main`)."""
    cfg = harness.Config(dataset, "rf", trees, depth, "prune", eta, 0.0, 0)
    prep = harness.prepare(cfg)
    base = _rss_mb()
    ccfg = CompressConfig.of(mode="prune", eta=eta, time_limit=time_limit, threads=2, seed=0)
    row = {
        "dataset": dataset,
        "trees": trees,
        "depth": depth,
        "leaves": prep.original.n_leaves,
        "what": what,
        "rss_after_prepare_mb": round(base, 1),
        "eta": eta,
    }
    if what in ("round", "proof"):
        t0 = time.perf_counter()
        state = RunState.create(
            prep.original, prep.X_train, ccfg, Budget.seconds(time_limit), lambda _m: None
        )
        build = time.perf_counter() - t0
        if what == "round":
            sol = state.l1_master.solve(state.matrix(state.learners), len(state.learners))
            cand, _ = state.candidate(sol, state.learners)
        else:  # every original tree at its own weight: all pairs must be proved
            o = prep.original
            w = np.asarray(o.weights, float)
            cand, _ = fold(
                list(o.trees), w, o.base, o.classes, ["original"] * o.n_trees, o.n_features, 0
            )
        t1 = time.perf_counter()
        res = state.oracle.separate(
            ScoreModel.from_ensemble(cand),
            required_margin(cand),
            threads=2,
            budget=Budget.seconds(time_limit),
        )
        sep = time.perf_counter() - t1
        row |= {
            "status": "done" if all(r.status != "UNKNOWN" for r in res) else "time limit",
            "trees_after": cand.n_trees,
            "build_s": round(build, 3),
            "seconds": round(sep, 3),
            "pairs_proved": sum(r.status == "INFEASIBLE" for r in res),
            "pairs": len(res),
        }
    else:
        t0 = time.perf_counter()
        res = compress(prep.original, prep.X_train, ccfg)
        secs = time.perf_counter() - t0
        limited = secs >= time_limit * 0.98
        row |= {
            "status": res.status + (" (time limit)" if limited else ""),
            "trees_after": res.compressed.n_trees,
            "build_s": "",
            "seconds": round(secs, 3),
            "pairs_proved": sum(p.status == "INFEASIBLE" for p in res.proof),
            "pairs": len(res.proof),
        }
    row["peak_rss_mb"] = round(_rss_mb(), 1)
    return row


def run_point(dataset, trees, depth, what, time_limit, eta) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.scaling",
        "--one",
        f"{dataset},{trees},{depth},{what}",
        "--time-limit",
        str(time_limit),
        "--eta",
        str(eta),
    ]
    # generous wall cap: data preparation and model building are outside the limit
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=time_limit * 3 + 600, cwd=REPO)
    if p.returncode != 0:
        err = (p.stderr.strip().splitlines() or ["?"])[-1]
        return {
            "dataset": dataset,
            "trees": trees,
            "depth": depth,
            "what": what,
            "status": f"error: {err}",
        }
    return json.loads(p.stdout.strip().splitlines()[-1])


def render(rows: list[dict], command: str, started: str, wall: float) -> str:
    eta = rows[0].get("eta", "?") if rows else "?"
    lines = [
        f"# Scaling study (random forests, eta = {eta}, delta = 0, seed 0)",
        "",
        f"- command: `{command}`",
        f"- started (UTC): {started}; wall time {wall:.0f} s",
        "- each measurement in a fresh subprocess; peak RSS = the subprocess's ru_maxrss "
        "(Python, numpy, scikit-learn, onnxruntime and CP-SAT together); "
        "`rss after prepare` = the same process after training/exporting the forest, "
        "before any pace-cert work",
        "- `round`: one separation round (oracle build + CP-SAT on every label pair for the "
        "first L1 candidate); `proof`: one round whose candidate is the original itself "
        "(every pair must be proved INFEASIBLE); `prune`: a full `--mode prune` run under "
        "the time limit",
        "",
    ]
    for sweep in ("trees", "depth"):
        sel = [r for r in rows if r.get("sweep") == sweep]
        if not sel:
            continue
        lines += [f"## Sweep over {sweep}", ""]
        lines.append(
            harness.md_table(
                [head for head, _ in MD_COLUMNS],
                [[str(r.get(key, "")) for _, key in MD_COLUMNS] for r in sel],
            )
        )
        lines.append("")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for col, sweep in enumerate(("trees", "depth")):
        for what, style in (("round", "o-"), ("proof", "^-"), ("prune", "s--")):
            sel = [
                r
                for r in rows
                if r.get("sweep") == sweep and r.get("what") == what and r.get("seconds") != ""
            ]
            sel = [r for r in sel if "error" not in str(r.get("status"))]
            if not sel:
                continue
            x = [int(r[sweep]) for r in sel]
            axes[0, col].plot(x, [float(r["seconds"]) for r in sel], style, label=what)
            axes[1, col].plot(x, [float(r["peak_rss_mb"]) for r in sel], style, label=what)
        axes[0, col].set_title(f"time vs {sweep}")
        axes[1, col].set_title(f"peak RSS vs {sweep}")
        axes[0, col].set_ylabel("seconds")
        axes[1, col].set_ylabel("MiB")
        for r in (0, 1):
            axes[r, col].set_xlabel(sweep)
            axes[r, col].set_xscale("log" if sweep == "trees" else "linear")
            axes[r, col].set_yscale("log" if r == 0 else "linear")
            axes[r, col].legend()
            axes[r, col].grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="cancer")
    p.add_argument("--trees", default="25,50,100,200,500")
    p.add_argument("--depths", default="2,3,4,5,6,7")
    p.add_argument("--fixed-depth", type=int, default=3)
    p.add_argument("--fixed-trees", type=int, default=50)
    p.add_argument("--time-limit", type=float, default=120.0)
    p.add_argument(
        "--eta",
        type=float,
        default=0.1,
        help="confidence region (default 0.1; at eta = 0 a proof must exclude points whose "
        "margin lies between the two float32 guards, which measures that window, not size)",
    )
    p.add_argument("--what", default="round,proof,prune", help="comma list of round, proof, prune")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        ds, n, d, what = args.one.split(",")
        print(json.dumps(measure_one(ds, int(n), int(d), what, args.time_limit, args.eta)))
        return 0
    started = datetime.now(UTC).isoformat(timespec="seconds")
    command = harness.command_line("benchmarks.scaling", argv)
    whats = args.what.split(",")
    points = [("trees", int(n), args.fixed_depth) for n in args.trees.split(",")]
    points += [("depth", args.fixed_trees, int(d)) for d in args.depths.split(",")]
    rows: list[dict] = []
    t0 = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    for sweep, n, d in points:
        for what in whats:
            row = {"sweep": sweep} | run_point(args.dataset, n, d, what, args.time_limit, args.eta)
            rows.append(row)
            print(
                f"{sweep} n={n} d={d} {what}: {row.get('status')} "
                f"{row.get('seconds', '')} s, peak {row.get('peak_rss_mb', '')} MiB",
                flush=True,
            )
            with open(args.out / "scaling.csv", "w", newline="") as f:
                w = csv.DictWriter(f, FIELDS, extrasaction="ignore")
                w.writeheader()
                w.writerows(rows)
            wall = time.perf_counter() - t0
            (args.out / "scaling.md").write_text(render(rows, command, started, wall) + "\n")
    plot(rows, args.out / "scaling.png")
    print(f"wrote {args.out}/scaling.csv, scaling.md, scaling.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
