"""How small can a pruning be on what a run has seen? Paper Table 2's forests.

For each case (random forest, depth 2, eta = delta = 0.1, seed 0, the harness's
preprocessing, 2 threads): one prune run (``--time-limit``), then, on every region point
the run collected (training rows inside the region and every separating sample, by the
masks verify uses):

* ``L0 on the points``: the fewest trees some weighting of which meets every point, by
  the L0 cover (combinatorial Benders, no big-M), given ``--extra`` seconds: its value
  when proved optimal, else ">= its lower bound". A pruning faithful in the region meets
  every point, so this bounds every faithful pruning from below (the cover's LP verdicts
  are floating-point: a benchmark statement, not a certificate);
* ``checkable bound, long``: the certificate's pruning bound (Farkas cuts, CP-SAT
  hitting set; every cut passes the check verify runs) on the same points, given
  ``--extra`` seconds instead of the run's share;
* ``met on the points``: the fewest trees of a support the bound's loop showed (exactly)
  to meet every point (a greedy superset of a minimum hitting set, or the minimum
  itself): the minimum on the points lies between the bound and it. Far below the
  certified size, the search left trees the points allow; near it, the points do not.

Beside them the certified size, the bound the run's certificate states and the paper's
prune-only size: where the paper's size is below a bound proved on our points, it is
out of reach in our region.

    python -m benchmarks.studies.samples_minimum --time-limit 300 --extra 300 \\
        --only '^cancer-n50$' --out benchmarks/results/studies/samples_minimum.md
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import harness
from benchmarks.harness import paper_values as pv
from benchmarks.studies.pruning_bound import CASES, ROOT, header
from pace_cert.budget import Budget
from pace_cert.cert.pruning_check import leaf_table
from pace_cert.driver.runner import compress
from pace_cert.master.highs import OutOfTime
from pace_cert.master.l0_cover import L0Cover
from pace_cert.master.pruning_bound import prove_pruning_bound
from pace_cert.master.rows import margin_rows, minimal_rows
from pace_cert.region.masks import region_mask
from pace_cert.settings import CompressConfig


def region_points(res, prep) -> tuple[np.ndarray, np.ndarray]:
    """Every region point the run saw (float32) and the original's label index there."""
    found = [np.asarray(h.point, np.float32)[None] for h in res.history]
    X = np.vstack([prep.X_train.astype(np.float32), *found])
    inside = region_mask(prep.original, res.region.margin, res.plausibility, X, res.domain)
    X = np.unique(X[inside], axis=0)
    return X, prep.original.predict_index(X)


def run_case(dataset: str, n: int, time_limit: float, extra: float, keep: str = "") -> dict:
    cfg = harness.Config(dataset, "rf", n, 2, "prune", 0.1, 0.1, 0)
    prep = harness.prepare(cfg)
    cc = CompressConfig.of(mode="prune", eta=0.1, delta=0.1, time_limit=time_limit, threads=2)
    res = compress(prep.original, prep.X_train, cc)
    after = res.compressed.n_trees if res.certified else n
    X, y0 = region_points(res, prep)
    H = leaf_table(prep.original.trees, X)
    if keep:  # the points, for reruns of the bounds without the prune run
        np.savez(f"{keep}/{dataset}-n{n}.npz", H=H, y0=y0, after=after)
    rows = minimal_rows(margin_rows(H, y0), n)
    cover = L0Cover(n, prep.original.n_classes - 1, seed=0)
    t0 = time.perf_counter()
    try:
        sol = cover.solve(rows, budget=Budget.seconds(extra))
        l0 = f"{int(sol.objective)}" if sol.optimal else f">= {cover.lb}"
    except OutOfTime:  # an LP the cover needs did not finish: only its bound so far
        l0 = f">= {cover.lb}"
    cover_s = time.perf_counter() - t0
    long = prove_pruning_bound(H, y0, Budget.seconds(extra), stop_at=after, seed=0, threads=2)
    pb = res.pruning_bound
    return {
        "dataset": dataset, "n": n, "after": after, "phase": res.phase or "-",
        "bound": None if pb is None else pb.value, "points": len(X), "rows": len(rows),
        "l0": l0, "l0_s": round(cover_s, 1), "long": long.value,
        "long_cuts": len(long.cuts), "long_s": round(long.seconds, 1), "upper": long.upper,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(prog="python -m benchmarks.studies.samples_minimum")
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--extra", type=float, default=300.0, help="seconds for each bound")
    ap.add_argument("--only", default="", help="regex on 'dataset-nN'")
    ap.add_argument("--out", default=None)
    ap.add_argument("--keep", default="", help="directory for each case's points (.npz)")
    args = ap.parse_args(argv)
    command = "python -m benchmarks.studies.samples_minimum " + " ".join(argv)
    commit = harness.git_revision(ROOT)
    head = ["dataset", "n", "certified", "phase", "run's bound", "points", "rows",
            "L0 on the points", "L0 s", "checkable bound, long", "cuts", "bound s",
            "met on the points", "paper prune S"]  # fmt: skip
    notes = [f"- one prune run of `--time-limit {args.time_limit:g}` s, then each bound "
             f"given {args.extra:g} s on the run's region points"]  # fmt: skip
    lines = header("How small can a pruning be on the points a run saw?", command, commit,
                   notes, head)  # fmt: skip
    for ds, n in harness.select_cases(CASES, args.only):
        r = run_case(ds, n, args.time_limit, args.extra, args.keep)
        pp = pv.pruning_table("rf", ds, n, "prune")
        cells = [r["dataset"], r["n"], r["after"], r["phase"], r["bound"], r["points"],
                 r["rows"], r["l0"], r["l0_s"], r["long"], r["long_cuts"], r["long_s"],
                 r["upper"], "--" if pp is None else pp.S]  # fmt: skip
        lines.append("| " + " | ".join("-" if c is None else str(c) for c in cells) + " |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
