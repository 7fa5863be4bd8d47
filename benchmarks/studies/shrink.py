"""Side by side, with and without the shrink step: paper Table 2's forests.

For each case (random forest, depth 2, eta = delta = 0.1, seed 0, the harness's
preprocessing, 2 threads) two compress runs in this process, one after the other:
``shrink_rounds=0`` (no shrinking) and the default. The row gives each run's certified
size, the phase that found it and the checkable pruning bound its certificate states,
and the paper's prune-only size. Runs with 2 threads are not bit-for-bit repeatable,
so a difference of a tree or two can be noise; the phase column says whether shrinking
found the kept model.

    python -m benchmarks.studies.shrink --time-limit 100 \\
        --out benchmarks/results/studies/shrink.md
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from benchmarks import harness
from benchmarks.harness import paper_values as pv
from benchmarks.studies.pruning_bound import CASES, ROOT, run_case

VARIANTS = (("off", {"shrink_rounds": 0}), ("on", {}))


def render(rows: list[dict], command: str, commit: str) -> str:
    head = ("dataset", "n", "without shrink", "phase", "bound", "with shrink", "phase",
            "bound", "paper prune S")  # fmt: skip
    lines = [
        "# The shrink step, side by side (Table 2 forests)",
        "",
        f"- command: `{command}`",
        f"- commit: {commit}; date (UTC): {harness.now()}",
        "- random forests depth 2, eta = delta = 0.1, seed 0, harness preprocessing, 2 threads;"
        " the two runs of a row one after the other in one process",
        "",
        "`bound`: the pruning lower bound each run's certificate states (verify re-checks "
        "it); `phase`: the step whose model was kept (`l0-shrink`, `shrink`: found by "
        "shrinking).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in rows:
        pp = pv.pruning_table("rf", r["dataset"], r["n"], "prune")
        off, on = r["off"], r["on"]
        cells = [r["dataset"], r["n"], off["after"], off["phase"], off["bound"], on["after"],
                 on["phase"], on["bound"], "--" if pp is None else pp.S]  # fmt: skip
        lines.append("| " + " | ".join("-" if c is None else str(c) for c in cells) + " |")
    if rows:
        wins = sum(r["on"]["after"] < r["off"]["after"] for r in rows)
        losses = sum(r["on"]["after"] > r["off"]["after"] for r in rows)
        total = [sum(r[v]["after"] for r in rows) for v in ("off", "on")]
        lines += [
            "",
            f"Smaller with shrink: {wins} of {len(rows)}; larger: {losses}; trees in all: "
            f"{total[0]} without, {total[1]} with.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.studies.shrink")
    ap.add_argument("--time-limit", type=float, default=100.0)
    ap.add_argument("--mode", default="prune", choices=("prune", "pace"))
    ap.add_argument("--only", default=None, help="regex on 'dataset-nN'")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    command = "python -m benchmarks.studies.shrink " + " ".join(argv or [])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT).stdout.strip()  # fmt: skip
    rows = []
    for ds, n in harness.select_cases(CASES, args.only):
        row: dict = {"dataset": ds, "n": n}
        for name, tuning in VARIANTS:
            row[name] = run_case(ds, n, args.mode, args.time_limit, **tuning)
        rows.append(row)
        print(f"{ds} n{n}: {row['off']['after']} without shrink, {row['on']['after']} with "
              f"(bound {row['on']['bound']})", flush=True)  # fmt: skip
        if args.out is not None:
            args.out.write_text(render(rows, command.strip(), commit))
    print(render(rows, command.strip(), commit))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
