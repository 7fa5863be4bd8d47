"""Leaf witnesses: a lower bound on the leaves of any faithful single decision tree,
which verify re-checks by evaluating points (no solver, no trust in compress).

A *leaf witness set* is a list of region points p_1..p_k, each with the original's
label there, such that for every pair i < j with the same label a *separator* w_ij is
given: a region point inside the bounding box of p_i and p_j (``min(p_i, p_j) <= w <=
max(p_i, p_j)`` feature by feature) where the original predicts another label.

Claim: every decision tree faithful in the region has at least k leaves. A leaf of an
axis-aligned tree is a product of intervals (each split keeps ``x_f <= t`` or ``x_f >
t``, also with ``<``/``>=``), so a leaf holding p_i and p_j holds every point between
them, w_ij included. A faithful tree gives p_i, p_j and w_ij the original's labels, so
no leaf holds two points of different labels, nor two points of one label with a
separator; the k points lie in k different leaves. NaN is excluded from every region,
and float32 points compare as the reals they are, so the argument holds for the model
onnxruntime evaluates.

:func:`check_leaf_witnesses` re-checks a set from its numbers alone: every point and
separator inside the region (as the caller's ``in_region`` decides), the labels as the
caller's ``predict`` gives them, each same-label pair with a separator in its box. A
set that passes proves ``len(points)`` leaves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def same_label_pairs(labels: Sequence) -> list[tuple[int, int]]:
    """Every pair i < j of ``labels`` that are equal: the pairs that need a separator."""
    out = []
    by: dict = {}
    for i, v in enumerate(labels):
        by.setdefault(v, []).append(i)
    for idx in by.values():
        out += [(a, b) for n, a in enumerate(idx) for b in idx[n + 1 :]]
    return sorted(out)


def check_leaf_witnesses(
    points: np.ndarray,
    labels: Sequence,
    separators: np.ndarray,
    pairs: np.ndarray,
    predict: Callable[[np.ndarray], np.ndarray],
    in_region: Callable[[np.ndarray], np.ndarray],
) -> list[str]:
    """Problems with a leaf witness set as evidence (empty list: it proves
    ``len(points)`` leaves). ``points`` float32 [k, d] with ``labels`` (as ``predict``
    gives them), ``separators`` float32 [m, d], ``pairs`` int [p, 3] rows (i, j, s):
    separator s for points i < j of one label. ``predict``: the original's labels;
    ``in_region``: exact region membership (domain included)."""
    P = np.asarray(points, np.float32)
    S = np.asarray(separators, np.float32)
    pairs = np.asarray(pairs, np.int64).reshape(-1, 3)
    if len(P) == 0:
        return []
    problems: list[str] = []
    if not (np.isfinite(P).all() and np.isfinite(S).all()):
        return ["a point or separator is not finite"]
    got = predict(P)
    bad = [i for i in range(len(P)) if got[i] != labels[i]]
    if bad:
        problems.append(
            f"point {bad[0]}: the original labels it {got[bad[0]]}, stated {labels[bad[0]]}"
        )
    outside = np.flatnonzero(~in_region(P))
    if len(outside):
        problems.append(f"point {int(outside[0])} is outside the region")
    if len(pairs) and (
        pairs.min() < 0 or pairs[:, :2].max() >= len(P) or pairs[:, 2].max() >= len(S)
    ):
        return [*problems, "a pair names a point or separator that does not exist"]
    need = set(same_label_pairs(list(labels)))
    given = {(int(i), int(j)) for i, j, _ in pairs}
    missing = sorted(need - given)
    if missing:
        problems.append(
            f"points {missing[0][0]} and {missing[0][1]} share a label and no separator"
        )
    if len(pairs) == 0:
        return problems
    used = np.unique(pairs[:, 2])
    s_label = dict(zip(used.tolist(), predict(S[used])))
    s_inside = dict(zip(used.tolist(), in_region(S[used])))
    lo = np.minimum(P[pairs[:, 0]], P[pairs[:, 1]])
    hi = np.maximum(P[pairs[:, 0]], P[pairs[:, 1]])
    sep = S[pairs[:, 2]]
    in_box = ((sep >= lo) & (sep <= hi)).all(axis=1)
    for r, (i, j, s) in enumerate(pairs.tolist()):
        where = f"pair ({i}, {j})"
        if (i, j) not in need:
            problems.append(f"{where}: not two points of one label (i < j)")
        elif not in_box[r]:
            problems.append(f"{where}: separator {s} is outside their bounding box")
        elif not s_inside[s]:
            problems.append(f"{where}: separator {s} is outside the region")
        elif s_label[s] == labels[i]:
            problems.append(f"{where}: the original labels separator {s} as the points")
        if len(problems) >= 5:
            break
    return problems
