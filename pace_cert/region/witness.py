"""Boundary witnesses: a lower bound on the size of any faithful model, with evidence
anyone can re-check by running the original model.

A *boundary witness* is a pair of inputs (x, x') that

* are both in the region (domain, original margin > c_o, plausibility),
* differ in one feature i only, where x_i and x'_i are consecutive allowed values of
  feature i's domain cells (a < b, nothing allowed strictly between their cells), and
* get different labels from the original model.

Any faithful model g then labels x and x' differently, so some tree of g puts them in
different leaves: one of its internal nodes splits feature i at a threshold theta with
a <= theta < b. Witnesses on the same feature with different gaps (a, b) have disjoint
threshold intervals, so they need distinct internal nodes; a tree of depth <= d has at
most 2**d - 1 internal nodes. Hence

    trees(g) >= ceil(#gaps witnessed / (2**d - 1))

for every faithful model of trees of depth <= d, whatever its thresholds, leaf values
and weights (:func:`size_bound`). The bound needs no solver: the witnesses are found
by moving each sample one allowed cell along each feature (:func:`find_witnesses`).

The original's labels and region membership come from the IR (whose semantics match
onnxruntime, tested elsewhere) with the exact region masks of ``pace_cert/region/masks.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from pace_cert.model.ensemble import LEAF, Ensemble, Tree
from pace_cert.region.domain import FeatureDomain

MAX_WITNESSES = 2048  # kept per run: bounds the certificate's size (2 points each)


@dataclass(frozen=True)
class Witness:
    """x and x_next differ in ``feature`` only; x[feature] < x_next[feature] (found here:
    consecutive allowed values); the original labels them ``label`` and ``label_next``,
    which differ (class indices when found here; verify states them as label strings)."""

    feature: int
    x: np.ndarray  # float32 [n_features]
    x_next: np.ndarray  # float32 [n_features]
    label: int | str
    label_next: int | str


def unwitnessed_trees(trees: list[Tree], witnesses: Iterable[Witness]) -> list[int]:
    """Indices of the trees none of whose internal nodes separates a witness pair
    (feature ``f`` split at ``theta`` with ``x[f] <= theta < x_next[f]``). Dropping such
    trees keeps every witnessed label change splittable by the others; it says nothing
    about whether the rest can still be faithful (the oracle decides that)."""
    gaps: dict[int, list[tuple[float, float]]] = {}
    for w in witnesses:
        f = int(w.feature)
        gaps.setdefault(f, []).append((float(w.x[f]), float(w.x_next[f])))
    bounds = {f: np.array(g).T for f, g in gaps.items()}  # feature -> [lows, highs]

    def splits_a_gap(f: int, th: float) -> bool:
        return f in bounds and bool(np.any((bounds[f][0] <= th) & (th < bounds[f][1])))

    def splits_none(t: Tree) -> bool:
        internal = np.flatnonzero(t.left != LEAF)
        return not any(splits_a_gap(int(t.feature[j]), float(t.threshold[j])) for j in internal)

    return [i for i, t in enumerate(trees) if splits_none(t)]


def max_internal_nodes(depth: int) -> int:
    """Internal nodes of a full binary tree of this depth (0 for a single leaf)."""
    if depth < 0:
        raise ValueError("depth must be >= 0")
    return 2**depth - 1


def size_bound(n_gaps: int, depth: int) -> int:
    """Fewest trees of depth <= ``depth`` that can split ``n_gaps`` distinct gaps."""
    per_tree = max_internal_nodes(depth)
    if n_gaps == 0:
        return 0
    if per_tree == 0:
        raise ValueError("depth-0 trees cannot split any gap")
    return math.ceil(n_gaps / per_tree)


def find_witnesses(
    original: Ensemble,
    domain: FeatureDomain,
    X: np.ndarray,
    in_region: Callable[[np.ndarray], np.ndarray],
    known: dict[tuple[int, int], Witness] | None = None,
    limit: int | None = None,
) -> dict[tuple[int, int], Witness]:
    """Witnesses by gap ``(feature, cell of the lower value)``, one per gap.

    ``X``: float32 samples [n, n_features] (e.g. domain representatives of training rows
    and separating samples); each is moved to the next and the previous allowed cell
    of every feature (the cell's representative value). ``in_region`` maps float32 rows
    to a boolean mask (exact membership). ``known`` (updated in place and returned)
    holds witnesses found earlier; gaps already there are skipped. ``limit``: stop once
    that many are held (the bound then counts only those; it stays sound).
    """
    found: dict[tuple[int, int], Witness] = {} if known is None else known
    X = np.asarray(X, np.float32).reshape(-1, domain.n_features)
    if len(X) == 0 or (limit is not None and len(found) >= limit):
        return found
    X = X[domain.contains(X)]
    X = X[in_region(X)]
    if len(X) == 0:
        return found
    cells = domain.cell_index(X)
    y = original.predict_index(X)
    for i in range(domain.n_features):
        allowed = np.flatnonzero(domain.allowed(i))
        if len(allowed) < 2:
            continue
        pos = np.searchsorted(allowed, cells[:, i])
        present = (pos < len(allowed)) & (allowed[np.minimum(pos, len(allowed) - 1)] == cells[:, i])
        for step in (1, -1):
            q = pos + step
            ok = present & (q >= 0) & (q < len(allowed))
            idx = np.flatnonzero(ok)
            if len(idx) == 0:
                continue
            to = allowed[q[idx]]
            lower_cell = np.minimum(cells[idx, i], to)
            new = ~np.isin(lower_cell, [c for f, c in found if f == i])
            idx, to, lower_cell = idx[new], to[new], lower_cell[new]
            if len(idx) == 0:
                continue
            Xn = X[idx].copy()
            Xn[:, i] = domain.reps[i][to]
            yn = original.predict_index(Xn)
            diff = np.flatnonzero(yn != y[idx])
            if len(diff) == 0:
                continue
            inside = in_region(Xn[diff])
            for j in diff[inside]:
                key = (i, int(lower_cell[j]))
                if key in found:
                    continue
                if limit is not None and len(found) >= limit:
                    return found
                a, b = (X[idx[j]], Xn[j]) if step == 1 else (Xn[j], X[idx[j]])
                la, lb = (int(y[idx[j]]), int(yn[j])) if step == 1 else (int(yn[j]), int(y[idx[j]]))
                found[key] = Witness(i, a.copy(), b.copy(), la, lb)
    return found


def check_witnesses(
    witnesses: list[Witness],
    predict: Callable[[np.ndarray], np.ndarray],
    in_region: Callable[[np.ndarray], np.ndarray],
) -> list[str]:
    """Problems with ``witnesses`` as evidence (empty list: all sound). ``predict`` gives
    the original's labels in the witnesses' terms (e.g. onnxruntime's labels as strings),
    ``in_region`` exact region membership.
    Checks: one differing feature per pair, x below x_next there, both inside, labels
    as stated and different, and no two witnesses on one feature with overlapping
    threshold intervals [x_i, x_next_i)."""
    problems: list[str] = []
    if not witnesses:
        return problems
    A = np.array([w.x for w in witnesses], np.float32)
    B = np.array([w.x_next for w in witnesses], np.float32)
    ya, yb = predict(A), predict(B)
    ra, rb = in_region(A), in_region(B)
    spans: dict[int, list[tuple[float, float]]] = {}
    for k, w in enumerate(witnesses):
        differ = np.flatnonzero(A[k] != B[k])
        if len(differ) != 1 or int(differ[0]) != w.feature:
            problems.append(f"witness {k}: x and x_next must differ in feature {w.feature} only")
            continue
        lo, hi = float(A[k, w.feature]), float(B[k, w.feature])
        if not lo < hi:
            problems.append(f"witness {k}: x[{w.feature}] must be below x_next[{w.feature}]")
        if not (ra[k] and rb[k]):
            problems.append(f"witness {k}: a point is outside the region")
        if (ya[k], yb[k]) != (w.label, w.label_next) or w.label == w.label_next:
            problems.append(
                f"witness {k}: the original labels {ya[k]}/{yb[k]}, stated "
                f"{w.label}/{w.label_next} (they must differ)"
            )
        spans.setdefault(w.feature, []).append((lo, hi))
    for f, iv in spans.items():
        iv.sort()
        if any(iv[j + 1][0] < iv[j][1] for j in range(len(iv) - 1)):
            problems.append(f"feature {f}: two witnesses share threshold values")
    return problems
