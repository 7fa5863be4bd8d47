"""The frontier refines where sizes fall (issue 75): where the kept size falls by more
than half between two neighbouring rungs, rungs between them are added within the same
time, in ladder order, each certified on its own."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pace_cert
from pace_cert.frontier.ladder import Rung
from pace_cert.frontier.run import rung_between
from pace_cert.frontier.schedule import falls


def test_a_fall_by_more_than_half_adds_rungs_between(tmp_path):
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :6].astype(np.float32)
    rf = RandomForestClassifier(10, max_depth=2, random_state=0).fit(X, y)
    res = pace_cert.frontier(rf, X, y, rows="100,80", time_limit=120, mode="prune",
                             quiet=True, out=tmp_path / "f")  # fmt: skip
    rungs = res.record.rungs
    names = [r.name for r in rungs]
    assert names[0] == "rows100" and names[-1] == "rows80" and len(names) > 2
    shares = [r.share_asked for r in rungs]
    assert shares == sorted(shares, reverse=True)  # ladder order: largest region first
    etas = [r.eta for r in rungs]
    assert etas == sorted(etas)
    for a, b in itertools.pairwise(rungs):  # every fall by more than half was looked at
        if falls(a, b):
            assert len(names) == 2 + 3  # only when the refinement ran out of rungs
    for r in rungs:
        d = tmp_path / "f" / r.name
        rep = pace_cert.verify(d / "original.onnx" if (d / "original.onnx").exists()
                               else res.original, d / "compressed.onnx",
                               d / "certificate.json")  # fmt: skip
        assert rep.exit_code in (0, 2) and rep.status != "refuted"


def test_rung_between_halves_the_share_or_the_eta():
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    from pace_cert.export import estimator_to_onnx
    from pace_cert.frontier.ladder import eta_for_share
    from pace_cert.model.onnx_reader import ensemble_from_model

    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :6].astype(np.float32)
    ens, _ = ensemble_from_model(estimator_to_onnx(RandomForestClassifier(10, max_depth=2,
                                                   random_state=0).fit(X, y)))  # fmt: skip
    outer, inner = Rung(0.0, 0.0, 1.0), Rung(eta_for_share(ens, X, 0.8), 0.0, 0.8)
    mid = rung_between(outer, inner, ens, X)
    assert mid is not None and mid.share == pytest.approx(0.9)
    assert mid.eta == eta_for_share(ens, X, 0.9) and outer.eta < mid.eta < inner.eta
    assert rung_between(Rung(0.1, 0.0), Rung(0.3, 0.0), ens, X) == Rung(0.2, 0.0)
    assert rung_between(Rung(0.1, 0.0), Rung(0.3, 0.1), ens, X) is None  # two deltas
    assert rung_between(Rung(0.1, 0.0), Rung(0.11, 0.0), ens, X) is None  # nothing between
