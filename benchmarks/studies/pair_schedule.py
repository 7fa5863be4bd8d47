"""How the separation oracle spreads its threads over the label pairs, over seeds.

For each case (dataset, RF n_estimators x depth, eta = delta = 0.1; prepared as in the
harness, seed 0) a fresh oracle separates the L1 loop's first candidate (weights
fitted to the training rows only: the first CP-SAT round, FEASIBLE pairs) once per
oracle seed and per schedule (``OracleSettings.schedule``):

- ``race`` (shipped): one single-worker CP-SAT per pair, pairs at once; idle threads
  run other seeds on undecided pairs, and a pair stuck for a while gets one more;
- ``parallel``: pairs at once, ``threads // pairs`` workers each, one seed;
- ``sequential``: one pair after the other, every thread on it (CP-SAT's portfolio);
- ``race:L[,L...]``: ``race`` with the attempts' ``linearization_level`` cycling through
  these levels (shipped: ``OracleSettings.race_linearization_plausible`` here, as every
  case has a plausibility forest; ``race:1`` is the race before the LP portfolio).

A schedule may end in ``+KEY=VALUE`` settings as ``cpsat_params.py --variant`` takes
them, e.g. ``race:1+tree_sums=none+cp_model_presolve=True`` (the oracle before
per-tree plausibility sums and with CP-SAT's presolve).

Single-worker searches for a separating point have heavy-tailed times (seconds for
most seeds, minutes for some), which one run per setting cannot show.

    python -m benchmarks.studies.pair_schedule --out benchmarks/results/studies/pair_schedule.md
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from benchmarks import harness
from benchmarks.studies.cpsat_params import oracle_for, parse_variant
from pace_cert.budget import Budget
from pace_cert.driver.state import RunState
from pace_cert.oracle.score_model import ScoreModel
from pace_cert.region.margins import required_margin
from pace_cert.settings import CompressConfig

CASES = [("spambase", 50), ("spambase", 100), ("cancer", 25), ("diabetes", 50), ("seeds", 25)]
SCHEDULES = ("race", "parallel", "sequential")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5, help="oracle seeds 0..N-1 per schedule")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--time-limit", type=float, default=30.0, help="seconds per separate()")
    p.add_argument("--only", default="", help="substring of 'dataset-nN'")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument(
        "--schedules",
        default=",".join(SCHEDULES),
        help="schedules to run, separated by '/' or ',' (race:L,L takes '/' only), "
        "e.g. 'race/race:1'",
    )
    args = p.parse_args(argv)
    sep = "/" if "/" in args.schedules or ":" in args.schedules else ","
    schedules = [x for x in args.schedules.split(sep) if x]
    lines = [
        "| case | schedule | per seed: statuses, seconds | total (s) | undecided pairs |",
        "|---|---|---|---|---|",
    ]
    totals = {s: 0.0 for s in schedules}
    for ds, n in CASES:
        name = f"{ds}-n{n}"
        if args.only not in name:
            continue
        prep = harness.prepare(harness.Config(ds, "rf", n, 2, "prune", 0.1, 0.1, 0))
        cfg = CompressConfig.of(mode="prune", eta=0.1, delta=0.1)
        state = RunState.create(
            prep.original, prep.X_train, cfg, Budget.unlimited(), lambda _m: None
        )
        learners = list(prep.original.trees)
        sol = state.l1_master.solve(state.matrix(learners), len(learners))
        cand, _ = state.candidate(sol, learners)
        sm = ScoreModel.from_ensemble(cand)
        for sched in schedules:
            base, *extra = sched.split("+")
            schedule, _, lin = base.partition(":")
            var = dataclasses.replace(parse_variant(";".join(extra)), schedule=schedule)
            if lin:
                var.race_linearization = tuple(int(v) for v in lin.split(","))
            settings = var.settings()
            cells, total, undecided = [], 0.0, 0
            for seed in range(args.seeds):
                oracle = oracle_for(state, settings, seed)  # a fresh oracle per seed
                t = time.perf_counter()
                res = oracle.separate(
                    sm,
                    required_margin(cand),
                    threads=args.threads,
                    budget=Budget.seconds(args.time_limit),
                )
                dt = time.perf_counter() - t
                total += dt
                undecided += sum(r.status == "UNKNOWN" for r in res)
                cells.append(f"{''.join(r.status[0] for r in res)} {dt:.1f}")
            totals[sched] += total
            row = f"| {name} | {sched} | {' · '.join(cells)} | {total:.1f} | {undecided} |"
            lines.append(row)
            print(row, flush=True)
    lines.append(
        "| **total** | | | " + " / ".join(f"{s} {totals[s]:.1f}" for s in schedules) + " | |"
    )
    print(lines[-1])
    if args.out:
        head = harness.report_head(
            "Pair schedules of the separation oracle",
            "benchmarks.studies.pair_schedule",
            [f"threads: {args.threads}; per-call limit {args.time_limit} s (U: UNKNOWN at it)"],
            __doc__,
            argv,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(head + lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
