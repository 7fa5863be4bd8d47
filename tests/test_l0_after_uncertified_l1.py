"""The L0 step on the original trees also runs after an L1 loop that did not certify
(large domains, where the L1 loop's vertex weightings may never converge and
elimination runs first): it starts from that loop's last solution and certifies its
own models, each faithful on every cell (brute force through onnxruntime)."""

from __future__ import annotations

import numpy as np
import pytest

from pace_cert import zoo
from pace_cert.driver.phases.l0 import L0Loop
from pace_cert.driver.result import PhaseResult
from pace_cert.driver.state import L1State
from pace_cert.master.l1 import solve_l1
from pace_cert.model.onnx_reader import read_ensemble
from pace_cert.oracle.settings import OracleSettings
from pace_cert.settings import CompressConfig

from .helpers import assert_faithful_on_every_cell, run_state, small_problem


@pytest.mark.parametrize(("family", "seed"), [("rf", 1), ("gb", 4)])
def test_l0_runs_from_an_uncertified_l1_solution_and_certifies_faithful_models(
    tmp_path, family, seed
):
    X, y = small_problem(seed, n_features=3, n_rows=200)
    path = tmp_path / "model.onnx"
    path.write_bytes(
        zoo.export_onnx(zoo.make_model(family, 12, 2, seed).fit(X, y), 3).SerializeToString()
    )
    original, info = read_ensemble(path)
    # enumeration off: the domain is screened by a pool, as a large one would be
    cfg = CompressConfig.of(mode="prune", eta=0.1, seed=0, oracle=OracleSettings(enum_limit=0))
    p = run_state(original, X.astype(np.float32), cfg)
    # the L1 master's solution on the training rows alone, never certified
    sol = solve_l1(p.matrix(p.learners), len(p.learners))
    p.l1 = L1State(PhaseResult.nothing(3), sol, first_certified=False)
    assert L0Loop("l0").applies(p)
    assert not L0Loop("l0-enriched", enriched=True).applies(p)  # needs a certified L1
    offers = [o for o in L0Loop("l0").run(p, p.budget) if o.result.certified]
    assert offers, "the L0 step certified nothing"
    models = [o.result.model for o in offers]
    assert all(m.n_trees < original.n_trees for m in models)
    assert_faithful_on_every_cell(p, original, path, info, models)
