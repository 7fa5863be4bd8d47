"""Exact membership in the stated faithfulness region, for many points at once.

Float64 decides clear cases; points within a tiny slack of a boundary are decided with
exact rationals, so membership never depends on float64 rounding.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from pace_cert.model.ensemble import Ensemble


def margin_mask(original: Ensemble, X: np.ndarray, c_o: float) -> np.ndarray:
    """Rows whose original margin (best class over every other) is > c_o."""
    from pace_cert.oracle.score_model import ScoreModel

    X = np.asarray(X, np.float32)
    if len(X) == 0:
        return np.zeros(0, bool)
    S = original.scores(X)
    y0 = np.argmax(S, axis=1)
    other = S.copy()
    other[np.arange(len(X)), y0] = -np.inf
    m = S[np.arange(len(X)), y0] - other.max(axis=1)
    slack = 1e-9 * (np.abs(S).max(axis=1) + 1.0) + 1e-12
    keep = m > c_o + slack
    borderline = np.flatnonzero((m > c_o - slack) & ~keep)
    if len(borderline):
        sm = ScoreModel.from_ensemble(original)
        leaves = original.apply(X[borderline])
        for r, lv in zip(borderline, leaves):
            sc = sm.exact_scores([int(v) for v in lv])
            j = max(range(len(sc)), key=lambda i: (sc[i], -i))
            keep[r] = all(sc[j] - sc[k] > Fraction(c_o) for k in range(len(sc)) if k != j)
    return keep


def plausibility_mask(forest, X: np.ndarray) -> np.ndarray:
    """Rows with A(x) >= delta_abs (exact near the threshold)."""
    from pace_cert.region.plausibility import plausibility_scores

    X = np.asarray(X, np.float32)
    A = plausibility_scores(forest, X)
    slack = 1e-9 * (np.abs(A) + 1.0)
    keep = forest.delta_abs + slack <= A
    for r in np.flatnonzero((forest.delta_abs - slack < A) & ~keep):
        total = sum(
            (Fraction(float(t.value[int(t.apply(X[r : r + 1])[0]), 0])) for t in forest.trees),
            Fraction(0),
        )
        keep[r] = total >= Fraction(forest.delta_abs)
    return keep


def region_mask(original: Ensemble, c_o: float, forest, X: np.ndarray, domain=None) -> np.ndarray:
    """Membership in domain ∩ {margin > c_o} ∩ {A >= delta_abs} (forest may be None)."""
    keep = margin_mask(original, X, c_o)
    if forest is not None:
        keep &= plausibility_mask(forest, X)
    if domain is not None:
        keep &= domain.contains(X)
    return keep


PROBE_MOVES = 4  # at most this many features of a probe point come from other rows


def probe_points(X: np.ndarray, n: int, seed: int, moves: int = PROBE_MOVES) -> np.ndarray:
    """``n`` float32 points near the rows ``X`` (shape (rows, features)), for replaying a
    certificate's claim where no data row lies: each is a random row of ``X`` with 1 to
    ``moves`` random features replaced by the same feature's value in other random rows.
    Every coordinate is a value that its feature takes in ``X``, so binary and integer
    features keep their kind. Deterministic for a given ``seed``; finds disagreements,
    proves nothing."""
    X = np.asarray(X, np.float32)
    if n <= 0 or len(X) == 0:
        return np.zeros((0, X.shape[1]), np.float32)
    rng = np.random.default_rng(seed)
    P = X[rng.integers(len(X), size=n)].copy()
    k = rng.integers(1, moves + 1, size=n)
    for j in range(moves):
        rows = np.flatnonzero(k > j)
        f = rng.integers(X.shape[1], size=len(rows))
        P[rows, f] = X[rng.integers(len(X), size=len(rows)), f]
    return P
