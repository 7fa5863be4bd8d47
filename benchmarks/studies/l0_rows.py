"""L0 masters on distinct vs minimal margin rows, on the rows real prune runs produce.

For each case (dataset, RF n_estimators x depth 2, eta = delta = 0.1, seed 0, prepared
as in the harness) the prune steps that produce L0 problems run within
``--time-limit``: the L1 loop on the original trees, then the L0 loop on them with the
driver's L0 master (:class:`pace_cert.driver.l0_master.L0Master`, which reduces each
matrix with ``minimal_rows``; no anytime fallbacks), the full margin matrix of every
call of the L0 master recorded as the faithful loop hands it over. Then, in the same
process, every recorded matrix is solved from scratch with each master (gurobipy's
big-M MILP when installed, and the cover, one kept across calls as in the driver) on
its distinct rows (``distinct_rows``, the driver before) and on its minimal rows (no
row another implies), the two in alternating order. Same per-solve limit, no warm
start. Reported: rows, seconds, and whether the optimal sizes agree (they must: the
feasible set is the same).

    python -m benchmarks.studies.l0_rows --time-limit 60 \
        --out benchmarks/results/studies/l0_rows.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from pace_cert.budget import Budget
from pace_cert.driver.l0_master import L0Master
from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.phases.l1 import l1_loop
from pace_cert.driver.result import Offer
from pace_cert.driver.state import RunState
from pace_cert.master.l0_bigm import gurobi_available, solve_l0_gurobi
from pace_cert.master.l0_cover import L0Cover
from pace_cert.master.l1 import solve_l1
from pace_cert.master.rows import MasterSolution, distinct_rows, minimal_rows
from pace_cert.settings import CompressConfig

CASES = [("seeds", 25), ("cancer", 25), ("diabetes", 25), ("diabetes", 50)]
SOLVE_LIMIT = 30.0  # seconds per replayed solve (the driver's l0_time_limit)


def record_calls(ds: str, n: int, time_limit: float) -> tuple[list[np.ndarray], int, int]:
    """The full margin matrix of every L0 master call of the L1 then L0 loops on one
    case, its learner count and the size of the smallest model they certified (-1:
    none)."""
    prep = harness.prepare(harness.Config(ds, "rf", n, 2, "prune", 0.1, 0.1, 0))
    cfg = CompressConfig.of(mode="prune", eta=0.1, delta=0.1, time_limit=time_limit)
    budget = Budget.seconds(time_limit)
    state = RunState.create(prep.original, prep.X_train, cfg, budget, lambda _m: None)
    T = prep.original.n_trees
    l1, sol = l1_loop(state, state.learners, budget)
    if not l1.certified or sol is None:
        return [], T, -1
    state.offer(Offer(l1, "l1"))
    master = L0Master(state, state.learners, sol.objective, np.r_[sol.weights, sol.offsets[1:]])
    seen: list[np.ndarray] = []

    def recorded(A: np.ndarray) -> MasterSolution:
        seen.append(A.copy())
        return master.solve(A, budget)

    state.offer(Offer(faithful_loop(state, "l0", recorded, state.learners, budget), "l0"))
    return seen, T, state.best_size() or -1


def timed(fn) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def replay(calls: list[np.ndarray], T: int, k: int) -> dict[str, list[tuple[float, float, bool]]]:
    """Per master and row set: (seconds, size, optimal) of every call, in call order."""
    out: dict[str, list[tuple[float, float, bool]]] = {}
    covers = {"distinct": L0Cover(T, k, seed=0), "minimal": L0Cover(T, k, seed=0)}
    for i, A in enumerate(calls):
        rows = {"distinct": distinct_rows(A), "minimal": minimal_rows(A, T)}
        big_m = 10.0 * solve_l1(A, T).objective
        order = ("distinct", "minimal") if i % 2 == 0 else ("minimal", "distinct")
        for name in order:
            R = rows[name]
            if gurobi_available():
                s, sol = timed(
                    lambda R=R, m=big_m: solve_l0_gurobi(R, T, m, time_limit=SOLVE_LIMIT)
                )
                out.setdefault(f"milp {name}", []).append((s, sol.objective, sol.optimal))
            b = Budget.seconds(SOLVE_LIMIT)
            s, sol = timed(lambda R=R, n=name, b=b: covers[n].solve(R, budget=b))
            out.setdefault(f"cover {name}", []).append((s, sol.objective, sol.optimal))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--time-limit", type=float, default=60.0, help="seconds for the L1 and L0 loops per case"
    )
    p.add_argument("--only", default="", help="substring of 'dataset-nN'")
    p.add_argument("--out", type=Path, default=None, help="write a Markdown report here")
    args = p.parse_args(argv)
    info = harness.machine_info()
    lines = [
        "| case | L0 calls | rows: all → distinct → minimal (last call) | master "
        "| T distinct (s) | T minimal (s) | ratio | sizes equal "
        "| not optimal (distinct / minimal) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for ds, n in CASES:
        name = f"{ds}-n{n}"
        if args.only not in name:
            continue
        calls, T, size = record_calls(ds, n, args.time_limit)
        if not calls:
            continue
        k = calls[0].shape[1] - T
        res = replay(calls, T, k)
        last = calls[-1]
        shape = f"{len(last)} → {len(distinct_rows(last))} → {len(minimal_rows(last, T))}"
        for solver in ("milp", "cover"):
            d, m = res.get(f"{solver} distinct"), res.get(f"{solver} minimal")
            if d is None or m is None:
                continue
            td, tm = sum(r[0] for r in d), sum(r[0] for r in m)
            both = [(a, b) for a, b in zip(d, m) if a[2] and b[2]]
            equal = sum(a[1] == b[1] for a, b in both)
            lines.append(
                f"| {name} (L1 + L0 loops: {size} trees) | {len(calls)} | {shape} | {solver} "
                f"| {td:.1f} | {tm:.1f} | {td / tm:.2f}x | {equal}/{len(both)} both optimal "
                f"| {sum(not r[2] for r in d)} / {sum(not r[2] for r in m)} |"
            )
            print(lines[-1], flush=True)
    if args.out:
        head = harness.report_head(
            "L0 masters on distinct vs minimal margin rows",
            "benchmarks.studies.l0_rows",
            [f"{k}: {v}" for k, v in info],
            __doc__,
            argv,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(head + lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
