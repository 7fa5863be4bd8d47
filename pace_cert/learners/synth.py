"""Small tree partitions by CP-SAT: k trees of depth <= 2 label-pure on the samples.

Any model made of k trees (whatever their leaf values, weights and class offsets)
predicts one label per cell of the trees' joint partition. So it can only be faithful on
the samples if that partition holds samples of one original label ``y0`` per cell.
:func:`synthesize` asks CP-SAT for such k trees, their splits chosen among the cuts that
separate the samples' domain cells:

* INFEASIBLE proves that no model of k trees of that depth meets the samples (any
  thresholds: a threshold acts on the samples only through which of them it separates,
  and every such split is a candidate). Every sample is inside the region the oracle
  searches, so no k-tree model is faithful there either: a lower bound on the size of
  any faithful model of the family. (Roots must split: a constant tree adds no cell,
  and if k - 1 trees were pure, any k-th tree would keep them pure, so the proof for
  k covers every smaller k too.)
* A solution gives k partitions; the driver fits their leaf values (the refit loop's
  max-margin LP, :mod:`pace_cert.refit`) and lets the oracle certify or refute them.

Model, per tree: one ExactlyOne over the candidate cuts at each of its 1 (depth 1) or
3 (depth 2) nodes; a child may also be "no split" (every sample goes left, i.e. a leaf).
Per sample and node a go-left literal equals the sum of the chosen cut's indicators for
the cuts the sample goes left of. Per cell of the joint partition (2^(depth·k) of them),
at most one label, and a clause per sample: "not in this cell, or the cell has my
label". Trees are ordered by their root cut (symmetry). Sizes: samples x 4^k clauses at
depth 2, so k stays small (at most 4 or 5).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from pace_cert.learners import refit
from pace_cert.model.ensemble import Tree


@dataclass(frozen=True)
class Cut:
    """Split "x[feature] <= thresholds[feature][cell]", i.e. domain cell index <= cell."""

    feature: int
    cell: int


# A tree's shape: root cut, then its left and right child's cuts (None: the child is a
# leaf). Depth-1 trees have (root, None, None).
Shape = tuple[Cut, Cut | None, Cut | None]


#: Largest model :func:`synthesize` builds, in "sample not in this cell or the cell has
#: its label" clauses (samples x cells of the joint partition). Building is not under
#: CP-SAT's time limit: 30 trees of depth 2 (a size bound from witnesses) would be
#: 4^30 cells, and a run grew to 5 GB here before its time limit killed it.
MAX_CLAUSES = 2_000_000


@dataclass(frozen=True)
class SynthResult:
    status: str  # "found" | "infeasible" (proved) | "unknown" (time limit) | "too-large"
    shapes: list[Shape]  # the k trees when found, ordered by root cut
    seconds: float  # wall time of the CP-SAT solve
    n_cuts: int  # candidate cuts (distinct splits of the samples)


def candidate_cuts(cells: np.ndarray) -> list[Cut]:
    """Every split of the samples by one feature: for each feature, the cuts between
    consecutive distinct cell indices of the samples (the lower one), one per distinct
    left set. ``cells``: [n, F] domain cell indices."""
    out: list[Cut] = []
    seen: set[bytes] = set()
    for f in range(cells.shape[1]):
        for j in np.unique(cells[:, f])[:-1]:
            key = (cells[:, f] <= j).tobytes()
            if key not in seen:
                seen.add(key)
                out.append(Cut(f, int(j)))
    return out


def synthesize(
    cells: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    n_trees: int,
    depth: int = 2,
    *,
    time_limit: float | None = None,
    threads: int = 2,
    seed: int = 0,
    exclude: list[list[Shape]] | tuple = (),
    hint: list[Shape] | None = None,
) -> SynthResult:
    """``n_trees`` trees of depth ``depth`` (1 or 2) whose joint partition holds one label
    ``y`` per cell on the samples (``cells`` [n, F] domain cell indices). ``exclude``:
    tree sets not to return again (as found earlier); ``hint``: a set to start from."""
    if depth not in (1, 2):
        raise ValueError("synthesize: depth must be 1 or 2")
    if n_trees < 1:
        raise ValueError("synthesize: n_trees must be >= 1")
    t0 = time.perf_counter()
    y = np.asarray(y, np.int64)
    n = len(y)
    cuts = candidate_cuts(cells)
    P = len(cuts)
    if n == 0 or len(np.unique(y)) <= 1:
        return SynthResult("found", [], 0.0, P)
    if P == 0:
        return SynthResult("infeasible", [], time.perf_counter() - t0, P)
    if n * (2**depth) ** n_trees > MAX_CLAUSES:  # not built: see MAX_CLAUSES
        return SynthResult("too-large", [], time.perf_counter() - t0, P)
    goes_left = np.stack([cells[:, c.feature] <= c.cell for c in cuts], axis=1)  # [n, P]
    status, shapes = _solve(
        goes_left, y, cuts, n_classes, n_trees, depth, time_limit, threads, seed, exclude, hint
    )
    return SynthResult(status, shapes, time.perf_counter() - t0, P)


def _solve(
    goes_left: np.ndarray,
    y: np.ndarray,
    cuts: list[Cut],
    n_classes: int,
    n_trees: int,
    depth: int,
    time_limit: float | None,
    threads: int,
    seed: int,
    exclude,
    hint: list[Shape] | None,
) -> tuple[str, list[Shape]]:
    """One CP-SAT solve on the rows given (``goes_left`` [n, P] over ``cuts``)."""
    n, P = goes_left.shape
    left_of = [np.flatnonzero(goes_left[i]) for i in range(n)]
    m = cp_model.CpModel()
    nodes = 1 if depth == 1 else 3
    choice: dict[tuple[int, int], list] = {}  # (tree, node) -> P cut literals (+ "no split")
    left: dict[tuple[int, int], list] = {}  # (tree, node) -> per sample "goes left"
    for t in range(n_trees):
        for nd in range(nodes):
            opts = [m.new_bool_var(f"cut_{t}_{nd}_{p}") for p in range(P + (nd > 0))]
            m.add_exactly_one(opts)
            choice[t, nd] = opts
            lits = []
            for i in range(n):
                g = m.new_bool_var(f"left_{t}_{nd}_{i}")
                terms = [opts[p] for p in left_of[i]] + ([opts[P]] if nd > 0 else [])
                m.add(g == cp_model.LinearExpr.sum(terms))
                lits.append(g)
            left[t, nd] = lits
        if t > 0:
            m.add(
                sum(p * choice[t - 1, 0][p] for p in range(P))
                <= sum(p * choice[t, 0][p] for p in range(P))
            )

    def away(t: int, leaf: int, i: int) -> list:
        """Literals of which one is true iff sample ``i`` is not in ``leaf`` of tree ``t``."""
        a = left[t, 0][i]
        if depth == 1:
            return [a.Not()] if leaf == 0 else [a]
        if leaf < 2:
            b = left[t, 1][i]
            return [a.Not(), b.Not()] if leaf == 0 else [a.Not(), b]
        c = left[t, 2][i]
        return [a, c.Not()] if leaf == 2 else [a, c]

    n_leaves = 2**depth
    outside = [[[away(t, leaf, i) for i in range(n)] for leaf in range(n_leaves)]
               for t in range(n_trees)]  # fmt: skip
    labels = [int(v) for v in y]
    for cell in itertools.product(range(n_leaves), repeat=n_trees):
        label = [m.new_bool_var("") for _ in range(n_classes)]
        m.add_at_most_one(label)
        parts = [outside[t][leaf] for t, leaf in enumerate(cell)]
        for i in range(n):
            m.add_bool_or([x for part in parts for x in part[i]] + [label[labels[i]]])

    index = {c: p for p, c in enumerate(cuts)}

    def literals(shapes: list[Shape]) -> list | None:
        out = []
        for t, shape in enumerate(shapes):
            for nd, c in enumerate(shape[:nodes]):
                p = P if c is None else index.get(c)
                if p is None or (nd == 0 and p == P):
                    return None
                out.append(choice[t, nd][p])
        return out

    for shapes in exclude:
        lits = literals(shapes) if len(shapes) == n_trees else None
        if lits is not None:
            m.add_bool_or([x.Not() for x in lits])
    if hint is not None and len(hint) == n_trees:
        for lit in literals(hint) or []:
            m.add_hint(lit, True)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = max(1, threads)
    solver.parameters.random_seed = seed
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = max(0.01, float(time_limit))
    status = solver.solve(m)
    if status == cp_model.INFEASIBLE:
        return "infeasible", []
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return "unknown", []
    shapes: list[Shape] = []
    for t in range(n_trees):
        picked = []
        for nd in range(nodes):
            p = next(p for p, v in enumerate(choice[t, nd]) if solver.boolean_value(v))
            picked.append(None if p == P else cuts[p])
        while len(picked) < 3:
            picked.append(None)
        shapes.append((picked[0], picked[1], picked[2]))
    return "found", shapes


def shape_tree(shape: Shape, thresholds: tuple[np.ndarray, ...], n_classes: int) -> Tree:
    """The tree of ``shape`` (leaf values 0, set later), thresholds from the domain."""

    def pair(c: Cut | None) -> tuple[int, int] | None:
        return None if c is None else (c.feature, c.cell)

    root, lo, hi = shape
    return refit.split_tree(pair(root), pair(lo), pair(hi), thresholds, n_classes)
