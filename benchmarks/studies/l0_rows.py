"""L0 masters on distinct vs minimal margin rows, on the rows real prune runs produce.

For each case (dataset, RF n_estimators x depth 2, eta = delta = 0.1, seed 0, prepared
as in ``harness.py``) a prune run records the full margin matrix of every L0 master call
(the driver reduces it with ``minimal_rows``). Then, in the same process, every
recorded matrix is solved from scratch with each master (gurobipy's big-M MILP when
installed, and the cover, one kept across calls as in the driver) on its distinct rows
(``distinct_rows``, the driver before) and on its minimal rows (no row another
implies), the two in alternating order. Same per-solve limit, no warm start. Reported:
rows, seconds, and whether the optimal sizes agree (they must: the feasible set is the
same).

    python benchmarks/l0_rows.py --time-limit 60 --out benchmarks/results/l0_rows.md
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
from pace_cert.master.l1 import solve_l1
from pace_cert.master.rows import distinct_rows, minimal_rows
from pace_cert.driver.runner import compress
from pace_cert.settings import CompressConfig

CASES = [("seeds", 25), ("cancer", 25), ("diabetes", 25), ("diabetes", 50)]
SOLVE_LIMIT = 30.0  # seconds per replayed solve (the driver's l0_time_limit)


def record_calls(ds: str, n: int, time_limit: float) -> tuple[list[np.ndarray], int, int]:
    """The full margin matrix of every L0 master call of one prune run, its learner
    count and the certified size it returned (-1: none)."""
    prep = harness.prepare(harness.Config(ds, "rf", n, 2, "prune", 0.1, 0.1, 0))
    seen: list[np.ndarray] = []
    reduce = minimal_rows

    def recorded(A: np.ndarray, n_learners: int) -> np.ndarray:
        seen.append(A.copy())
        return reduce(A, n_learners)

    minimal_rows = recorded
    try:
        cfg = CompressConfig.of(mode="prune", eta=0.1, delta=0.1, time_limit=time_limit)
        res = compress(prep.original, prep.X_train, cfg)
    finally:
        minimal_rows = reduce
    return seen, prep.original.n_trees, res.compressed.n_trees if res.certified else -1


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
            dl = time.perf_counter() + SOLVE_LIMIT
            s, sol = timed(lambda R=R, n=name, dl=dl: covers[n].solve(R, deadline=dl))
            out.setdefault(f"cover {name}", []).append((s, sol.objective, sol.optimal))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds of each prune run")
    p.add_argument("--only", default="", help="substring of 'dataset-nN'")
    p.add_argument("--out", type=Path, default=None, help="write a Markdown report here")
    args = p.parse_args()
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
        shape = (
            f"{len(last)} → {len(distinct_rows(last))} → {len(minimal_rows(last, T))}"
        )
        for solver in ("milp", "cover"):
            d, m = res.get(f"{solver} distinct"), res.get(f"{solver} minimal")
            if d is None or m is None:
                continue
            td, tm = sum(r[0] for r in d), sum(r[0] for r in m)
            both = [(a, b) for a, b in zip(d, m) if a[2] and b[2]]
            equal = sum(a[1] == b[1] for a, b in both)
            lines.append(
                f"| {name} (prune: {size} trees) | {len(calls)} | {shape} | {solver} "
                f"| {td:.1f} | {tm:.1f} | {td / tm:.2f}x | {equal}/{len(both)} both optimal "
                f"| {sum(not r[2] for r in d)} / {sum(not r[2] for r in m)} |"
            )
            print(lines[-1], flush=True)
    if args.out:
        head = harness.report_head(
            "L0 masters on distinct vs minimal margin rows",
            "l0_rows.py",
            [f"{k}: {v}" for k, v in info],
            __doc__,
        )
        args.out.write_text("\n".join(head + lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
