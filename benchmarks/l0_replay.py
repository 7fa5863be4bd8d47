"""L0 masters side by side on the same row matrices: big-M MILP (gurobipy) vs the cover.

For each case (dataset, RF n_estimators x depth 2, eta = delta = 0.1, seed 0, prepared
as in ``harness.py``) a prune run with ``milp="gurobi"`` records every L0 MILP call of
its faithful loop (rows A, warm start, big-M, seconds, objective, optimal). Then the
same sequence of row matrices is solved again, in the same process, by one
:class:`pace_cert.l0_cover.L0Cover` kept across calls (its cuts carry over, as in the
driver), warm-started from the same support, with the same per-solve limit. The cover
is exact (no big-M); the MILP's optimum is over weights <= M only, so it can be larger.

    python benchmarks/l0_replay.py --time-limit 300 --out benchmarks/results/l0_replay.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness

from pace_cert.master.l0_bigm import gurobi_available, solve_l0_gurobi
from pace_cert.master.l0_cover import L0Cover
from pace_cert.master.rows import MasterSolution
from pace_cert.driver.runner import compress
from pace_cert.settings import CompressConfig

CASES = [("seeds", 25), ("cancer", 25), ("diabetes", 25)]


def record_milp_calls(ds: str, n: int, time_limit: float) -> tuple[list[dict], int]:
    """Every gurobipy L0 call of one prune run, and the certified size it returned."""
    prep = harness.prepare(harness.Config(ds, "rf", n, 2, "prune", 0.1, 0.1, 0))
    calls: list[dict] = []
    solve = solve_l0_gurobi

    def recorded(A: np.ndarray, n_learners: int, big_m: float, **kw) -> MasterSolution:
        t = time.perf_counter()
        s = solve(A, n_learners, big_m, **kw)
        calls.append(
            {
                "A": A.copy(),
                "n": n_learners,
                "warm": kw.get("warm"),
                "limit": kw.get("time_limit"),
                "seconds": time.perf_counter() - t,
                "objective": s.objective,
                "optimal": s.optimal,
            }
        )
        return s

    solve_l0_gurobi = recorded
    try:
        cfg = CompressConfig.of(mode="prune", eta=0.1, delta=0.1, time_limit=time_limit, milp="gurobi")
        res = compress(prep.original, prep.X_train, cfg)
    finally:
        solve_l0_gurobi = solve
    return calls, res.compressed.n_trees if res.certified else -1


def replay_cover(calls: list[dict], n_offsets: int) -> list[tuple[float, float, bool]]:
    """(seconds, objective, optimal) of one cover solving the recorded matrices in order."""
    if not calls:
        return []
    cover = L0Cover(calls[0]["n"], n_offsets, seed=0)
    out = []
    for c in calls:
        warm = c["warm"]
        ws = None if warm is None else np.flatnonzero(np.asarray(warm[: c["n"]]) > 0)
        limit = c["limit"] if c["limit"] is not None else 30.0
        t = time.perf_counter()
        s = cover.solve(c["A"], warm_support=ws, deadline=time.perf_counter() + limit)
        out.append((time.perf_counter() - t, s.objective, s.optimal))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--time-limit", type=float, default=300.0, help="seconds of the prune run")
    p.add_argument("--only", default="", help="substring of 'dataset-nN'")
    p.add_argument("--out", type=Path, default=None, help="write a Markdown report here")
    args = p.parse_args()
    if not gurobi_available():
        print("gurobipy is not installed: nothing to compare", file=sys.stderr)
        return 1
    lines = [
        "| case | L0 calls | rows (first → last) | MILP T (s) | cover T (s) "
        "| MILP/cover T | calls where the cover is smaller | equal | larger "
        "| MILP not optimal | cover not optimal |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    detail: list[str] = []
    for ds, n in CASES:
        name = f"{ds}-n{n}"
        if args.only not in name:
            continue
        calls, size = record_milp_calls(ds, n, args.time_limit)
        k = calls[0]["A"].shape[1] - calls[0]["n"] if calls else 0
        cov = replay_cover(calls, k)
        tm = sum(c["seconds"] for c in calls)
        tc = sum(r[0] for r in cov)
        smaller = sum(r[1] < c["objective"] - 0.5 for c, r in zip(calls, cov))
        larger = sum(r[1] > c["objective"] + 0.5 for c, r in zip(calls, cov))
        rows = f"{calls[0]['A'].shape[0]} → {calls[-1]['A'].shape[0]}" if calls else "-"
        ratio = f"{tm / tc:.1f}x" if tc > 0 else "-"
        lines.append(
            f"| {name} (prune run: {size} trees) | {len(calls)} | {rows} | {tm:.1f} | {tc:.1f} "
            f"| {ratio} | {smaller} | {len(calls) - smaller - larger} | {larger} "
            f"| {sum(not c['optimal'] for c in calls)} | {sum(not r[2] for r in cov)} |"
        )
        print(lines[-1], flush=True)
        detail += [f"\n### {name}\n", "| call | rows | MILP T | MILP S | cover T | cover S |"]
        detail.append("|---|---|---|---|---|---|")
        for i, (c, r) in enumerate(zip(calls, cov)):
            detail.append(
                f"| {i} | {c['A'].shape[0]} | {c['seconds']:.2f} | {c['objective']:.0f}"
                f"{'' if c['optimal'] else '*'} | {r[0]:.2f} | {r[1]:.0f}{'' if r[2] else '*'} |"
            )
    if args.out:
        head = harness.report_head(
            "L0 master: big-M MILP (gurobipy) vs the cover on the same rows",
            "l0_replay.py",
            [f"{k}: {v}" for k, v in harness.machine_info()],
            __doc__,
        )
        head[-1:-1] = ["S = support size; `*`: the solve hit its limit (not proved optimal)."]
        args.out.write_text("\n".join(head + lines + detail) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
