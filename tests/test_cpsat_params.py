"""benchmarks/cpsat_params.py: how a variant column is read."""

from __future__ import annotations

import pytest

from pace_cert.oracle import cpsat as oracle

from .helpers import benchmark_module


@pytest.fixture(scope="module")
def cp():
    yield from benchmark_module("cpsat_params")


def test_default_variant_is_the_shipped_oracle(cp):
    v = cp.parse_variant("")
    assert v.params == {} and v.hints and v.schedule == "race"
    assert v.race_linearization is None and v.tree_sums == oracle.TREE_SUMS


def test_variant_keys_split_into_oracle_switches_and_cpsat_parameters(cp):
    v = cp.parse_variant(
        "tree_sums=none;cp_model_presolve=True;hints=False;race_linearization=0,1;"
        "schedule=parallel;max_presolve_iterations=2;random_branches_ratio=0.5"
    )
    assert v.tree_sums == "none" and not v.hints and v.schedule == "parallel"
    assert v.race_linearization == (0, 1)
    assert v.params == {
        "cp_model_presolve": True,
        "max_presolve_iterations": 2,
        "random_branches_ratio": 0.5,
    }
