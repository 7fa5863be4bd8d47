"""What the oracle reasons about: affine class scores over trees, the region, and the
outcome of one separation problem."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np

from pace_cert.model.ensemble import Ensemble, FlatForest, Tree


@dataclass(frozen=True)
class ScoreModel:
    """Affine class scores over trees: S_k(x) = base_k + sum_j tables_j[leaf_j(x), k]."""

    trees: tuple[Tree, ...]
    tables: tuple[np.ndarray, ...]  # float64 [n_nodes, K]
    base: np.ndarray  # float64 [K]

    @classmethod
    def from_ensemble(cls, ens: Ensemble) -> ScoreModel:
        tables = tuple(w * t.value for w, t in zip(ens.weights, ens.trees))
        return cls(ens.trees, tables, ens.base.astype(np.float64))

    @classmethod
    def sum_of(cls, trees: Sequence[Tree]) -> ScoreModel:
        """The plain sum of the trees' leaf values, base 0: e.g. the plausibility
        forest's score A(x) (one output column)."""
        trees = tuple(trees)
        k = trees[0].value.shape[1] if trees else 1
        return cls(trees, tuple(t.value for t in trees), np.zeros(k))

    @cached_property
    def flat(self) -> FlatForest:
        """The trees stacked for evaluation (built once per model)."""
        return FlatForest.of(self.trees)

    def scores(self, X: np.ndarray) -> np.ndarray:
        """Float64 class scores [len(X), K] of float32 rows ``X`` (screening only)."""
        return self.flat.sums(self.tables, self.base, X)

    def exact_scores(self, leaves: list[int]) -> list[Fraction]:
        """Exact rational class scores given the leaf reached in each tree."""
        k = len(self.base)
        out = []
        for c in range(k):
            s = Fraction(float(self.base[c]))
            for tab, leaf in zip(self.tables, leaves):
                s += Fraction(float(tab[leaf, c]))
            out.append(s)
        return out


def gap(model: ScoreModel, X: np.ndarray, y0: np.ndarray) -> np.ndarray:
    """Per row: max over y != y0 of S_y(x) - S_y0(x) in float64 (a row separates the
    pair when this is >= -E)."""
    S = model.scores(X)
    own = S[np.arange(len(X)), y0]
    S[np.arange(len(X)), y0] = -np.inf
    return S.max(axis=1) - own


@dataclass(frozen=True)
class RegionSpec:
    """The searched region: original margin > ``margin`` (score units) and A >= delta_abs."""

    margin: float
    plausibility: ScoreModel | None = None
    delta_abs: float | None = None


@dataclass
class PairResult:
    """Outcome of one separation problem."""

    y0: int
    y: int
    status: str  # INFEASIBLE | FEASIBLE | UNKNOWN
    point: np.ndarray | None = None
    seconds: float = 0.0
    solve_seconds: float = 0.0  # inside CP-SAT (on the worker with the Ray backend)
    conflicts: int = 0
    branches: int = 0
    spurious: int = 0
    scale_exp: int = 0
    error_bound: float = 0.0  # E_cp of the separation condition, score units
    region_error_bound: float = 0.0
    extra: list[np.ndarray] = field(default_factory=list)  # more samples (``harvest``)
