"""The driver's callbacks: ``on_improve`` sees the original first, then each smaller
certified model; ``on_bound`` each higher proved size lower bound; and a region holding
no training row is an :class:`EmptyRegion` error before any work."""

from __future__ import annotations

import numpy as np
import pytest

from pace_cert import zoo
from pace_cert.driver.runner import compress
from pace_cert.errors import EmptyRegion
from pace_cert.model.onnx_reader import ensemble_from_model
from pace_cert.settings import CompressConfig

from .helpers import small_problem


def _original(family: str, n: int, depth: int, seed: int = 1):
    X, y = small_problem(seed, n_features=3, n_rows=200)
    onx = zoo.export_onnx(zoo.make_model(family, n, depth, seed).fit(X, y), 3)
    return ensemble_from_model(onx)[0], X.astype(np.float32)


def test_callbacks_see_every_improvement_and_every_bound():
    original, X = _original("rf", 20, 2)
    seen, bounds = [], []
    res = compress(
        original, X, CompressConfig.of(mode="pace", seed=0), on_improve=seen.append,
        on_bound=bounds.append,
    )  # fmt: skip
    assert res.certified and res.smaller
    assert not seen[0].certified and seen[0].compressed is original  # the region is built
    sizes = [r.compressed.n_trees for r in seen[1:]]
    assert sizes and all(r.certified for r in seen[1:])
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] == res.compressed.n_trees
    assert bounds == sorted(set(bounds)) and bounds[-1] == res.size_bound


def test_a_region_without_training_rows_is_an_error_before_any_work():
    original, X = _original("gb", 5, 2)
    assert original.kind == "margin"  # eta is a raw score: no row is this confident
    seen = []
    with pytest.raises(EmptyRegion, match="no training row lies in the region"):
        compress(original, X, CompressConfig.of(mode="prune", eta=1e6), on_improve=seen.append)
    assert seen == []
