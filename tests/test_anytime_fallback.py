"""benchmarks/studies/anytime_fallback.py: ``--variant`` overrides reach CompressConfig
with the setting's type, so a benchmark never silently compares a setting it was not
asked for."""

from __future__ import annotations

import pytest

from benchmarks.studies import anytime_fallback as anytime
from pace_cert.settings import CompressConfig, SettingError


def test_variant_values_take_the_fields_types():
    name, over = anytime.parse_variant(
        "v:robust_weights=false,merge_original=TRUE,l0_time_limit=5,reweight_rounds=3,"
        "fallback=reweight,time_limit=40"
    )
    assert name == "v"
    assert over == {
        "robust_weights": False,  # bool("false") would be True
        "merge_original": True,
        "l0_time_limit": 5.0,
        "reweight_rounds": 3,
        "fallback": "reweight",
        "time_limit": 40.0,  # a None default parses as a float
    }
    assert type(over["reweight_rounds"]) is int and type(over["l0_time_limit"]) is float
    cfg = CompressConfig.of(**over)
    assert cfg.tuning.master.robust_weights is False and cfg.tuning.l0.fallback == "reweight"
    assert cfg.tuning.pace.merge_original is True and cfg.time_limit == 40.0


def test_a_variant_without_overrides_is_the_default():
    assert anytime.parse_variant("baseline") == ("baseline", {})
    assert anytime.parse_variant("baseline:") == ("baseline", {})


@pytest.mark.parametrize(
    "text, error",
    [
        ("v:no_such_field=1", SettingError),
        ("v:tuning=1", SettingError),  # a group, not a setting
        ("v:robust_weights=0", ValueError),  # only true/false
        ("v:reweight_rounds=2.5", ValueError),
        ("v:l0_time_limit=soon", ValueError),
    ],
)
def test_bad_variants_fail_loudly(text, error):
    with pytest.raises(error):
        anytime.parse_variant(text)
