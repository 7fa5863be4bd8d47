"""Which anytime fallback gives smaller certified models when the L0 loop does not converge?

On the real-valued Table-2 forests the L0 loop of a 100 s prune rarely certifies within
its share of the time (every optimal support of the samples is refuted in turn), so the
returned model comes from the fallback that follows it. This runs prune (random
forests, depth 2, eta = delta = 0.1, the harness's preprocessing) with
``CompressConfig.fallback`` = ``reweight`` (reweighted L1 only) beside ``grow``
(reweighted L1, then column growth from the L0 loop's last support,
``Pace.grow_phase``), alternating per case in one process, and reports the size of the
returned certified model, the phase that produced it and the wall time.

    python benchmarks/anytime_fallback.py --time-limit 100 --seeds 0,1,2 \\
        --case cancer:25 --case seeds:25 --case diabetes:50 \\
        --out benchmarks/results/anytime_fallback.md

Model seeds vary the forest (and its 80/20 split); ``compress`` always runs with seed 0.
Single 100 s runs swing by several trees on the same configuration, so compare means
over several seeds, not single cells.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness

from pace_cert.pace import CompressConfig, compress

FALLBACKS = ("reweight", "grow")


@dataclass
class Row:
    dataset: str
    n: int
    seed: int
    fallback: str
    size: int | None
    phase: str
    bound: int | None
    seconds: float


def run_case(dataset: str, n: int, seed: int, fallback: str, time_limit: float) -> Row:
    prep = harness.prepare(harness.Config(dataset, "rf", n, 2, "prune", 0.1, 0.1, seed))
    cc = CompressConfig(
        mode="prune", eta=0.1, delta=0.1, seed=0, threads=2, time_limit=time_limit,
        fallback=fallback,
    )  # fmt: skip
    t0 = time.perf_counter()
    res = compress(prep.original, prep.X_train, cc, None)
    seconds = time.perf_counter() - t0
    size = res.compressed.n_trees if res.certified and res.compressed is not None else None
    return Row(dataset, n, seed, fallback, size, res.phase, res.size_bound, seconds)


def report(rows: list[Row], args: argparse.Namespace, started: str, rev: str) -> str:
    cases = sorted({(r.dataset, r.n, r.seed) for r in rows}, key=lambda c: (c[0], c[1], c[2]))
    by = {(r.dataset, r.n, r.seed, r.fallback): r for r in rows}

    def cell(r: Row | None) -> str:
        if r is None:
            return "--"
        size = "not certified" if r.size is None else str(r.size)
        return f"{size} ({r.phase}; {r.seconds:.0f} s)"

    lines = [
        "# Anytime fallback after an unconverged L0 loop (`anytime_fallback.py`)",
        "",
        f"- command: `python benchmarks/anytime_fallback.py {' '.join(sys.argv[1:])}`",
        f"- date (UTC): {started} (pace_cert {rev})",
        f"- prune, random forests depth 2, eta = delta = 0.1; {args.time_limit:g} s per run, "
        "2 threads; fallbacks alternate per case",
        "",
        "Each cell: S (trees of the returned certified model), the phase that produced it, "
        "wall seconds. Phases: l1 (the L1 model), l0 (the L0 loop converged), "
        "l0-reweighted, l0-grow.",
        "",
        "| dataset | n | model seed | " + " | ".join(FALLBACKS) + " |",
        "|---|---|---|" + "---|" * len(FALLBACKS),
    ]
    for ds, n, seed in cases:
        cells = [cell(by.get((ds, n, seed, f))) for f in FALLBACKS]
        lines.append(f"| {ds} | {n} | {seed} | " + " | ".join(cells) + " |")
    lines.append("")
    for f in FALLBACKS:
        sizes = [r.size for r in rows if r.fallback == f and r.size is not None]
        if sizes:
            lines.append(f"- {f}: mean S {statistics.mean(sizes):.1f} over {len(sizes)} runs")
    big = 10**9  # an uncertified run counts as larger than any certified one
    pairs = [
        (by[(*c, "grow")].size or big, by[(*c, "reweight")].size or big)
        for c in cases
        if all((*c, f) in by for f in FALLBACKS)
    ]
    wins = sum(g < r for g, r in pairs)
    losses = sum(g > r for g, r in pairs)
    lines.append(f"- grow smaller on {wins} cases, larger on {losses}, of {len(pairs)}")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time-limit", type=float, default=100.0)
    ap.add_argument("--seeds", default="0,1,2", help="model seeds, comma-separated")
    ap.add_argument(
        "--case", action="append", default=[], help="DATASET:N (repeatable; default: "
        "cancer:25, seeds:25, diabetes:50)",
    )  # fmt: skip
    ap.add_argument("--out", type=Path, default=None, help="Markdown report (default: stdout)")
    args = ap.parse_args()
    cases = [(c.split(":")[0], int(c.split(":")[1])) for c in args.case] or [
        ("cancer", 25),
        ("seeds", 25),
        ("diabetes", 50),
    ]
    seeds = [int(s) for s in args.seeds.split(",")]
    rev = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    rows: list[Row] = []
    for seed in seeds:
        for ds, n in cases:
            order = FALLBACKS if (seed + n) % 2 == 0 else FALLBACKS[::-1]
            for f in order:
                r = run_case(ds, n, seed, f, args.time_limit)
                print(f"{ds} n{n} s{seed} {f}: {r.size} ({r.phase}, {r.seconds:.0f} s)", flush=True)
                rows.append(r)
                text = report(rows, args, started, rev)
                if args.out is not None:
                    args.out.write_text(text)
    if args.out is None:
        print(text)


if __name__ == "__main__":
    main()
