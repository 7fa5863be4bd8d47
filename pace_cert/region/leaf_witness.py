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

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np


def same_label_pair_count(labels: Sequence) -> int:
    """How many pairs i < j of ``labels`` are equal: the pairs that need a separator."""
    return sum(n * (n - 1) // 2 for n in Counter(labels).values())


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
    ``in_region``: exact region membership (domain included). Memory and time grow with
    the certificate's numbers (p rows), never with the k (k - 1) / 2 pairs they cover:
    a pair is covered when its row is valid, and the valid distinct rows must be as
    many as the same-label pairs."""
    P = np.asarray(points, np.float32)
    S = np.asarray(separators, np.float32)
    pairs = np.asarray(pairs, np.int64).reshape(-1, 3)
    if len(P) == 0:
        return []
    if not (np.isfinite(P).all() and np.isfinite(S).all()):
        return ["a point or separator is not finite"]
    lab = np.asarray(list(labels), dtype=object)  # labels as given: no fixed-width text
    problems: list[str] = []
    bad = np.flatnonzero(np.asarray(predict(P), dtype=object) != lab)
    if len(bad):
        k = int(bad[0])
        problems.append(
            f"point {k}: the original labels it {predict(P[k : k + 1])[0]}, stated {lab[k]}"
        )
    outside = np.flatnonzero(~in_region(P))
    if len(outside):
        problems.append(f"point {int(outside[0])} is outside the region")
    if len(pairs) and (
        pairs.min() < 0 or pairs[:, :2].max() >= len(P) or pairs[:, 2].max() >= len(S)
    ):
        return [*problems, "a pair names a point or separator that does not exist"]
    i, j, s = pairs.T
    one_label = (i < j) & (lab[i] == lab[j])
    used = np.unique(s)
    s_inside = np.zeros(len(S), bool)
    s_label = np.empty(len(S), dtype=object)
    if len(used):
        s_inside[used] = in_region(S[used])
        s_label[used] = list(predict(S[used]))
    sep = S[s]
    in_box = ((sep >= np.minimum(P[i], P[j])) & (sep <= np.maximum(P[i], P[j]))).all(axis=1)
    failures = (
        (~one_label, "not two points of one label (i < j)"),
        (~in_box, "its separator is outside their bounding box"),
        (~s_inside[s], "its separator is outside the region"),
        (s_label[s] == lab[i], "the original labels its separator as the points"),
    )
    for fails, why in failures:
        for r in np.flatnonzero(fails)[:2]:
            problems.append(f"pair ({i[r]}, {j[r]}) with separator {s[r]}: {why}")
    if len(problems) == 0:  # every row valid: are all same-label pairs among them?
        covered = len(np.unique(pairs[:, :2], axis=0)) if len(pairs) else 0
        need = same_label_pair_count(lab)
        if covered < need:
            problems.append(
                f"{need - covered} of the {need} pairs of points that share a label have "
                "no separator"
            )
    return problems
