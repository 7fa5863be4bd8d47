"""How the separation oracle spreads its threads over the label pairs, over seeds.

For each case (dataset, RF n_estimators x depth, eta = delta = 0.1; prepared as in
``harness.py``, seed 0) a fresh oracle separates the L1 loop's first candidate (weights
fitted to the training rows only: the first CP-SAT round, FEASIBLE pairs) once per
oracle seed and per schedule (``SeparationOracle.schedule``):

- ``race`` (shipped): one single-worker CP-SAT per pair, pairs at once; idle threads
  run other seeds on undecided pairs, and a pair stuck for a while gets one more;
- ``parallel``: pairs at once, ``threads // pairs`` workers each, one seed;
- ``sequential``: one pair after the other, every thread on it (CP-SAT's portfolio);
- ``race:L[,L...]``: ``race`` with the attempts' ``linearization_level`` cycling through
  these levels (shipped: ``oracle.RACE_LINEARIZATION_PLAUSIBLE`` here, as every case has
  a plausibility forest; ``race:1`` is the race before the LP portfolio).

A schedule may end in ``+KEY=VALUE`` settings as ``cpsat_params.py --variant`` takes
them, e.g. ``race:1+tree_sums=none+cp_model_presolve=True`` (the oracle before
per-tree plausibility sums and with CP-SAT's presolve).

Single-worker searches for a separating point have heavy-tailed times (seconds for
most seeds, minutes for some), which one run per setting cannot show.

    python benchmarks/pair_schedule.py --out benchmarks/results/pair_schedule.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness
from cpsat_params import parse_variant, set_race_linearization

from pace_cert.oracle import cpsat as oracle_mod
from pace_cert.settings import CompressConfig
from tests.helpers import run_state as Pace  # TODO(restructure)
from pace_cert.region.margins import required_margin

CASES = [("spambase", 50), ("spambase", 100), ("cancer", 25), ("diabetes", 50), ("seeds", 25)]
SCHEDULES = ("race", "parallel", "sequential")


def main() -> int:
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
    args = p.parse_args()
    sep = "/" if "/" in args.schedules or ":" in args.schedules else ","
    schedules = [x for x in args.schedules.split(sep) if x]
    lines = [
        "| case | schedule | per seed: statuses, seconds | total (s) | undecided pairs |",
        "|---|---|---|---|---|",
    ]
    totals = {s: 0.0 for s in schedules}
    shipped = dict(oracle_mod.CPSAT_PARAMS)
    for ds, n in CASES:
        name = f"{ds}-n{n}"
        if args.only not in name:
            continue
        prep = harness.prepare(harness.Config(ds, "rf", n, 2, "prune", 0.1, 0.1, 0))
        pace = Pace(prep.original, prep.X_train, CompressConfig.of(mode="prune", eta=0.1, delta=0.1))
        learners = list(prep.original.trees)
        sol = pace.l1_master.solve(pace.matrix(learners), len(learners))
        cand, _ = pace.candidate(sol, learners)
        sm = oracle_mod.ScoreModel.from_ensemble(cand)
        for sched in schedules:
            base, *settings = sched.split("+")
            pace.oracle.schedule, _, lin = base.partition(":")
            set_race_linearization(tuple(int(v) for v in lin.split(",")) if lin else None)
            var = parse_variant(";".join(settings))
            oracle_mod.CPSAT_PARAMS.clear()
            oracle_mod.CPSAT_PARAMS.update({**shipped, **var.params})
            pace.oracle.tree_sums = var.tree_sums
            cells, total, undecided = [], 0.0, 0
            for seed in range(args.seeds):
                pace.oracle.seed = seed
                t = time.perf_counter()
                res = pace.oracle.separate(
                    sm, required_margin(cand), threads=args.threads, time_limit=args.time_limit
                )
                dt = time.perf_counter() - t
                total += dt
                undecided += sum(r.status == "UNKNOWN" for r in res)
                cells.append(f"{''.join(r.status[0] for r in res)} {dt:.1f}")
            totals[sched] += total
            row = f"| {name} | {sched} | {' · '.join(cells)} | {total:.1f} | {undecided} |"
            lines.append(row)
            print(row, flush=True)
    oracle_mod.CPSAT_PARAMS.clear()
    oracle_mod.CPSAT_PARAMS.update(shipped)
    set_race_linearization(None)
    lines.append(
        "| **total** | | | " + " / ".join(f"{s} {totals[s]:.1f}" for s in schedules) + " | |"
    )
    print(lines[-1])
    if args.out:
        head = harness.report_head(
            "Pair schedules of the separation oracle",
            "pair_schedule.py",
            [f"threads: {args.threads}; per-call limit {args.time_limit} s (U: UNKNOWN at it)"],
            __doc__,
        )
        args.out.write_text("\n".join(head + lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
