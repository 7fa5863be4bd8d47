"""Exact multipliers for a tie: a Farkas combination whose sums are 0 in rationals.

When a support S meets the region points only with a tie (the best margin on S is
exactly 0), the pruning-bound LP stops at eps = 0 and its float multipliers leave some
tree of S at +1e-12 when re-added exactly: the cut does not re-check. The tie itself is
exact, though: leaf values are float64 (dyadic rationals), so some walks' rational
weights put every tree of S at <= 0 exactly. This module finds such weights with a
small simplex in :class:`fractions.Fraction` over the walks the LP used, and writes them
as float weights that add up exactly: an integer weight N is split into 53-bit pieces,
each a float64 exactly, the same walk repeated once per piece (the checker adds every
combo row in rationals, so the pieces sum to N exactly). No certificate field changes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from pace_cert.cert.pruning_check import exact_coefficient

#: largest (walks x trees of S) system the exact simplex is run on
MAX_CELLS = 600
#: bits per float piece of an integer weight (float64 holds 53 exactly)
PIECE_BITS = 52


def nonnegative_solution(A: list[list[Fraction]], b: list[Fraction]) -> list[Fraction] | None:
    """Some x >= 0 with A x = b exactly, or None when there is none (phase one of the
    simplex on artificial variables, Bland's rule: it terminates)."""
    m, n = len(A), len(A[0]) if A else 0
    rows = []
    for i in range(m):
        sign = -1 if b[i] < 0 else 1
        art = [Fraction(int(j == i)) for j in range(m)]
        rows.append([sign * v for v in A[i]] + art + [sign * b[i]])
    basis = list(range(n, n + m))
    cost = [Fraction(0)] * n + [Fraction(1)] * m
    while True:
        reduced = [
            cost[j] - sum((cost[basis[i]] * rows[i][j] for i in range(m)), Fraction(0))
            for j in range(n + m)
        ]
        enter = next((j for j in range(n + m) if reduced[j] < 0), None)
        if enter is None:
            break
        ratios = [
            (rows[i][-1] / rows[i][enter], basis[i], i) for i in range(m) if rows[i][enter] > 0
        ]
        if not ratios:  # unbounded: cannot happen in phase one (the objective is >= 0)
            return None
        r = min(ratios)[2]
        piv = rows[r][enter]
        rows[r] = [v / piv for v in rows[r]]
        for i in range(m):
            if i != r and rows[i][enter] != 0:
                f = rows[i][enter]
                rows[i] = [a - f * c for a, c in zip(rows[i], rows[r])]
        basis[r] = enter
    if any(basis[i] >= n and rows[i][-1] != 0 for i in range(m)):
        return None
    x = [Fraction(0)] * n
    for i in range(m):
        if basis[i] < n:
            x[basis[i]] = rows[i][-1]
    return x


def float_pieces(n: int) -> list[float]:
    """Floats, each exact, that add up to the integer ``n >= 0`` (most significant
    first)."""
    out = []
    while n:
        shift = max(n.bit_length() - PIECE_BITS, 0)
        top = (n >> shift) << shift
        out.append(float(top))
        n -= top
    return out


def exact_tie_combos(
    H: np.ndarray, y0: np.ndarray, walks: Sequence[tuple[tuple, float]], support: np.ndarray
) -> tuple | None:
    """Combos (rows, float weight) over ``walks``' rows whose exact sums are <= 0 for
    every tree of ``support``, or None when the walks admit none (or the system is
    larger than ``MAX_CELLS``). Weights are scaled by a power of two to a largest
    piece of about 1 (exact)."""
    S = [int(t) for t in np.asarray(support).tolist()]
    uniq = list(dict.fromkeys(tuple(rows) for rows, _w in walks))
    m = len(uniq)
    if not m or m * max(len(S), 1) > MAX_CELLS:
        return None
    G = []
    for rows in uniq:
        table = np.array([[i, k, 1.0] for i, k in rows])
        col = [exact_coefficient(H, y0, table, t) for t in S]
        if any(v is None for v in col):
            return None
        G.append(col)
    # G^T lam + s = 0 (s >= 0), sum lam = 1
    A = [[G[w][j] for w in range(m)] + [Fraction(int(jj == j)) for jj in range(len(S))]
         for j in range(len(S))]  # fmt: skip
    A.append([Fraction(1)] * m + [Fraction(0)] * len(S))
    x = nonnegative_solution(A, [Fraction(0)] * len(S) + [Fraction(1)])
    if x is None:
        return None
    lam = x[:m]
    den = math.lcm(*(v.denominator for v in lam))
    ints = [int(v * den) for v in lam]
    top = max(ints).bit_length()
    if top > 900:  # pieces scaled by 2**-top would leave the normal floats
        return None
    combos = []
    for rows, n in zip(uniq, ints):
        for piece in float_pieces(n):
            combos.append((rows, math.ldexp(piece, -top)))
    return tuple(combos)
