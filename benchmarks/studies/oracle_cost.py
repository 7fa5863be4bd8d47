"""What the plausibility forest costs one separation call, and what relaxing it gives.

On one Table 2 case (random forest, depth 2, eta = delta = 0.1, seed 0, the harness's
preprocessing) the L1 loop runs for ``--l1-seconds``; its last candidate is then
separated (every ordered label pair, the shipped race on ``--threads`` threads, no early
stop) ``--repeats`` times by oracles over three regions: the run's region (``full``),
the same region without the isolation-forest condition (``no-plausibility``: the cost
of everything else), and for each K of ``--keep`` a superset of the region that keeps
the K isolation trees with the widest leaf-value range and counts every other tree at
its largest value (``relaxed-K``; an INFEASIBLE there would be a proof for the region,
a point found there must still be checked). ``inside`` says, per pair answer with a
point, whether the point lies in the run's region (``+``) or not (``-``), by the
screen's float64 check.

    python -m benchmarks.studies.oracle_cost --case spambase-100 --l1-seconds 40 \\
        --out benchmarks/results/studies/oracle_cost.md
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from pace_cert.budget import Budget
from pace_cert.driver.phases.l1 import l1_loop
from pace_cert.driver.state import RunState
from pace_cert.oracle.cpsat import SeparationOracle
from pace_cert.oracle.score_model import RegionSpec, ScoreModel
from pace_cert.region.margins import required_margin
from pace_cert.settings import CompressConfig


def relaxed(region: RegionSpec, keep: int) -> RegionSpec:
    """``region`` with only the ``keep`` isolation trees of widest leaf range in its
    plausibility condition, the others counted at their largest leaf value: a superset
    of the region (``keep`` 0: no plausibility condition left at all)."""
    if keep == 0:
        return dataclasses.replace(region, plausibility=None, delta_abs=None)
    pl = region.plausibility
    leaves = [t.value[t.leaves, 0] for t in pl.trees]
    top = np.array([v.max() for v in leaves])
    width = top - np.array([v.min() for v in leaves])
    kept = np.sort(np.argsort(-width, kind="stable")[:keep])
    dropped = np.setdiff1d(np.arange(len(pl.trees)), kept)
    sub = dataclasses.replace(
        pl, trees=tuple(pl.trees[i] for i in kept), tables=tuple(pl.tables[i] for i in kept)
    )
    return dataclasses.replace(
        region, plausibility=sub, delta_abs=region.delta_abs - float(top[dropped].sum())
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", default="spambase-100", help="DATASET-N")
    p.add_argument("--l1-seconds", type=float, default=40.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--keep", default="10,25,50", help="isolation trees kept, comma-separated")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per separate()")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    ds, n = args.case.rsplit("-", 1)
    prep = harness.prepare(harness.Config(ds, "rf", int(n), 2, "prune", 0.1, 0.1, 0))
    cfg = CompressConfig.of(mode="prune", eta=0.1, delta=0.1, time_limit=args.l1_seconds)
    limit = Budget.seconds(args.l1_seconds + 60)
    state = RunState.create(prep.original, prep.X_train, cfg, limit, lambda _m: None)
    learners = list(state.original.trees)
    l1_loop(state, learners, Budget.seconds(args.l1_seconds))
    sol = state.l1_master.solve(state.matrix(learners), len(learners))
    cand, _ = state.candidate(sol, learners)
    sm, e_req = ScoreModel.from_ensemble(cand), required_margin(cand)
    region = state.region
    regions = {"full": region, "no-plausibility": relaxed(region, 0)}
    regions |= {f"relaxed-{k}": relaxed(region, int(k)) for k in args.keep.split(",") if k}
    pl = region.plausibility
    top = sum(float(t.value[t.leaves, 0].max()) for t in pl.trees)
    lines = [
        "| region | CP-SAT variables | run | statuses | seconds | inside |",
        "|---|---|---|---|---|---|",
    ]
    for name, reg in regions.items():
        oracle = SeparationOracle(
            state.domain, ScoreModel.from_ensemble(state.original), reg, hints=state.screen
        )
        size = len(oracle.model.proto.variables)
        for rep in range(args.repeats):
            oracle.seed = rep
            t = time.perf_counter()
            res = oracle.separate(
                sm, e_req, threads=args.threads, budget=Budget.seconds(args.time_limit)
            )
            dt = time.perf_counter() - t
            pts = [r.point for r in res if r.point is not None]
            inside = state.screen.inside_labels(np.array(pts)) if pts else np.zeros(0)
            marks = "".join("+" if v >= 0 else "-" for v in inside) or "."
            statuses = "".join(r.status[0] for r in res)
            row = f"| {name} | {size} | {rep} | {statuses} | {dt:.2f} | {marks} |"
            lines.append(row)
            print(row, flush=True)
    facts = [
        f"case: {args.case}, candidate: the L1 loop's after {args.l1_seconds:g} s "
        f"({cand.n_trees} of {state.original.n_trees} trees)",
        f"isolation forest: {len(pl.trees)} trees; delta_abs {region.delta_abs:.1f} of a "
        f"largest sum {top:.1f}",
        f"threads: {args.threads}; per-call limit {args.time_limit:g} s; statuses: one "
        "letter per ordered pair (I, F, U)",
    ]
    head = harness.report_head(
        "The plausibility forest's share of a separation call",
        "benchmarks.studies.oracle_cost",
        facts,
        __doc__,
        argv,
    )
    text = "\n".join(head + lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
