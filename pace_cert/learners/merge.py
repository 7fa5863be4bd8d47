"""Learners that share every split, merged into one tree without changing the model.

Two trees with the same splits (features, float32 thresholds, shape) send every input to
the same leaf position, so ``w_a * value_a + w_b * value_b`` in one tree of that shape
scores every input exactly as the pair does. Boosted stumps repeat splits often (an
AdaBoost of 50 stumps on the bundled datasets has 6 to 25 distinct ones; a random
forest of 50 stumps 8 to 21), so folding weights into leaf values merges them too: the
model to certify is that merged one (its float32 leaf values are what the oracle
checks and the ONNX writer writes), and its tree count is what the user gets.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pace_cert.model.ensemble import LEAF, Tree, structure_key


def group_by_structure(trees: Sequence[Tree]) -> list[list[int]]:
    """Indices of ``trees`` grouped by :func:`structure_key`; groups in order of their
    first member, members ascending. Every index is in exactly one group."""
    groups: dict[bytes, list[int]] = {}
    for i, tree in enumerate(trees):
        groups.setdefault(structure_key(tree), []).append(i)
    return list(groups.values())


def merged_leaf_values(
    trees: Sequence[Tree], weights: Sequence[float], group: list[int]
) -> np.ndarray:
    """sum_{i in group} weights[i] * trees[i].value (float64, [n_nodes, n_classes]),
    rounded once to float32 and with internal-node rows zeroed: the leaf values of the
    one tree that replaces the group."""
    first = trees[group[0]]
    v = np.zeros_like(first.value, dtype=np.float64)
    for i in group:
        v += float(weights[i]) * trees[i].value
    v = v.astype(np.float32).astype(np.float64)
    v[first.left != LEAF] = 0.0
    return v
