"""Records the driver passes around: a phase's result, a separating sample's history
entry, an offer to the incumbent, and the run's result."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from pace_cert.model.ensemble import Ensemble
from pace_cert.oracle.score_model import PairResult, RegionSpec
from pace_cert.region.domain import FeatureDomain
from pace_cert.region.witness import Witness

#: ``generation_stop`` when PACE ends before generation: the best certified model is
#: proved as small as any faithful model of the family
STOP_PROVED_MINIMAL = "not run: the certified model is proved minimal"
#: the step named when the process guard ends a run before the plan's first step
STEP_BEFORE_PLAN = "setup"
#: the step named while the pruning lower bound is proved, after the plan
STEP_PRUNING_BOUND = "pruning-bound"


def size_key(model: Ensemble, objective: str) -> tuple[int, int]:
    """What a smaller model has less of, first and second: (trees, leaves) for the
    objective ``trees``, (leaves, trees) for ``leaves``."""
    if objective == "leaves":
        return model.n_leaves, model.n_trees
    return model.n_trees, model.n_leaves


@dataclass(frozen=True)
class StopReason:
    """Why the run ended, in plain words: the plan ``step`` that decided it and its
    ``reason``. ``time_limit``: the time limit ended it (the run did not end by itself,
    so a longer run may certify a smaller model). ``signal``: "SIGTERM" or "SIGINT"
    when a signal ended it (the process guard's stop, :meth:`guard`)."""

    step: str
    reason: str
    time_limit: bool = False
    signal: str | None = None

    @classmethod
    def guard(cls, step: str | None, signal: str | None, limit: float | None) -> StopReason:
        """The process guard ended the run while ``step`` ran (None: before the plan's
        first step): at ``signal``, or (None) at the hard deadline of the time limit
        ``limit`` seconds."""
        if signal is None:
            limit_words = "the time limit" + ("" if limit is None else f" ({limit:g} s)")
            why = f"{limit_words} ended the run during this step (the process guard's deadline)"
        else:
            why = f"{signal} ended the run during this step"
        return cls(step or STEP_BEFORE_PLAN, why, time_limit=signal is None, signal=signal)

    def __str__(self) -> str:
        return f"{self.step}: {self.reason}"


@dataclass
class HistoryEntry:
    """A separating sample the oracle returned: the phase (its first word: ``l0``
    for every L0-loop variant) and round, the pair, the float32 point, and the
    original's label there (a class index)."""

    phase: str
    iteration: int
    y0: int
    y: int
    point: np.ndarray
    original_label: int


@dataclass
class PhaseResult:
    """What a faithful loop ended with. ``model`` is the certified candidate (None when
    not certified); ``proof`` its per-pair results; ``keep`` the pool indices of the
    learners it uses, with their master ``weights`` and class ``offsets``."""

    model: Ensemble | None
    proof: list[PairResult]
    rounds: int
    certified: bool
    objective: float | None = None
    optimal: bool = True
    weights: list[float] = field(default_factory=list)  # master weight per kept learner
    keep: list[int] = field(default_factory=list)  # indices of the kept learners in the pool
    offsets: np.ndarray | None = None
    screened: bool = False  # certify=False: the screen found nothing (no CP-SAT proof)
    first_objective: float | None = None  # master value of the first round (its samples)
    gave_up: bool = False  # the master had no candidate (e.g. none within a size budget)
    stuck: bool = False  # the samples it met only below the float32 guard came back
    undecided: bool = False  # CP-SAT neither found a sample nor proved every pair in time
    # per tree (weight, learners merged, original trees) when not from this run's pool
    sources: tuple[list[float], list[int], list[list[int]]] | None = None

    @classmethod
    def nothing(cls, rounds: int = 0, *, gave_up: bool = False) -> PhaseResult:
        """An uncertified result with no model and no proof."""
        return cls(None, [], rounds, False, gave_up=gave_up)


@dataclass
class TreeReport:
    """What mode tree's step learned, for the certificate: the labelled cells of its last
    fit (``complete``: every region cell), the rounds of the faithful loop, the caps,
    ``leaves_bound`` (proved: no faithful tree within the depth cap has fewer leaves;
    None: not proved) and, when no tree within the caps was found, why
    (``none_within_caps``, "proved: ..." when the exact program showed none exists);
    ``fallback``: "prune" when no tree was certified and mode prune's steps ran."""

    complete: bool
    max_depth: int | None = None
    max_leaves: int | None = None
    cells: int = 0
    rounds: int = 0
    leaves_bound: int | None = None
    none_within_caps: str | None = None
    fallback: str | None = None  # "prune": no tree certified, mode prune's steps ran
    leaf_witnesses: object | None = None  # a LeafWitnessSet (learners/leaf_witnesses.py)


@dataclass(frozen=True)
class StartModel:
    """A model certified on a region around this run's (a frontier's outer rung), with
    its trees' provenance as that run's certificate states it: per tree the master
    weight, the learners merged into it and the original trees among them."""

    model: Ensemble
    weights: list[float]
    merged: list[int]
    original_trees: list[list[int]]


@dataclass(frozen=True)
class Offer:
    """A result offered to the incumbent under ``name`` (the certificate's phase).
    ``replace``: it becomes the result even when not smaller (generate mode's final L1
    model, which is the mode's answer by definition)."""

    result: PhaseResult
    name: str
    replace: bool = False


@dataclass
class CompressResult:
    """Everything the certificate needs from one run."""

    original: Ensemble
    compressed: Ensemble
    certified: bool
    status: str  # certified | inconclusive
    proof: list[PairResult]
    history: list[HistoryEntry]
    domain: FeatureDomain
    region: RegionSpec
    l1_values: list[float]
    reduced_costs: list[float]
    pricing: str  # none | exact | heuristic
    generation_stop: str
    samples_kept: int
    samples_dropped: int
    e_req: float
    big_m: float | None
    l0_optimal: bool | None
    seconds: float
    plausibility: object | None = None
    weights: list[float] = field(default_factory=list)
    phase: str = ""
    gurobi_used: bool = False
    schedule: str = "sequential"  # how the oracle spread its threads over the label pairs
    race_linearization: tuple[int, ...] = ()  # racing attempts' CP-SAT linearization_level
    size_bound: int | None = None  # proved: no faithful model of fewer trees (synth, witnesses)
    witnesses: list[Witness] = field(default_factory=list)  # evidence for size_bound
    witness_bound: int | None = None  # the bound the witnesses give alone
    # phases.pruning_bound.PruningBoundResult: no faithful pruning is smaller (None: none)
    pruning_bound: object = None
    merged: list[int] = field(default_factory=list)  # per compressed tree: learners summed
    original_trees: list[list[int]] = field(default_factory=list)  # per tree: original
    # trees (indices in the original) among them
    stop: StopReason | None = None  # why the run ended (None: before the plan ran)
    objective: str = "trees"  # what "smaller" means: trees then leaves, or the reverse
    tree: TreeReport | None = None  # mode tree's step, when it ran

    @property
    def smaller(self) -> bool:
        """A certified model smaller than the original under the objective (fewer trees,
        or as many with fewer leaves; or the reverse order for ``leaves``): the only
        result worth writing (a same-size rewrite could differ from the original outside
        the region, e.g. at exact vote ties, and gains nothing)."""
        return self.certified and size_key(self.compressed, self.objective) < size_key(
            self.original, self.objective
        )

    def unchanged(self) -> CompressResult:
        """This run's result with the original as the compressed model, uncertified:
        what is written when nothing smaller was certified. The run's log (samples,
        bounds, L1 values, generation) is kept."""
        n = self.original.n_trees
        return replace(
            self,
            compressed=self.original,
            certified=False,
            status="inconclusive",
            proof=[],
            e_req=0.0,
            l0_optimal=None if self.l0_optimal is None else False,
            weights=[float(w) for w in self.original.weights],
            phase="",
            merged=[1] * n,
            original_trees=[[t] for t in range(n)],
        )
