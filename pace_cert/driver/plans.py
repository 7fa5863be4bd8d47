"""One plan per mode: the steps of paper Figure 1 in the order they run.

A new search strategy is a new step module in ``pace_cert/driver/phases/`` and one line
here. The runner (``runner.py``) skips a step whose condition does not hold, offers
every result to the incumbent, and stops a plan once the incumbent is proved minimal
(``stop_when_minimal``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pace_cert.driver.phases.boost import Boost
from pace_cert.driver.phases.collapse import Collapse
from pace_cert.driver.phases.eliminate import Eliminate, FreeRemoval
from pace_cert.driver.phases.generate import Generate
from pace_cert.driver.phases.l0 import L0Loop
from pace_cert.driver.phases.l1 import L1Loop, L1Refresh
from pace_cert.driver.phases.leaf_bound import LeafBound
from pace_cert.driver.phases.merge_original import MergeAfter, MergeFirst
from pace_cert.driver.phases.prune_fallback import PruneFallback
from pace_cert.driver.phases.refit import Refit
from pace_cert.driver.phases.shrink import ShrinkStep
from pace_cert.driver.phases.single_tree import SingleTree
from pace_cert.driver.phases.start_from import StartFrom
from pace_cert.driver.phases.synth import Synth, SynthBound
from pace_cert.driver.phases.witness_bound import WitnessBound
from pace_cert.driver.result import STOP_PROVED_MINIMAL
from pace_cert.driver.step import Step


@dataclass(frozen=True)
class Plan:
    """A mode's steps. ``stop_when_minimal``: end once the best certified model is as
    small as the proved bound; ``minimal_stop``: what ``generation_stop`` then says
    when generation has not run (None: leave it); ``pruning_bound``: the pruning lower
    bound runs after the plan, on its share of the time."""

    mode: str
    steps: tuple[Step, ...]
    stop_when_minimal: bool = True
    minimal_stop: str | None = None
    pruning_bound: bool = True


PLANS: dict[str, Plan] = {
    "prune": Plan(
        "prune",
        (
            StartFrom(),  # a frontier's outer rung: its model, certified again here
            WitnessBound(),  # boundary witnesses: a size lower bound
            MergeFirst(),  # the merged original, when it would be proved minimal at once
            FreeRemoval(),  # large domains: without the trees no region input can notice
            L1Loop(),  # L1 on the original trees
            MergeAfter(),  # the merged original, when smaller than the L1 model
            WitnessBound(),
            Eliminate(),  # large domains, nothing smaller certified: remove trees one by one
            ShrinkStep(),  # then one by one with max-margin weights
            L0Loop("l0"),  # L0 on the original trees (fallbacks under a time limit)
            WitnessBound(),
        ),
    ),
    "generate": Plan(
        "generate",
        (
            StartFrom(),
            WitnessBound(),
            L1Loop("l1-original"),  # a certified fallback if generation does not certify
            WitnessBound(),
            Generate(),  # column generation on the L1 duals: the L1 support is the answer
        ),
        stop_when_minimal=False,
    ),
    "pace": Plan(
        "pace",
        (
            StartFrom(),
            WitnessBound(),
            MergeFirst(),
            FreeRemoval(),
            L1Loop(),
            MergeAfter(),
            WitnessBound(),
            Eliminate(),
            ShrinkStep(),
            L0Loop("l0"),  # prune first: PACE is never larger than prune
            WitnessBound(),
            SingleTree(learner=True),  # one tree of the learner depth, when it is faithful
            Collapse(),  # objective leaves: splits collapsed one at a time, leaves re-fitted
            SynthBound(),  # depth <= 2: CP-SAT proofs of a lower bound on the size
            Boost(),  # totally corrective boosting for a smaller support
            L1Refresh(),  # fresh duals on the samples added since
            Generate(),  # column generation enriches the pool
            L0Loop("l0-enriched", enriched=True),  # L0 on the enriched pool
            Refit(),  # one to three partitions with re-fitted leaves
            Synth(),  # depth <= 2: CP-SAT synthesis of fewer trees
        ),
        minimal_stop=STOP_PROVED_MINIMAL,
    ),
}
PLANS["tree"] = Plan(
    "tree",
    (
        StartFrom(),  # a frontier's outer rung: its tree, certified again here
        SingleTree(),  # one tree pure on the region's cells, certified
        LeafBound(),  # leaf witnesses: the leaves any faithful tree needs (verify re-checks)
        # no tree certified (raw features): the best certified pruning in the time left
        *(PruneFallback(step) for step in PLANS["prune"].steps[1:]),
    ),
    stop_when_minimal=False,
    pruning_bound=False,
)
