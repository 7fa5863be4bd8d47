"""The pruning bound aimed by the oracle (``bound.aim_rounds``): when the run's points
cannot refute a support the bound's master proposes, the faithful loop on that support
looks for region points that do. On 3-feature domains, brute force over every cell of
the region gives the true minimum pruning: the aimed bound never exceeds it, climbs
above the bound of the same few starting points, and every model it certifies is
faithful on every cell."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pace_cert.cert.pruning_check import leaf_table
from pace_cert.driver.phases.pruning_bound import AIM_PHASE, prove_bound
from pace_cert.master.pruning_bound import prove_pruning_bound
from pace_cert.plumbing.budget import Budget
from pace_cert.region.masks import region_mask

from .helpers import assert_faithful_on_every_cell, region_grid
from .test_lazy_screen import _keep_first_samples
from .test_shrink import _certified_start


def _true_minimum(p) -> int:
    """The fewest original trees that meet every region cell (exact on the grid)."""
    grid = region_grid(p, p.original, p.plausibility)
    y0 = p.original.predict_index(grid)
    res = prove_pruning_bound(leaf_table(p.original.trees, grid), y0, Budget.seconds(None))
    assert res.meets == res.value  # the bound is the minimum on the points
    return res.value


@pytest.mark.parametrize(("family", "seed"), [("rf", 1), ("ada", 5), ("gb", 1)])
def test_the_aimed_bound_climbs_to_at_most_the_true_minimum(tmp_path, family, seed):
    p, original, path, info = _certified_start(tmp_path, family, seed, aim_rounds=6)
    truth = _true_minimum(p)
    p.best = None  # nothing certified: the bound may reach the minimum itself
    _keep_first_samples(p, 4)  # few points: the bound on them alone is below the truth
    X = np.asarray(p.X, np.float32)
    blind = prove_pruning_bound(
        leaf_table(original.trees, X), original.predict_index(X), Budget.seconds(None)
    ).value
    aimed = prove_bound(p, Budget.seconds(None))
    assert aimed is not None
    assert blind < truth  # else the case tests nothing
    assert blind < aimed.value <= truth
    # every point of the bound lies in the region with its original label
    inside = region_mask(original, p.region.margin, p.plausibility, aimed.points, p.domain)
    assert inside.all()
    assert np.array_equal(aimed.y0, original.predict_index(aimed.points))
    # the aim certified a support on these cases: faithful on every cell
    assert p.best is not None and p.best[1] == AIM_PHASE
    assert p.best[0].model.n_trees >= aimed.value
    assert_faithful_on_every_cell(p, original, path, info, [p.best[0].model])


def test_an_aimed_bound_in_a_run_is_checked_by_verify(zoo_model, tmp_path):
    """A compress run with the aimed bound writes points CP-SAT found after the plan;
    verify re-checks the bound on them (points in the region, labels, cuts)."""
    from pace_cert.app import run_compress
    from pace_cert.settings import CompressConfig

    from .test_end_to_end import invoke

    model, data = zoo_model("compas", "rf", 20, 2)
    cfg = CompressConfig.of(mode="prune", eta=0.1, delta=0.1, threads=1, aim_rounds=3)
    out = tmp_path / "out"
    said: list[str] = []
    run_compress(model, data, out, cfg, progress=said.append)
    assert any(m.startswith(f"[{AIM_PHASE}]") for m in said)  # the aim ran
    res = invoke("verify", model, out / "compressed.onnx", out / "certificate.json", "--json")
    assert res.exit_code == 0, res.output
    claims = json.loads(res.stdout)["claims"]
    claim = next(c for c in claims if c["key"] == "size_lower_bound.pruning")
    assert claim["status"] == "checked"
