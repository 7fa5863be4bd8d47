"""What does a local search reach when every cell of the region is known?

Companion of ``region_enumeration.py`` (same case, same enumeration of the region's
cells into leaf patterns and margin rows). Instead of an L0 MILP it runs the local
search a user would write with a perfect oracle:

1. *greedy backward removal*: from all trees, remove the tree whose removal keeps the
   largest normalised max-margin (weights summing to 1) over
   **every** region pattern, while that margin stays above ``RHO``;
2. *2-for-1 swaps*: from the greedy support, replace two trees by one outside tree
   whenever the max-margin over every pattern stays above ``RHO``; first improvement,
   until no swap improves.

Each max-margin LP (``solve_max_margin``, HiGHS; class 0's offset fixed at 0, the
others within its bound) runs on an *active set* of rows shared by every LP of
the search: rows any earlier solution came within its margin of are kept, violated rows
are added until the solution meets all rows. The final support meets every pattern of
the region with margin > ``RHO`` in float64: a benchmark statement (no CP-SAT proof, not
a certificate) that the region admits a pruning of that size, so the region's true
minimum lies between the certified pruning bound and it.

    python -m benchmarks.studies.region_local_search --case seeds-50 \\
        --out benchmarks/results/studies/region_local_search-seeds-50.md
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable

import numpy as np

from benchmarks import harness
from benchmarks.studies.pruning_bound import ROOT, header
from benchmarks.studies.region_enumeration import (
    case_notes,
    margin_matrix,
    region_patterns,
    write_report,
)
from pace_cert.master.max_margin import solve_max_margin

#: normalised margin a support must keep on every pattern (weights sum to 1)
RHO = 1e-7
#: rows added to the active set per round, at most
ADD = 300


class ActiveSet:
    """The rows of ``A`` (margin rows as :func:`pace_cert.master.rows.margin_rows` gives
    them: ``T`` tree columns, then the offsets of classes 1..K-1) the LPs have needed so
    far; ``rho(S)`` over all rows."""

    def __init__(self, A: np.ndarray, T: int, start: int = 500) -> None:
        self.A, self.T = A, T
        self.rows = np.argsort(A[:, :T].sum(axis=1))[: min(start, len(A))]
        self.lps = 0

    def rho(self, S: list[int]) -> float:
        """The normalised max-margin of support S over every row of ``A``
        (:func:`pace_cert.master.max_margin.solve_max_margin` on the active rows, rows
        the solution breaks added until it meets all)."""
        cols = [*S, *range(self.T, self.A.shape[1])]
        while True:
            self.lps += 1
            mm = solve_max_margin(self.A[np.ix_(self.rows, cols)], len(S))
            slack = self.A[:, cols] @ np.r_[mm.weights, mm.offsets[1:]]
            bad = np.setdiff1d(np.flatnonzero(slack < mm.rho - 1e-6), self.rows)
            if len(bad) == 0:
                return mm.rho
            self.rows = np.union1d(self.rows, bad[np.argsort(slack[bad])][:ADD])


def greedy(rho: Callable[[list[int]], float], T: int, trace: list[dict], t0: float) -> list[int]:
    """Backward removal from all ``T`` trees (largest remaining margin first)."""
    S = list(range(T))
    while len(S) > 1:
        scored = sorted(((rho([u for u in S if u != t]), t) for t in S), reverse=True)
        if scored[0][0] <= RHO:
            break
        S.remove(scored[0][1])
        trace.append({"step": "removal", "trees": len(S), "rho": scored[0][0],
                      "s": time.perf_counter() - t0})  # fmt: skip
    return S


def swaps(
    rho: Callable[[list[int]], float], T: int, S: list[int], trace: list[dict], t0: float,
    seconds: float,
) -> tuple[list[int], bool]:  # fmt: skip
    """2-for-1 swaps from ``S`` (first improvement) until none keeps a margin, or
    ``seconds`` after ``t0``; (support, whether every swap of it was tried)."""
    improved = True
    while improved:
        improved = False
        out = [u for u in range(T) if u not in S]
        for a, b in itertools.combinations(S, 2):
            rest = [u for u in S if u not in (a, b)]
            if time.perf_counter() - t0 > seconds:
                return S, False
            for u in out:
                r = rho([*rest, u])
                if r > RHO:
                    S, improved = [*rest, u], True
                    trace.append({"step": "2-for-1 swap", "trees": len(S), "rho": r,
                                  "s": time.perf_counter() - t0})  # fmt: skip
                    break
            if improved:
                break
    return S, True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", default="seeds-50", help="DATASET-N (a Table 2 forest)")
    ap.add_argument("--max-cells", type=float, default=2e7)
    ap.add_argument("--seconds", type=float, default=1200.0,
                    help="search seconds after which no further swap is tried")  # fmt: skip
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    dataset, n = args.case.rsplit("-", 1)
    t0 = time.perf_counter()
    orig, X, counts = region_patterns(dataset, int(n), args.max_cells)
    if X is None:
        print(f"{args.case}: {counts['cells']:.0f} cells, beyond --max-cells", file=sys.stderr)
        return 3
    M, T = margin_matrix(orig, X)
    enum_s = time.perf_counter() - t0
    active, trace = ActiveSet(np.delete(M, T, axis=1), T), []
    t1 = time.perf_counter()
    S = greedy(active.rho, T, trace, t1)
    S, done = swaps(active.rho, T, S, trace, t1, args.seconds)
    lines = header(
        f"Local search over every cell of the region: {args.case}",
        "python -m benchmarks.studies.region_local_search " + " ".join(sys.argv[1:]),
        harness.git_revision(ROOT),
        [*case_notes(dataset, int(n), counts, len(M), enum_s),
         f"- **final support: {len(S)} trees** {sorted(S)}"
         + ("" if done else " (swaps stopped by --seconds, not all tried)")
         + f"; {active.lps} LPs, "
         f"{len(active.rows)} active rows of {len(M)}, "
         f"{time.perf_counter() - t1:.0f} s of search"],
        ("step", "trees", "normalised margin on every pattern", "s"),
    )  # fmt: skip
    for r in trace:
        if r["trees"] <= 30 or r["step"] != "removal":
            lines.append(f"| {r['step']} | {r['trees']} | {r['rho']:.3g} | {r['s']:.0f} |")
    write_report(args.out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
