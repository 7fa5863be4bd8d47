"""benchmarks/studies/cpsat_params.py: how a variant column is read, and the oracle
settings it stands for."""

from __future__ import annotations

from benchmarks.studies import cpsat_params as cp
from pace_cert.oracle.settings import OracleSettings


def test_default_variant_is_the_shipped_oracle():
    v = cp.parse_variant("")
    assert v.params == {} and v.hints and v.schedule == "race"
    assert v.race_linearization is None and v.tree_sums == OracleSettings().tree_sums
    assert v.settings() == OracleSettings()


def test_variant_keys_split_into_oracle_switches_and_cpsat_parameters():
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


def test_a_variant_is_the_shipped_settings_with_its_changes():
    shipped = OracleSettings()
    s = cp.parse_variant("cp_model_presolve=True;hints=False;race_linearization=1").settings()
    assert s.cpsat_params == {**shipped.cpsat_params, "cp_model_presolve": True}
    assert not s.use_hints and s.schedule == shipped.schedule
    assert s.race_linearization == s.race_linearization_stumps == (1,)
    assert s.race_linearization_plausible == (1,)
    assert s.tree_sums == shipped.tree_sums and s.max_attempts == shipped.max_attempts
    assert shipped.cpsat_params == OracleSettings().cpsat_params  # the default is untouched
