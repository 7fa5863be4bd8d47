"""How small can a faithful pruning be when every cell of the region is known?

Issue 52 asks for Table 2 sizes at most max(paper prune-only S, our pruning bound + 1).
On the bound's side the run's points are a sample of the region; this study removes the
sampling where the domain is small enough to enumerate (seeds: 7 features of 10 bins).
For one case (random forest, depth 2, eta = delta = 0.1, seed 0, the harness's
preprocessing):

1. every allowed cell of the run's feature domain is replayed (one representative
   float32 point a cell), and the cells inside the region are kept (the masks verify
   uses: the original's margin and the plausibility forest);
2. cells with the same leaf in every tree are one *pattern* (the trees cannot tell them
   apart); each pattern gives a margin row per other class, duplicates dropped;
3. an L0 MILP (gurobipy: min trees, weights in [0, 1], class offsets in [-1, 1], every
   active row met with margin ``EPS``) is solved by row generation: after each solve
   (``--solve-seconds``), the rows of *all* patterns its weights break are counted and
   the most violated ``--add`` join the MILP, until no row is broken, the MILP reaches
   ``--rows`` rows (gurobipy's size-limited licence) or ``--total`` seconds pass.

A support that meets every pattern is faithful on every cell of the region (up to the
floating-point margin ``EPS``: a benchmark statement, not a certificate). The MILP's
bound on a subset of rows bounds every faithful pruning from below (also floating
point, not re-checked). Between them lies the region's true minimum.

    python -m benchmarks.studies.region_enumeration --case seeds-50 \\
        --out benchmarks/results/studies/region_enumeration.md
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator

import numpy as np

from benchmarks import harness
from benchmarks.harness import paper_values as pv
from benchmarks.studies.pruning_bound import ROOT, header
from pace_cert.budget import Budget
from pace_cert.cert.pruning_check import leaf_table
from pace_cert.driver.state import RunState
from pace_cert.master.rows import distinct_rows, margin_rows
from pace_cert.model.ensemble import FlatForest
from pace_cert.region.masks import region_mask
from pace_cert.settings import CompressConfig

#: margin every active row must meet (weights in [0, 1])
EPS = 1e-5
#: cells replayed per chunk
CHUNK = 200_000


def table2_state(dataset: str, n: int) -> RunState:
    """The run state of a Table 2 forest (harness preprocessing, eta = delta = 0.1):
    its original, feature domain, region and training samples."""
    prep = harness.prepare(harness.Config(dataset, "rf", n, 2, "prune", 0.1, 0.1, 0))
    cfg = CompressConfig.of(mode="prune", eta=0.1, delta=0.1, time_limit=60, threads=1)
    return RunState.create(prep.original, prep.X_train, cfg, Budget.seconds(60), lambda _m: None)


def _axes(st: RunState) -> list[np.ndarray]:
    """Per feature, the indices of the cells its domain allows."""
    return [np.flatnonzero(st.domain.allowed(i)) for i in range(st.domain.n_features)]


def domain_cells(st: RunState) -> float:
    """How many cells the state's feature domain has."""
    return float(np.prod([float(len(a)) for a in _axes(st)]))


def region_chunks(st: RunState) -> Iterator[np.ndarray]:
    """Every domain cell's representative inside the region, ``CHUNK`` cells at a time
    (float32 [m, n_features] per chunk, cells in row-major order)."""
    dom, orig, axes = st.domain, st.original, _axes(st)
    shape = tuple(len(a) for a in axes)
    total = int(domain_cells(st))
    for start in range(0, total, CHUNK):
        idx = np.unravel_index(np.arange(start, min(total, start + CHUNK)), shape)
        X = dom.representatives(np.stack([a[i] for a, i in zip(axes, idx)], axis=1))
        yield X[region_mask(orig, st.region.margin, st.plausibility, X, dom)]


def region_patterns(dataset: str, n: int, max_cells: float):
    """(original, one float32 point per distinct leaf pattern of the region's cells,
    counts dict); None points when the domain has more than ``max_cells`` cells."""
    st = table2_state(dataset, n)
    orig = st.original
    total = domain_cells(st)
    counts = {"cells": total, "region cells": 0, "patterns": 0}
    if total > max_cells:
        return orig, None, counts
    forest, keys, points = FlatForest.of(orig.trees), [], []
    for X in region_chunks(st):
        counts["region cells"] += len(X)
        key = np.c_[forest.apply(X), orig.predict_index(X)].astype(np.int32)
        _u, first = np.unique(key, axis=0, return_index=True)
        keys.append(key[first])
        points.append(X[first])
    key, X = np.concatenate(keys), np.concatenate(points)
    _u, first = np.unique(key, axis=0, return_index=True)
    counts["patterns"] = len(first)
    return orig, X[np.sort(first)], counts


def margin_matrix(orig, X: np.ndarray) -> tuple[np.ndarray, int]:
    """Distinct margin rows of the points (:func:`pace_cert.master.rows.margin_rows`)
    with a column for every class offset, class 0's included (``margin_rows`` fixes it
    at 0; each row's offset part sums to 0, so its column is minus the others' sum), and
    the number of trees."""
    H = leaf_table(orig.trees, X)
    A = distinct_rows(margin_rows(H, orig.predict_index(X)))
    T = H.shape[1]
    return np.hstack([A[:, :T], -A[:, T:].sum(axis=1, keepdims=True), A[:, T:]]), T


def row_generation(M: np.ndarray, T: int, args) -> list[dict]:
    """The L0 MILP by row generation over every row of ``M``; one dict a solve."""
    import gurobipy as gp

    env = gp.Env(empty=True)
    env.setParam("OutputFlag", 0)
    env.start()
    m = gp.Model(env=env)
    m.Params.Threads, m.Params.TimeLimit, m.Params.MIPGap = 1, args.solve_seconds, 0.0
    m.Params.IntFeasTol, m.Params.Seed = 1e-9, 0
    K = M.shape[1] - T
    w = m.addMVar(T, lb=0.0, ub=1.0)
    beta = m.addMVar(K, lb=-1.0, ub=1.0)
    z = m.addMVar(T, vtype="B")
    m.addConstr(w <= z)
    m.setObjective(z.sum())
    rng = np.random.default_rng(0)
    n_active = 0

    def add(rows: np.ndarray) -> None:
        nonlocal n_active
        for r in rows:
            m.addConstr(M[r, :T] @ w + M[r, T:] @ beta >= EPS)
        n_active += len(rows)

    add(rng.choice(len(M), min(args.start, len(M)), replace=False))
    t0, trace = time.perf_counter(), []
    while time.perf_counter() - t0 < args.total:
        m.optimize()
        if m.SolCount == 0:
            break
        slack = M[:, :T] @ w.X + M[:, T:] @ beta.X
        bad = np.flatnonzero(slack < EPS / 2)
        trace.append({
            "support": round(m.ObjVal), "bound": int(np.ceil(m.ObjBound - 1e-6)),
            "optimal": m.Status == gp.GRB.OPTIMAL, "rows": n_active, "broken": len(bad),
            "s": time.perf_counter() - t0,
        })  # fmt: skip
        print(trace[-1], file=sys.stderr, flush=True)
        room = args.rows - n_active
        if not len(bad) or room <= 0:
            break
        add(bad[np.argsort(slack[bad])][: min(args.add, room)])
    return trace


def case_notes(dataset: str, n: int, counts: dict, n_rows: int, enum_s: float) -> list[str]:
    """The report lines on the case's enumeration and the paper's prune-only size."""
    paper = pv.pruning_table("rf", dataset, n, "prune")
    return [
        f"- domain cells {counts['cells']:.0f}, in the region {counts['region cells']}, "
        f"distinct leaf patterns {counts['patterns']}, margin rows {n_rows} "
        f"({enum_s:.0f} s, one thread)",
        f"- the paper's prune-only size: {paper.S if paper is not None else '--'}",
    ]


def write_report(path: str, lines: list[str]) -> None:
    """Write the markdown ``lines`` to ``path`` and print them."""
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", default="seeds-50", help="DATASET-N (a Table 2 forest)")
    ap.add_argument("--max-cells", type=float, default=2e7)
    ap.add_argument("--solve-seconds", type=float, default=60.0)
    ap.add_argument("--total", type=float, default=1200.0, help="seconds of row generation")
    ap.add_argument("--start", type=int, default=200, help="random rows to start from")
    ap.add_argument("--add", type=int, default=40, help="most broken rows added a round")
    ap.add_argument("--rows", type=int, default=1900, help="MILP rows at most")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    dataset, n = args.case.rsplit("-", 1)
    t0 = time.perf_counter()
    orig, X, counts = region_patterns(dataset, int(n), args.max_cells)
    enum_s = time.perf_counter() - t0
    M, T = margin_matrix(orig, X) if X is not None else (np.zeros((0, 0)), 0)
    lines = header(
        f"Every cell of the region: {args.case}",
        "python -m benchmarks.studies.region_enumeration " + " ".join(sys.argv[1:]),
        harness.git_revision(ROOT),
        [*case_notes(dataset, int(n), counts, len(M), enum_s),
         "- the MILP: gurobipy, one thread, seed 0 (the 2 threads above are not used here)"],
        ("solve", "support (trees)", "MILP bound", "optimal", "MILP rows",
         "rows of all patterns broken", "s"),
    )  # fmt: skip
    if X is not None:
        for i, r in enumerate(row_generation(M, T, args), 1):
            lines.append(
                f"| {i} | {r['support']} | {r['bound']} | {r['optimal']} | {r['rows']} | "
                f"{r['broken']} | {r['s']:.0f} |"
            )
    write_report(args.out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
