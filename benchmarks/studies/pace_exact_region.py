"""Does column generation pay off when the oracle is perfect?

PACE's generation (paper §3) prices depth-2 learners on the duals of the L1 LP and then
sparsifies the enriched pool. This study runs that recipe on a region small enough to
enumerate, so the oracle is exact and free: every LP is solved by row generation over
**every** region cell (a cell's representative is checked for each class pair).

1. *L1 column generation*: min sum w s.t. every region row has margin >= 1, w >= 0, over
   the original trees and the generated ones; each round adds the exact best depth-2
   learner (:func:`pace_cert.learners.pricing.exact_depth2`, one-hot leaves) while its
   reduced cost is negative, up to ``--max-generated`` learners.
2. *Greedy backward removal* from the final L1 support, and separately from the whole
   pool: drop the tree of smallest weight whose removal keeps a positive normalised
   max-margin (weights summing to 1) on every region row; repeat until none can go.

Sizes reached here are upper bounds on the smallest faithful model over the pool (a
float64 margin above ``RHO`` on every cell; no CP-SAT proof, not a certificate), found by
a local search: they say what the paper's recipe yields with a perfect oracle, to set
beside the certified pruning minimum of the same forest.

    python -m benchmarks.studies.pace_exact_region --case seeds-25 \\
        --out benchmarks/results/studies/pace_exact_region-seeds-25.md
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import dataclass, field

import highspy
import numpy as np
import scipy.sparse as sp

from benchmarks import harness
from benchmarks.studies.pruning_bound import ROOT, header
from benchmarks.studies.region_enumeration import (
    domain_cells,
    region_chunks,
    table2_state,
    write_report,
)
from pace_cert.learners.pricing import exact_depth2, gains
from pace_cert.model.ensemble import Tree

#: normalised margin (weights summing to 1) a support must keep on every region row
RHO = 1e-7
#: violated rows added per class pair and round, at most
ADD = 400


@dataclass
class Region:
    """Every region cell's representative ``X`` (float32 [N, F]) with the original's
    label ``y`` (int [N]); ``start``: indices of the cells holding the training rows;
    ``n_cells``: the domain's cells, inside the region or not; ``n_classes``: K."""

    X: np.ndarray
    y: np.ndarray
    start: np.ndarray
    n_cells: float
    n_classes: int


def enumerate_region(dataset: str, n: int, max_cells: float):
    """(original, feature domain, Region) of a Table 2 forest (harness preprocessing,
    eta = delta = 0.1); Region None when the domain has more than ``max_cells`` cells."""
    st = table2_state(dataset, n)
    dom, orig, total = st.domain, st.original, domain_cells(st)
    if total > max_cells:
        return orig, dom, None
    X = np.concatenate(list(region_chunks(st))).astype(np.float32)
    where = {c.tobytes(): i for i, c in enumerate(dom.cell_index(X))}
    start = [where.get(c.tobytes(), -1) for c in dom.cell_index(st.X)]
    start_arr = np.array(sorted({i for i in start if i >= 0}), np.int64)
    return orig, dom, Region(X, orig.predict_index(X), start_arr, total, orig.n_classes)


@dataclass
class Pool:
    """The learners (original first) with each one's leaf per region cell."""

    region: Region
    trees: list[Tree] = field(default_factory=list)
    generated: list[bool] = field(default_factory=list)
    leaf: list[np.ndarray] = field(default_factory=list)

    def add(self, tree: Tree, generated: bool) -> None:
        self.trees.append(tree)
        self.generated.append(generated)
        self.leaf.append(tree.apply(self.region.X).astype(np.int32))

    def column(self, t: int, ri: np.ndarray, rc: np.ndarray) -> np.ndarray:
        """Tree t's margin on rows (cell ri, other class rc): h_y(x) - h_c(x)."""
        v = self.trees[t].value[self.leaf[t][ri]]
        at = np.arange(len(ri))
        return v[at, self.region.y[ri]] - v[at, rc]

    def n_generated(self, cols: list[int]) -> int:
        return sum(self.generated[t] for t in cols)


class Rows:
    """The active rows (cell, other class) every LP of the study shares; rows a solution
    breaks anywhere in the region are added until it meets them all."""

    def __init__(self, pool: Pool) -> None:
        reg = pool.region
        k = reg.n_classes
        self.pool = pool
        self.others = np.array([[c for c in range(k) if c != y] for y in range(k)])
        self.ri = np.repeat(reg.start, k - 1)
        self.rc = self.others[reg.y[reg.start]].reshape(-1)

    def matrix(self, cols: list[int]) -> np.ndarray:
        return np.stack([self.pool.column(t, self.ri, self.rc) for t in cols], axis=1)

    def add_broken(self, w: np.ndarray, cols: list[int], below: float) -> bool:
        """Add the rows of every region cell whose margin under weights ``w`` (over
        ``cols``) is below ``below`` (the worst ``ADD`` per class pair); whether any."""
        reg, pool = self.pool.region, self.pool
        S = np.zeros((len(reg.y), reg.n_classes))
        for t in cols:
            if w[t] > 0:
                S += w[t] * pool.trees[t].value[pool.leaf[t]]
        at = np.arange(len(reg.y))
        sy, added = S[at, reg.y], False
        for j in range(reg.n_classes - 1):
            c = self.others[reg.y, j]
            m = sy - S[at, c]
            bad = np.flatnonzero(m < below)
            if len(bad):
                bad = bad[np.argsort(m[bad])[:ADD]]
                self.ri, self.rc = np.r_[self.ri, bad], np.r_[self.rc, c[bad]]
                added = True
        return added


def _highs_lp(A: sp.csc_matrix, cost, col_lo, col_hi, row_lo, row_hi):
    """Solve min cost.x s.t. row_lo <= A x <= row_hi, col_lo <= x <= col_hi with HiGHS
    (one thread); (primal x, row duals)."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = A.shape[1], A.shape[0]
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, col_lo, col_hi
    lp.row_lower_, lp.row_upper_ = row_lo, row_hi
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
    h.passModel(lp)
    h.run()
    sol = h.getSolution()
    return np.array(sol.col_value), np.array(sol.row_dual)


def l1(rows: Rows, cols: list[int]) -> tuple[np.ndarray, np.ndarray, float]:
    """The L1 LP over ``cols`` on every region row: (weights over the pool, duals of the
    active rows, objective)."""
    inf = highspy.kHighsInf
    while True:
        A = rows.matrix(cols)
        m, k = A.shape
        x, duals = _highs_lp(
            sp.csc_matrix(A), np.ones(k), np.zeros(k), np.full(k, inf), np.ones(m),
            np.full(m, inf),
        )  # fmt: skip
        w = np.zeros(len(rows.pool.trees))
        w[cols] = x
        if not rows.add_broken(w, cols, 1 - 1e-7):
            return w, duals, float(x.sum())


def max_margin(rows: Rows, cols: list[int]) -> tuple[float, np.ndarray | None]:
    """The largest normalised margin of ``cols`` (weights summing to 1) on every region
    row, and its weights over the pool (None when it is not above ``RHO``)."""
    inf = highspy.kHighsInf
    while True:
        A = rows.matrix(cols)
        m, k = A.shape
        M = sp.vstack([
            sp.hstack([sp.csr_matrix(A), sp.csr_matrix(-np.ones((m, 1)))]),
            sp.hstack([sp.csr_matrix(np.ones((1, k))), sp.csr_matrix((1, 1))]),
        ]).tocsc()  # fmt: skip
        x, _ = _highs_lp(
            M, np.r_[np.zeros(k), -1.0], np.r_[np.zeros(k), -inf], np.r_[np.ones(k), inf],
            np.r_[np.zeros(m), 1.0], np.r_[np.full(m, inf), 1.0],
        )  # fmt: skip
        rho = float(x[-1])
        if not rho > RHO:
            return rho, None
        w = np.zeros(len(rows.pool.trees))
        w[cols] = x[:k]
        if not rows.add_broken(w, cols, 0.5 * rho):
            return rho, w


def price(rows: Rows, duals: np.ndarray, dom) -> tuple[Tree | None, float]:
    """The exact best depth-2 learner on the L1 duals and its value (improving > 1)."""
    reg = rows.pool.region
    cells, inv = np.unique(rows.ri, return_inverse=True)
    V = np.zeros((len(cells), reg.n_classes))
    np.add.at(V, (inv, rows.rc), np.maximum(duals, 0))
    best = exact_depth2(reg.X[cells], gains(V, reg.y[cells]), dom)
    return (None, 0.0) if best is None else (best.tree, 1.0 - best.reduced_cost)


def _note(trace: list[dict], step: str, pool: Pool, S: list[int], value: float, t0: float):
    """One row of the report's table: ``S``'s size and generated share at a step."""
    trace.append({"step": step, "trees": len(S), "generated": pool.n_generated(S),
                  "value": value, "s": time.perf_counter() - t0})  # fmt: skip


def backward(rows: Rows, cols: list[int], trace: list[dict], label: str, t0: float) -> list[int]:
    """Greedy removal from ``cols``: the tree of smallest weight whose removal keeps a
    margin above ``RHO`` on every region row, until none can go."""
    rho, w = max_margin(rows, cols)
    if w is None:
        return cols
    cur, failed = list(cols), set()
    while True:
        if any(w[t] <= 0 for t in cur):  # trees without weight go at once: same margin
            cur = [t for t in cur if w[t] > 0]
            _note(trace, label + ", weightless trees", rows.pool, cur, rho, t0)
        for t in sorted((c for c in cur if c not in failed), key=lambda c: w[c]):
            rho_t, w_t = max_margin(rows, [u for u in cur if u != t])
            if w_t is not None:
                cur, w, rho, failed = [u for u in cur if u != t], w_t, rho_t, set()
                _note(trace, label, rows.pool, cur, rho, t0)
                break
            failed.add(t)
        else:
            return cur


def _first_swap(rows: Rows, S: list[int], deadline: float) -> tuple[list[int], float] | None:
    """The first 2-for-1 swap of ``S`` (two of its trees for one pool tree) that keeps a
    margin above ``RHO`` on every region row, with that margin; None when there is none
    or ``deadline`` (perf_counter seconds) passes first."""
    out = [u for u in range(len(rows.pool.trees)) if u not in S]
    for a, b in itertools.combinations(S, 2):
        rest = [u for u in S if u not in (a, b)]
        for u in out:
            if time.perf_counter() > deadline:
                return None
            rho, w = max_margin(rows, [*rest, u])
            if w is not None:
                return [*rest, u], rho
    return None


def swaps(
    rows: Rows, S: list[int], trace: list[dict], label: str, t0: float, seconds: float
) -> list[int]:
    """2-for-1 swaps from ``S`` (first improvement) until none keeps a margin, or
    ``seconds`` after ``t0``."""
    while len(S) > 2 and (swap := _first_swap(rows, S, t0 + seconds)) is not None:
        S, rho = swap
        _note(trace, label, rows.pool, S, rho, t0)
    return S


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", default="seeds-25", help="DATASET-N (a Table 2 forest)")
    ap.add_argument("--max-cells", type=float, default=2e7)
    ap.add_argument("--max-generated", type=int, default=200)
    ap.add_argument("--swap-seconds", type=float, default=600.0,
                    help="search seconds after which no further 2-for-1 swap is tried")  # fmt: skip
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    dataset, n = args.case.rsplit("-", 1)
    t0 = time.perf_counter()
    orig, dom, reg = enumerate_region(dataset, int(n), args.max_cells)
    if reg is None:
        print(f"{args.case}: more than --max-cells cells", file=sys.stderr)
        return 3
    enum_s = time.perf_counter() - t0
    pool = Pool(reg)
    for tree in orig.trees:
        pool.add(tree, False)
    rows, trace, t1 = Rows(pool), [], time.perf_counter()
    while True:
        cols = list(range(len(pool.trees)))
        w, duals, obj = l1(rows, cols)
        support = [t for t in cols if w[t] > 1e-9]
        tree, value = price(rows, duals, dom)
        _note(trace, "L1 column generation", pool, support, obj, t1)
        if tree is None or value <= 1 + 1e-6 or pool.n_generated(cols) >= args.max_generated:
            break
        pool.add(tree, True)
    gen_stop = "no improving learner" if tree is None or value <= 1 + 1e-6 else "--max-generated"
    best = backward(rows, support, trace, "backward (L1 support)", t1)
    found = {
        "the final L1 support": best,
        "the final L1 support, then 2-for-1 swaps over the pool": swaps(
            rows, best, trace, "2-for-1 swap", t1, time.perf_counter() - t1 + args.swap_seconds
        ),
        "the whole pool": backward(rows, cols, trace, "backward (pool)", t1),
        "the original trees": backward(
            rows, list(range(orig.n_trees)), trace, "backward (original)", t1
        ),
    }
    notes = [
        f"- region: {reg.n_cells:.0f} cells, {len(reg.y)} inside the region "
        f"({reg.n_classes} classes), enumerated in {enum_s:.0f} s; "
        f"{len(reg.start)} training cells start the active rows",
        f"- column generation: {pool.n_generated(cols)} learners generated ({gen_stop}); "
        f"last L1 objective {obj:.4g} (margin >= 1 per row; the original's trees score "
        f"1/{orig.n_trees} of a vote each, a generated one-hot learner 1)",
        "- HiGHS on one thread; the table shows every tenth column generation round",
        f"- {len(rows.ri)} active rows at the end; {time.perf_counter() - t1:.0f} s of search",
    ]
    notes += [
        f"- **{'' if 'swap' in k else 'greedy backward '}from {k}: {len(S)} trees, "
        f"{pool.n_generated(S)} generated**"
        for k, S in found.items()
    ]
    lines = header(
        f"Column generation with a perfect oracle: {args.case}",
        "python -m benchmarks.studies.pace_exact_region " + " ".join(sys.argv[1:]),
        harness.git_revision(ROOT),
        notes,
        ("step", "trees", "generated", "L1 objective / normalised margin", "s"),
    )
    gen_rows = [i for i, r in enumerate(trace) if r["step"] == "L1 column generation"]
    for i, r in enumerate(trace):
        if i in gen_rows and i % 10 and i != gen_rows[-1]:
            continue  # every tenth column generation round
        lines.append(
            f"| {r['step']} | {r['trees']} | {r['generated']} | {r['value']:.4g} | {r['s']:.0f} |"
        )
    write_report(args.out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
