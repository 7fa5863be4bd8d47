"""The L0 master's family (``L0Master.family``, ``search.family_size``): when a
candidate is refuted, its one-swap neighbours that still meet every row are screened in
the same round. They only add samples: a run with it on still certifies models that
are faithful on every cell (onnxruntime, brute force)."""

from __future__ import annotations

import numpy as np

from pace_cert.driver.l0_master import L0Master
from pace_cert.driver.phases.l0 import l0_loops
from pace_cert.master.rows import meets_rows
from pace_cert.plumbing.budget import Budget

from .helpers import assert_faithful_on_every_cell
from .test_shrink import _certified_start


def test_family_is_same_size_supports_that_meet_the_rows(tmp_path):
    p, *_ = _certified_start(tmp_path, "rf", 1, family_size=4)
    n = p.original.n_trees
    learners = p.learners[:n]
    A = p.matrix(learners)
    master = L0Master(p, learners, 1.0, None)
    sol = master.solve(A, Budget.seconds(None))
    S = set(np.flatnonzero(sol.weights > 0).tolist())
    alts = master.family(A, sol, Budget.seconds(None))
    assert len(alts) <= 4
    for alt in alts:
        R = set(np.flatnonzero(alt.weights > 0).tolist())
        assert len(R) == len(S) and len(R ^ S) == 2  # one out, one in
        assert meets_rows(A, alt)


def test_family_is_empty_when_off(tmp_path):
    p, *_ = _certified_start(tmp_path, "rf", 1)
    learners = p.learners[: p.original.n_trees]
    A = p.matrix(learners)
    master = L0Master(p, learners, 1.0, None)
    sol = master.solve(A, Budget.seconds(None))
    assert p.cfg.tuning.search.family_size == 0
    assert master.family(A, sol, Budget.seconds(None)) == []


def test_l0_with_the_family_certifies_models_faithful_on_every_cell(tmp_path, monkeypatch):
    # the family is screened when the screen refutes a candidate: not inside the master
    p, original, path, info = _certified_start(tmp_path, "ada", 5, family_size=6, lazy_screen=0)
    n = original.n_trees
    screened: list[int] = []
    family = L0Master.family

    def counted(self, A, sol, budget):
        alts = family(self, A, sol, budget)
        screened.append(len(alts))
        return alts

    monkeypatch.setattr(L0Master, "family", counted)
    offers = list(l0_loops(p, p.learners[:n], 1.0, None, "l0", p.budget))
    assert sum(screened) > 0  # the family was screened at least once
    models = [o.result.model for o in offers if o.result.certified]
    assert models
    assert_faithful_on_every_cell(p, original, path, info, models)
