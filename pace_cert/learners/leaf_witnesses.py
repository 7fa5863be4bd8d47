"""Finding a leaf witness set (:mod:`pace_cert.region.leaf_witness`): region points
that no faithful decision tree can put two of in one leaf, so their number bounds the
leaves of every faithful tree.

Greedy over known region points (the run's samples, its separating samples, the
screening pool's points inside the region): a candidate joins the set when, for every
chosen point of its label, some known region point of another label lies in the
bounding box of the two (a separator). Points of different labels need none. The set
is maximal for the candidates tried, not maximum; every pair is re-checked by verify.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LeafWitnessSet:
    """``points`` float32 [k, d] with class indices ``labels`` [k]; ``separators``
    float32 [m, d]; ``pairs`` int64 [p, 3] rows (i, j, s), i < j of one label,
    separator s in their box. Invariant: every same-label pair has a row."""

    points: np.ndarray
    labels: np.ndarray
    separators: np.ndarray
    pairs: np.ndarray

    @property
    def bound(self) -> int:
        """Leaves every faithful decision tree has at least."""
        return len(self.points)


def find_leaf_witnesses(
    X: np.ndarray,
    y: np.ndarray,
    label_of: Callable[[np.ndarray], np.ndarray] | None = None,
    stop: Callable[[], bool] | None = None,
    max_points: int = 5000,
    max_tries: int = 2000,
    max_separators: int = 5000,
    seed: int = 0,
    mixes: int = 32,
) -> LeafWitnessSet:
    """A leaf witness set among the region points ``X`` (float32 [n, d], exactly inside
    the region) labelled ``y`` (the original's class indices). Separators come from
    ``X`` itself (at most ``max_separators`` of them, a seeded sample) and, where none
    lies in a pair's box, from ``mixes`` points of the box that take each feature from
    one of the two points (inside the domain when both are, since the domain is a
    product of per-feature sets), kept when ``label_of`` (the original's class index
    inside the region, -1 outside) gives them another label. Candidates in a seeded
    random order, until ``max_points`` are chosen, ``max_tries`` candidates (or every
    one) were tried, or ``stop()``."""
    X = np.asarray(X, np.float32)
    y = np.asarray(y, np.int64)
    rng = np.random.default_rng(seed)
    if len(X) == 0:
        return _empty(X.shape[1] if X.ndim == 2 else 0)
    pool = rng.permutation(len(X))[:max_separators]
    W, yW = X[pool], y[pool]  # the found mixes join as they turn up
    others: dict[int, np.ndarray] = {}  # per label, the pool's points of other labels
    chosen: list[int] = []
    by_label: dict[int, list[int]] = {}
    rows: list[tuple[int, int, np.ndarray]] = []  # (chosen i, chosen j, separator point)
    for c in rng.permutation(len(X))[:max_tries]:
        if len(chosen) >= max_points or (stop is not None and stop()):
            break
        label = int(y[c])
        same = by_label.get(label, [])
        if label not in others:
            others[label] = W[yW != label]
        S = X[[chosen[i] for i in same]]
        seps = _pool_separators(S, X[c], others[label])
        lacking = [k for k, v in enumerate(seps) if v is None]
        if lacking and label_of is not None:
            found = _mixed_separators(S[lacking], X[c], label, label_of, mixes, rng)
            if found is None:
                continue
            for k, (point, _lab) in zip(lacking, found):
                seps[k] = point
            W = np.vstack([W, [point for point, _ in found]])
            yW = np.concatenate([yW, [lab for _, lab in found]])
            others.clear()
        elif lacking:
            continue
        j = len(chosen)
        rows += [(i, j, sep) for i, sep in zip(same, seps)]
        chosen.append(int(c))
        by_label.setdefault(int(y[c]), []).append(j)
    if not rows:
        z = np.zeros((0, X.shape[1]), np.float32)
        return LeafWitnessSet(X[chosen], y[chosen], z, np.zeros((0, 3), np.int64))
    seps_all, index = np.unique(np.stack([r[2] for r in rows]), axis=0, return_inverse=True)
    pairs = np.array([(i, j, int(k)) for (i, j, _), k in zip(rows, index.ravel())], np.int64)
    return LeafWitnessSet(X[chosen], y[chosen], seps_all.astype(np.float32), pairs)


def _pool_separators(S: np.ndarray, c: np.ndarray, Wo: np.ndarray) -> list[np.ndarray | None]:
    """For each row of ``S``, a point of ``Wo`` (the pool's points of other labels)
    inside the bounding box of that row and ``c`` (None where there is none). Blocks of
    at most 2**24 booleans (memory bounded)."""
    out: list[np.ndarray | None] = [None] * len(S)
    if len(S) == 0 or len(Wo) == 0:
        return out
    size = max(1, (1 << 24) // max(1, Wo.size))
    for start in range(0, len(S), size):
        block = S[start : start + size]
        lo, hi = np.minimum(block, c), np.maximum(block, c)
        inside = ((Wo[None, :, :] >= lo[:, None, :]) & (Wo[None, :, :] <= hi[:, None, :])).all(
            axis=2
        )
        for k in np.flatnonzero(inside.any(axis=1)):
            out[start + int(k)] = Wo[int(inside[k].argmax())]
    return out


def _mixed_separators(
    S: np.ndarray,
    c: np.ndarray,
    label: int,
    label_of: Callable[[np.ndarray], np.ndarray],
    mixes: int,
    rng: np.random.Generator,
) -> list[tuple[np.ndarray, int]] | None:
    """For each row s of ``S``, a point taking each feature from s or ``c`` that lies in
    the region with a label other than ``label`` (and that label); None as soon as one
    row has none among its ``mixes`` tries."""
    d = len(c)
    masks = rng.random((len(S), mixes, d)) < 0.5
    Z = np.where(masks, c[None, None, :], S[:, None, :]).reshape(-1, d).astype(np.float32)
    got = label_of(Z).reshape(len(S), mixes)
    ok = (got >= 0) & (got != label)
    if not ok.any(axis=1).all():
        return None
    first = ok.argmax(axis=1)
    Z = Z.reshape(len(S), mixes, d)
    return [(Z[k, first[k]], int(got[k, first[k]])) for k in range(len(S))]


def _empty(d: int) -> LeafWitnessSet:
    z = np.zeros((0, d), np.float32)
    return LeafWitnessSet(z, np.zeros(0, np.int64), z, np.zeros((0, 3), np.int64))
