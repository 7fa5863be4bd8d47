"""The integer scaling never shrinks the searched set (SPEC §5), at any magnitude."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from pace_cert.region.scaling import scale_condition


@pytest.mark.parametrize("magnitude", [1e-6, 1e-3, 1.0, 1e3, 1e6])
@pytest.mark.parametrize("strict", [True, False])
def test_superset_at_every_leaf_combination(magnitude, strict):
    rng = np.random.default_rng(int(magnitude * 1e6) % 1000)
    for _ in range(20):
        alphas = [rng.normal(scale=magnitude, size=rng.integers(2, 5)) for _ in range(4)]
        combos = list(itertools.product(*[range(len(a)) for a in alphas]))
        sums = [sum(Fraction(float(a[i])) for a, i in zip(alphas, c)) for c in combos]
        # thresholds right at achievable sums (ties) and in between
        for c in [*sums[:5], Fraction(0), sums[0] + Fraction(magnitude) / 10**7]:
            cond = scale_condition(alphas, c, strict)
            for combo, s in zip(combos, sums):
                real = s > c if strict else s >= c
                integer = sum(int(a[i]) for a, i in zip(cond.coefs, combo)) >= cond.rhs
                if real:
                    assert integer, "a point of the real set is missing from the integer set"
            # the slack is tiny relative to the coefficients
            assert cond.error_bound <= 4 * 2.0**-46 * sum(np.abs(a).max() for a in alphas)


def test_scale_is_a_power_of_two_and_fits_int64():
    alphas = [np.array([1e-6, -3e-7]), np.array([2e-6, 0.0])]
    cond = scale_condition(alphas, Fraction(0), True)
    assert sum(int(np.abs(a).max()) for a in cond.coefs) <= 2**48
    assert cond.scale_exp > 0
