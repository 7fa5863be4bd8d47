"""The driver's behaviour on fixed runs is what it was when the fingerprints were
recorded (``tests/behaviour.py``): phase, sizes, pair statuses, history lengths,
lower bounds and stop reasons of every mode, region and exporter family."""

from __future__ import annotations

import json

import pytest

from .behaviour import FINGERPRINTS, RUNS, run_fixture

# the longest (make test-slow): fingerprints pin the search's sizes, not soundness
SLOW = {
    "gb3-seeds-pace-region",
    "rf3-seeds-generate-eta",
    "rf-compas-pace-region",
    "rf-compas-generate-global",
    "rf-cancer-raw-prune-region",
    "rf-diabetes-prune-delta",
    "own-compas-prune-global",
}


@pytest.mark.parametrize(
    "run",
    [pytest.param(r, marks=pytest.mark.slow) if r.name in SLOW else r for r in RUNS],
    ids=[r.name for r in RUNS],
)
def test_fingerprint_unchanged(run, tmp_path):
    expected = json.loads(FINGERPRINTS.read_text())[run.name]
    assert run_fixture(run, tmp_path) == expected
