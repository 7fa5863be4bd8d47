"""Feature domain: per-feature threshold cells and float32 representatives.

For feature i with sorted distinct float32 thresholds theta_1 < ... < theta_m the
cells are

    cell 0 = (-inf, theta_1],  cell j = (theta_j, theta_{j+1}],  cell m = (theta_m, +inf)

(float32 values, NaN excluded). Every tree split ``x_i <= theta_j`` is constant on each
cell, so a cell-index vector determines every leaf. Representatives are built from the
thresholds themselves (SPEC §5): theta satisfies ``x <= theta``; the next float32 above
theta satisfies ``x > theta``. Never a float64 midpoint.

A feature may be restricted to {0, 1} (binary), to the integers (ordinal features such
as bin indices), and to a closed box [lo, hi]; cells that contain no allowed value are
removed from the domain. The representative of an integer feature's cell is the largest
float32 integer in it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from pace_cert.model.ensemble import LEAF, Tree, next_float32


@dataclass(frozen=True)
class FeatureDomain:
    """Cells per feature. Invariant: ``reps[i][k]`` lies in cell k of feature i and in
    the allowed set, or is NaN when cell k holds no allowed value."""

    thresholds: tuple[np.ndarray, ...]  # float32 sorted unique, per feature
    reps: tuple[np.ndarray, ...]  # float32 [m_i + 1], NaN where not allowed
    binary: np.ndarray  # bool [n_features]
    integer: np.ndarray  # bool [n_features]; binary features are not marked integer
    lower: np.ndarray | None  # float32 [n_features] or None (whole float32 line)
    upper: np.ndarray | None

    @property
    def n_features(self) -> int:
        return len(self.thresholds)

    def allowed(self, i: int) -> np.ndarray:
        """Boolean mask over the cells of feature i."""
        return ~np.isnan(self.reps[i])

    def n_cells(self) -> np.ndarray:
        return np.array([len(r) for r in self.reps])

    def cell_index(self, X: np.ndarray) -> np.ndarray:
        """Cell index per feature for float32 rows: int64 [n, n_features]."""
        X = np.asarray(X, np.float32)
        return np.stack(
            [np.searchsorted(th, X[:, i], side="left") for i, th in enumerate(self.thresholds)],
            axis=1,
        ).astype(np.int64)

    def representative(self, cells: np.ndarray) -> np.ndarray:
        """float32 point for a cell-index vector (raises if a cell is not allowed)."""
        return self.representatives(np.asarray(cells, np.int64)[None, :])[0]

    def representatives(self, cells: np.ndarray) -> np.ndarray:
        """float32 points [n, n_features] for cell-index rows [n, n_features] (raises if
        a cell is not allowed)."""
        cells = np.asarray(cells, np.int64)
        X = np.empty(cells.shape, np.float32)
        for i, reps in enumerate(self.reps):
            X[:, i] = reps[cells[:, i]]
        if np.isnan(X).any():
            raise ValueError("cell outside the allowed domain")
        return X

    def contains(self, X: np.ndarray) -> np.ndarray:
        """Whether float32 rows lie in the declared domain (binary, bounds, no NaN)."""
        X = np.asarray(X, np.float32)
        ok = ~np.isnan(X).any(axis=1)
        if self.binary.any():
            ok &= np.all((X[:, self.binary] == 0) | (X[:, self.binary] == 1), axis=1)
        if self.integer.any():
            Xi = X[:, self.integer]
            ok &= np.all(np.isfinite(Xi) & (Xi == np.round(Xi)), axis=1)
        if self.lower is not None and self.upper is not None:
            ok &= np.all((self.lower <= X) & (self.upper >= X), axis=1)
        return ok

    def describe(self) -> dict:
        """JSON-ready description for the certificate."""
        return {
            "value_type": "float32, NaN excluded",
            "binary_features": [int(i) for i in np.flatnonzero(self.binary)],
            "integer_features": [int(i) for i in np.flatnonzero(self.integer)],
            "bounds": None
            if self.lower is None
            else {"lower": [float(v) for v in self.lower], "upper": [float(v) for v in self.upper]},
            "cells_per_feature": [int(n) for n in self.n_cells()],
            "allowed_cells_per_feature": [
                int(self.allowed(i).sum()) for i in range(self.n_features)
            ],
        }


def collect_thresholds(trees: Iterable[Tree], n_features: int) -> list[np.ndarray]:
    """Sorted distinct float32 thresholds per feature over all given trees."""
    per: list[list[np.ndarray]] = [[] for _ in range(n_features)]
    for t in trees:
        internal = t.feature != LEAF
        for f in np.unique(t.feature[internal]):
            per[int(f)].append(t.threshold[internal & (t.feature == f)])
    return [
        np.unique(np.concatenate(p)).astype(np.float32) if p else np.zeros(0, np.float32)
        for p in per
    ]


def _integer_reps(th: np.ndarray, lo: np.float32 | None, hi: np.float32 | None) -> np.ndarray:
    """Largest float32 integer of each cell (within [lo, hi]); NaN for cells without one.

    Every float32 of magnitude >= 2**24 is an integer, so cells out there always hold
    one; below it float32 represents every integer exactly."""
    m = len(th)
    reps = np.full(m + 1, np.nan, np.float32)
    lo_i = -np.inf if lo is None else np.ceil(np.float64(lo))
    hi_i = np.inf if hi is None else np.floor(np.float64(hi))
    for k in range(m + 1):
        limit = min(np.float64(th[k]) if k < m else np.inf, hi_i)
        if np.isinf(limit):  # the open last cell (th[-1], inf): the next integer above
            c = np.float32(np.floor(np.float64(th[-1])) + 1.0) if m else np.float32(0.0)
            if m and c <= th[-1]:
                c = next_float32(th[-1])
        else:
            c = np.float32(np.floor(limit))
            if c > limit:  # rounded up past the cell: the float32 just below is an integer
                c = np.nextafter(c, np.float32(-np.inf))
        low_excl = np.float64(th[k - 1]) if k > 0 else -np.inf
        if c > low_excl and c >= lo_i:
            reps[k] = c
    return reps


def _cell_reps(
    th: np.ndarray, binary: bool, lo: np.float32 | None, hi: np.float32 | None
) -> np.ndarray:
    m = len(th)
    reps = np.full(m + 1, np.nan, np.float32)
    if binary:
        for v in (np.float32(0.0), np.float32(1.0)):
            k = int(np.searchsorted(th, v, side="left"))
            if np.isnan(reps[k]):
                reps[k] = v
        return reps
    # upper end of each cell (inclusive) and exclusive lower end
    ups = [*list(th), np.float32(np.inf)]
    for k in range(m + 1):
        up = ups[k] if k < m else next_float32(th[-1]) if m else np.float32(0.0)
        low_excl = th[k - 1] if k > 0 else None
        if lo is not None and hi is not None:
            cand = min(ups[k], hi)  # largest allowed value in the cell
            if (low_excl is not None and not cand > low_excl) or cand < lo:
                continue
            up = np.float32(cand)
        reps[k] = up
    return reps


def build_domain(
    trees: Iterable[Tree],
    n_features: int,
    binary: np.ndarray | None = None,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
    integer: np.ndarray | None = None,
) -> FeatureDomain:
    """Cells from every tree's thresholds, restricted to binary or integer features and
    bounds."""
    th = collect_thresholds(trees, n_features)
    bin_mask = np.zeros(n_features, bool) if binary is None else np.asarray(binary, bool)
    int_mask = np.zeros(n_features, bool) if integer is None else np.asarray(integer, bool)
    int_mask = int_mask & ~bin_mask
    lo = None if lower is None else np.asarray(lower, np.float32)
    hi = None if upper is None else np.asarray(upper, np.float32)
    bound = [
        (None if lo is None else lo[i], None if hi is None else hi[i]) for i in range(n_features)
    ]
    reps = tuple(
        _integer_reps(th[i], *bound[i])
        if int_mask[i]
        else _cell_reps(th[i], bool(bin_mask[i]), *bound[i])
        for i in range(n_features)
    )
    for i, r in enumerate(reps):
        if np.isnan(r).all():
            raise ValueError(f"feature {i}: the domain restriction leaves no value")
    return FeatureDomain(tuple(th), reps, bin_mask, int_mask, lo, hi)


def infer_binary(X: np.ndarray) -> np.ndarray:
    """Features whose values are all in {0, 1}."""
    X = np.asarray(X)
    return np.all((X == 0) | (X == 1), axis=0)


def infer_integer(X: np.ndarray) -> np.ndarray:
    """Features whose training values are all integers (e.g. bin indices)."""
    X = np.asarray(X, np.float64)
    return np.all(np.isfinite(X) & (np.round(X) == X), axis=0)
