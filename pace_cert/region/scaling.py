"""Sound integer scaling of real-valued linear conditions for CP-SAT.

A condition over one leaf per tree, ``L(x) = sum_j alpha_j[leaf_j(x)]`` compared with a
constant c, is scaled by s = 2**p and rounded term by term:

    a_j = rint(s * alpha_j),   |a_j - s * alpha_j| <= 1   (rounding 1/2, float64 error
                                                           < 1/2 since |s alpha| <= 2**BITS)

so with n terms  |sum a_j - s L| <= n.  Hence

    L > c   implies   sum a >= floor(s c - n) + 1     (strict, superset)
    L >= c  implies   sum a >= ceil(s c - n)          (superset)

The integer constraint admits every x the real one admits (never fewer), which is the
direction a proof of infeasibility needs. The rounding bound in score units is
E = n / s; s is chosen relative to the coefficients' magnitude (sum of per-term maxima
maps to about 2**BITS), so 1e-6 weights scale as well as 1e3 weights. The right-hand
side is computed with exact rationals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

BITS = 48  # magnitude of the scaled sum; CP-SAT needs sums well inside int64


@dataclass(frozen=True)
class ScaledCondition:
    """``sum_j coefs[j][leaf_j] >= rhs`` over integer coefficients."""

    coefs: tuple[np.ndarray, ...]  # int64, one array per term (indexed like alpha_j)
    rhs: int
    scale_exp: int  # s = 2**scale_exp
    n_terms: int

    @property
    def error_bound(self) -> float:
        """E: bound on |sum a / s - L| in the condition's own (score) units."""
        return math.ldexp(self.n_terms, -self.scale_exp)


def scale_exponent(alphas: list[np.ndarray], bits: int = BITS) -> int:
    """p such that sum_j max|alpha_j| * 2**p lies in (2**(bits-1), 2**bits]."""
    total = float(sum(float(np.max(np.abs(a))) if a.size else 0.0 for a in alphas))
    if total == 0.0 or not math.isfinite(total):
        if not math.isfinite(total):
            raise ValueError("non-finite coefficients")
        return 0
    return bits - math.frexp(total)[1]


def scale_condition(
    alphas: list[np.ndarray], c: float | Fraction, strict: bool, bits: int = BITS
) -> ScaledCondition:
    """Superset integer encoding of ``sum_j alpha_j[leaf] > c`` (or ``>= c``)."""
    p = scale_exponent(alphas, bits)
    coefs = tuple(np.rint(np.ldexp(np.asarray(a, np.float64), p)).astype(np.int64) for a in alphas)
    n = len([a for a in alphas if a.size and np.any(a != 0)])
    target = Fraction(c) * (Fraction(2) ** p) - n
    rhs = math.floor(target) + 1 if strict else math.ceil(target)
    return ScaledCondition(coefs, rhs, p, n)


def exact_sum(values: list[float]) -> Fraction:
    """Exact rational sum of float64 values."""
    return sum((Fraction(v) for v in values), Fraction(0))
