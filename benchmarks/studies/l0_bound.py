"""Lower bounds on prune-only sizes in our region, beside the paper's Table 2.

For each case (random forest, depth 2, eta = delta = 0.1, seed 0, the harness's
preprocessing) a prune run with ``--time-limit`` collects samples: the training rows in
the region and every separating sample the run found. The samples that lie in the
stated region (the exact masks the certificate's region uses: domain, original margin
> eta, plausibility >= delta_abs; CP-SAT samples may sit in the rounding slack just
outside and are dropped) are rows any faithful pruning must meet. The minimum number
of original trees whose weighted vote meets them all -- the L0 optimum on those rows,
solved by the cover of ``pace_cert/master/l0_cover.py`` without big-M -- is therefore
a lower bound on the size of every faithful pruning of the forest in this region,
whatever the algorithm. Where it exceeds the paper's prune-only S, the paper's size cannot be
reached by pruning in our region; the gap to our certified S is what our search
leaves on the table at the cap.

The bound rests on HiGHS' floating-point LP deciding that a support cannot meet the
rows with normalised margin above 1e-9 (``l0_cover.FEASIBLE_RHO``): a benchmark
statement, not a certificate.

    python -m benchmarks.studies.l0_bound --time-limit 100 --bound-limit 300 \
        --out benchmarks/results/studies/l0_bound.md
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks.harness import paper_values as pv
from pace_cert.budget import Budget
from pace_cert.driver.runner import compress
from pace_cert.learners.pool import leaf_values
from pace_cert.master.l0_cover import L0Cover
from pace_cert.master.rows import margin_rows
from pace_cert.region.masks import margin_mask, plausibility_mask
from pace_cert.settings import CompressConfig

CASES = [(ds, n) for ds in ("cancer", "diabetes", "seeds") for n in (25, 50, 100)]


@dataclass
class Bound:
    dataset: str
    n: int
    certified: int | None  # trees of the certified prune result (None: inconclusive)
    seconds: float  # of the prune run
    rows: int  # samples in the stated region used for the bound
    outside: int  # separating samples dropped (in the rounding slack, not the region)
    bound: int  # L0 lower bound on the rows
    optimal: bool  # the cover finished (else ``bound`` is its lower bound at the limit)
    bound_seconds: float


def region_rows(prep: harness.Prepared, res) -> tuple[np.ndarray, int]:
    """Training rows and separating samples that lie in the stated region, and how many
    separating samples were left out."""
    points = np.array([h.point for h in res.history], np.float32).reshape(-1, prep.X_train.shape[1])
    X = np.vstack([prep.X_train, points])
    inside = res.domain.contains(X) & margin_mask(prep.original, X, res.region.margin)
    if res.plausibility is not None:
        inside &= plausibility_mask(res.plausibility, X)
    outside = int((~inside[len(prep.X_train) :]).sum())
    return np.unique(X[inside], axis=0), outside


def lower_bound(original, X: np.ndarray, limit: float) -> tuple[int, bool, float]:
    """(L0 lower bound, proved optimal, seconds) on rows X labelled by the original."""
    y0 = original.predict_index(X)
    A = margin_rows(leaf_values(list(original.trees), X), y0)
    cover = L0Cover(original.n_trees, original.n_classes - 1, seed=0)
    t0 = time.perf_counter()
    sol = cover.solve(A, budget=Budget.seconds(limit, start=t0))
    seconds = time.perf_counter() - t0
    if sol.optimal:
        return round(sol.objective), True, seconds
    return int(cover.lb), False, seconds


def run_case(dataset: str, n: int, time_limit: float, bound_limit: float) -> Bound:
    cfg = harness.Config(dataset, "rf", n, 2, "prune", 0.1, 0.1, 0)
    prep = harness.prepare(cfg)
    cc = CompressConfig.of(mode="prune", eta=0.1, delta=0.1, time_limit=time_limit, threads=2)
    t0 = time.perf_counter()
    res = compress(prep.original, prep.X_train, cc)
    seconds = time.perf_counter() - t0
    X, outside = region_rows(prep, res)
    bound, optimal, bsec = lower_bound(prep.original, X, bound_limit)
    return Bound(
        dataset,
        n,
        res.compressed.n_trees if res.certified else None,
        seconds,
        len(X),
        outside,
        bound,
        optimal,
        bsec,
    )


def render(rows: list[Bound], command: str, time_limit: float) -> str:
    lines = [
        "# Lower bounds on prune-only sizes in our region (`l0_bound.py`)",
        "",
        f"- command: `{command}`",
        f"- date (UTC): {harness.now()}",
        "- random forests, depth 2, eta = delta = 0.1, seed 0, harness preprocessing; "
        f"prune runs capped at {time_limit:g} s",
        "",
        "`bound`: minimum number of original trees meeting every sample in the stated "
        "region that the run collected (L0 on those rows, exact cover; `>=` when the "
        "cover hit its limit and the value is its lower bound). No faithful pruning in "
        "this region is smaller. `ours`: the certified prune-only size at the cap.",
        "",
        "| dataset | n | ours S | T (s) | rows | outside | bound | bound T (s) "
        "| paper prune S | paper PACE S | paper prune reachable here? |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for b in rows:
        pp = pv.pruning_table("rf", b.dataset, b.n, "prune")
        pa = pv.pruning_table("rf", b.dataset, b.n, "pace")
        ps = None if pp is None else pp.S
        verdict = harness.paper_verdict(b.bound, pp)
        lines.append(
            f"| {b.dataset} | {b.n} | {b.certified if b.certified is not None else '—'} "
            f"| {b.seconds:.0f} | {b.rows} | {b.outside} "
            f"| {'' if b.optimal else '>= '}{b.bound} | {b.bound_seconds:.1f} "
            f"| {ps if ps is not None else '--'} | {pa.S if pa is not None else '--'} "
            f"| {verdict} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=100.0, help="prune run cap (s)")
    ap.add_argument("--bound-limit", type=float, default=300.0, help="cover cap (s)")
    ap.add_argument("--only", default=None, help="regex on 'dataset-n'")
    ap.add_argument("--out", type=Path, default=None, help="Markdown file to write")
    args = ap.parse_args(argv)
    rows = []
    for ds, n in harness.select_cases(CASES, args.only):
        b = run_case(ds, n, args.time_limit, args.bound_limit)
        print(
            f"{ds} n{n}: ours {b.certified} in {b.seconds:.0f} s; bound "
            f"{'' if b.optimal else '>= '}{b.bound} on {b.rows} rows "
            f"({b.outside} outside) in {b.bound_seconds:.1f} s",
            flush=True,
        )
        rows.append(b)
    command = harness.command_line("benchmarks.studies.l0_bound", argv)
    harness.emit_report(render(rows, command, args.time_limit), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
