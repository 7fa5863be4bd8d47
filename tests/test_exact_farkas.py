"""Exact multipliers for a tie (``pace_cert.master.exact_farkas``).

The fixture is from a real run (diabetes RF 25, Table 2 protocol): five region points on
which the support [10, 11, 19, 22, 24] can meet the original's labels only with a tie.
HiGHS' multipliers for it do not re-check in rationals; the exact ones must, and the
check they pass is the one verify runs (``cut_problem``).
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

from pace_cert.cert.pruning_check import cut_problem, exact_coefficient, positive_trees
from pace_cert.master.exact_farkas import exact_tie_combos, float_pieces, nonnegative_solution

from .test_pruning_bound import strictly_feasible

FIXTURE = Path(__file__).parent / "data" / "pruning_tie.json"


def load_tie():
    d = json.loads(FIXTURE.read_text())
    walks = [(tuple(tuple(r) for r in rows), w) for rows, w in d["walks"]]
    return np.array(d["H"]), np.array(d["y0"]), np.array(d["support"]), walks


def test_the_fixture_is_a_tie_that_float_multipliers_cannot_prove():
    H, y0, S, walks = load_tie()
    assert not strictly_feasible(H, y0, tuple(S))  # SciPy: S cannot meet the points
    assert set(positive_trees(H, y0, walks)) & set(S.tolist())  # HiGHS' y does not re-check


def test_exact_multipliers_re_check_as_verify_does():
    H, y0, S, walks = load_tie()
    combos = exact_tie_combos(H, y0, walks, S)
    assert combos is not None
    keep = positive_trees(H, y0, combos)
    assert keep and not set(keep) & set(S.tolist())
    assert cut_problem(H, y0, keep, [(list(map(list, r)), w) for r, w in combos]) is None
    assert all(isinstance(w, float) and 0 < w <= 1 for _r, w in combos)
    # the tie is exact: some tree of S sums to exactly 0 (a float64 weight could not say it)
    table = np.array([[i, k, w] for rows, w in combos for i, k in rows])
    sums = [exact_coefficient(H, y0, table, int(t)) for t in S]
    assert all(v <= 0 for v in sums) and any(v == 0 for v in sums)
    assert len(combos) > len({r for r, _w in combos})  # a weight needed several pieces


def test_no_multipliers_when_the_support_meets_the_points():
    H, y0, _S, walks = load_tie()
    every = np.arange(H.shape[1])  # all 25 trees: the original meets its own points
    assert strictly_feasible(H, y0, tuple(every))
    assert exact_tie_combos(H, y0, walks, every) is None


@pytest.mark.parametrize("bits", [1, 52, 53, 54, 106, 107, 300])
def test_float_pieces_add_up_exactly(bits):
    rng = np.random.default_rng(bits)
    for _ in range(20):
        n = int(rng.integers(1, 2**31)) << max(bits - 31, 0) | int(rng.integers(0, 2**31))
        n = n % (1 << bits) or 1
        pieces = float_pieces(n)
        assert sum(Fraction(p) for p in pieces) == n
        assert all(Fraction(p) == int(p) for p in pieces)
    assert float_pieces(0) == []


def test_nonnegative_solution_agrees_with_scipy():
    rng = np.random.default_rng(0)
    found = missing = 0
    for _ in range(60):
        m, n = int(rng.integers(1, 4)), int(rng.integers(1, 6))
        A = rng.integers(-3, 4, size=(m, n))
        b = rng.integers(-3, 4, size=m)
        Af = [[Fraction(int(v)) for v in r] for r in A]
        x = nonnegative_solution(Af, [Fraction(int(v)) for v in b])
        res = linprog(np.zeros(n), A_eq=A, b_eq=b, bounds=[(0, None)] * n, method="highs")
        if x is None:
            missing += 1
            assert res.status == 2  # infeasible for SciPy too
        else:
            found += 1
            assert all(v >= 0 for v in x)
            assert all(sum(Fraction(int(a)) * v for a, v in zip(row, x)) == bi
                       for row, bi in zip(A, b))  # fmt: skip
    assert found and missing  # both branches exercised
