"""Can one depth-2 tree be faithful? An exhaustive lower bound on enumerable regions.

For a model prepared as in ``harness.py`` (seed 0, RF depth 2), take every cell of the
domain that lies clearly inside the eta/delta region (``SeparationOracle._grid``: the
whole domain is enumerated, so this is exact up to the safety slack, which only drops
cells), label each with the original's prediction y0, and search every depth-2 tree
(root split, one split per child, thresholds at the cells' values) for the fewest
misclassified cells. A single tree predicts one label per leaf whatever its leaf values,
weight or class offsets, so a positive minimum proves that no one-tree model (original or
generated) is faithful on the region.

    python benchmarks/single_tree_bound.py compas 25          # eta = delta = 0.1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness

from pace_cert.pace import CompressConfig, Pace


def leaf_errors(y: np.ndarray, mask: np.ndarray, k: int) -> int:
    """Cells in ``mask`` not of its majority label."""
    return int(mask.sum() - np.bincount(y[mask], minlength=k).max()) if mask.any() else 0


def best_depth2_errors(X: np.ndarray, y: np.ndarray) -> tuple[int, tuple[int, float] | None]:
    """Fewest misclassified rows over all depth-2 trees; returns (errors, root split)."""
    k = int(y.max()) + 1
    cuts = [np.unique(X[:, f])[:-1] for f in range(X.shape[1])]

    def best_stump(mask: np.ndarray) -> int:
        best = leaf_errors(y, mask, k)
        for g, cs in enumerate(cuts):
            for c in cs:
                left = X[:, g] <= c
                best = min(best, leaf_errors(y, mask & left, k) + leaf_errors(y, mask & ~left, k))
        return best

    best: tuple[int, tuple[int, float] | None] = (best_stump(np.ones(len(y), bool)), None)
    for f, cs in enumerate(cuts):
        for c in cs:
            left = X[:, f] <= c
            e = best_stump(left) + best_stump(~left)
            if e < best[0]:
                best = (e, (f, float(c)))
    return best


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset")
    p.add_argument("n", type=int)
    p.add_argument("--eta", type=float, default=0.1)
    p.add_argument("--delta", type=float, default=0.1)
    a = p.parse_args()
    prep = harness.prepare(harness.Config(a.dataset, "rf", a.n, 2, "prune", a.eta, a.delta, 0))
    pace = Pace(prep.original, prep.X_train, CompressConfig(eta=a.eta, delta=a.delta))
    grid = pace.oracle._grid()
    if grid is None:
        print("domain too large to enumerate; no bound")
        return 1
    X, y = grid
    errors, root = best_depth2_errors(X, y)
    print(
        f"{a.dataset} RF{a.n} d2 eta={a.eta} delta={a.delta}: {len(X)} cells inside the "
        f"region (labels {np.bincount(y).tolist()}); best depth-2 tree misclassifies "
        f"{errors} (root split {root})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
