"""Side-by-side ratios for the two large-domain speed-ups, measured in one run.

    python -m benchmarks.studies.large_domain [--out benchmarks/results/studies]
        [--dataset cancer --n 25]

On a dataset whose cell domain is too large to enumerate (random forest, depth 2,
eta = delta = 0.1, seed 0, prepared as in the harness):

1. **Screening pool**: the L1 loop on the original trees until every pair is proved
   (``pace_cert.driver.phases.l1.l1_loop``), with the numpy pool screen (default) and
   without it (``pool_per_row=0``): wall seconds, rounds, CP-SAT rounds.
2. **L0 solvers**: the first L0 problem of the prune phase (the matrix after the L1
   loop, the L1 weights as warm start), solved by gurobipy's big-M MILP (when
   installed), HiGHS' big-M MILP and the cover (``pace_cert/master/l0_cover.py``):
   seconds and support.

Writes ``<out>/large_domain.md``.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks import harness
from pace_cert.budget import Budget
from pace_cert.driver.phases.l1 import l1_loop
from pace_cert.driver.state import RunState
from pace_cert.master.l0_bigm import (
    GUROBI_SIZE_LIMIT,
    gurobi_available,
    l0_size,
    solve_l0,
    solve_l0_gurobi,
)
from pace_cert.master.l0_cover import L0Cover
from pace_cert.master.rows import MasterSolution
from pace_cert.settings import CompressConfig


def l1_run(prep: harness.Prepared, pool_per_row: int, time_limit: float) -> dict:
    cfg = CompressConfig.of(
        mode="prune", eta=0.1, delta=0.1, time_limit=time_limit, pool_per_row=pool_per_row
    )
    lines: list[str] = []
    t0 = time.perf_counter()
    budget = Budget.seconds(time_limit, start=t0)
    state = RunState.create(prep.original, prep.X_train, cfg, budget, lines.append)
    res, sol = l1_loop(state, state.learners, budget)
    secs = time.perf_counter() - t0
    cpsat = sum("pairs proved" in s for s in lines)
    return {
        "secs": secs,
        "rounds": res.rounds,
        "cpsat": cpsat,
        "certified": res.certified,
        "trees": res.model.n_trees if res.model is not None else None,
        "state": state,
        "sol": sol,
    }


def l0_solves(state: RunState, sol: MasterSolution) -> list[tuple[str, float, int, bool]]:
    A = state.matrix(state.learners)
    T = len(state.learners)
    warm = np.r_[sol.weights, sol.offsets[1:]]
    big_m = state.cfg.tuning.master.kappa * sol.objective
    out = []
    if gurobi_available() and max(l0_size(A, T)) <= GUROBI_SIZE_LIMIT:
        t = time.perf_counter()
        s = solve_l0_gurobi(A, T, big_m, warm=warm, time_limit=300)
        out.append(("gurobipy big-M MILP", time.perf_counter() - t, int(s.objective), s.optimal))
    t = time.perf_counter()
    s = solve_l0(A, T, big_m, warm=warm, time_limit=300)
    out.append(("HiGHS big-M MILP", time.perf_counter() - t, int(s.objective), s.optimal))
    t = time.perf_counter()
    cover = L0Cover(T, state.original.n_classes - 1)
    cover.prefer(sol.weights)
    budget = Budget.seconds(300, start=t)
    s = cover.solve(A, warm_support=np.flatnonzero(sol.weights > 0), budget=budget)
    out.append(("cover (CP-SAT + LP cuts)", time.perf_counter() - t, int(s.objective), s.optimal))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=harness.STUDIES_OUT, help="results directory")
    ap.add_argument("--dataset", default="cancer")
    ap.add_argument("--n", type=int, default=25)
    ap.add_argument("--time-limit", type=float, default=300.0)
    args = ap.parse_args(argv)
    command = harness.command_line("benchmarks.studies.large_domain", argv)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    prep = harness.prepare(harness.Config(args.dataset, "rf", args.n, 2, "prune", 0.1, 0.1, 0))
    on = l1_run(prep, CompressConfig().tuning.search.pool_per_row, args.time_limit)
    off = l1_run(prep, 0, args.time_limit)
    solves = l0_solves(on["state"], on["sol"]) if on["certified"] else []
    case = f"rf-{args.dataset}-n{args.n}-d2, eta = delta = 0.1, seed 0"
    lines = [
        "# Large-domain speed-ups, side by side in one run",
        "",
        f"- command: `{command}`",
        f"- date (UTC): {started}",
        f"- case: {case}",
        "- machine: " + "; ".join(f"{k} {v}" for k, v in harness.machine_info()),
        "",
        "## Screening pool (L1 loop on the original trees until every pair is proved)",
        "",
        "| variant | certified | trees | rounds | CP-SAT rounds | T (s) |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in (("pool screen (default)", on), ("no pool (CP-SAT every round)", off)):
        lines.append(
            f"| {name} | {r['certified']} | {r['trees']} | {r['rounds']} | {r['cpsat']} "
            f"| {r['secs']:.1f} |"
        )
    lines += ["", f"ratio T(no pool) / T(pool): {off['secs'] / on['secs']:.2f}", ""]
    if solves:
        ref = solves[-1][1]
        lines += [
            "## First L0 problem after that L1 loop (same matrix, L1 weights as warm start)",
            "",
            "| solver | T (s) | support | optimal | T / T(cover) |",
            "|---|---|---|---|---|",
        ]
        for name, secs, k, opt in solves:
            lines.append(f"| {name} | {secs:.2f} | {k} | {opt} | {secs / ref:.2f} |")
        lines.append("")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "large_domain.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
