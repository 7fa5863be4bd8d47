"""The state of one compression run, shared by the plan's steps.

* the region: feature domain, margin and plausibility constants, the oracle and its
  screen (built once from the original and the training rows);
* the samples X^o: one float32 representative per cell, with the original's labels;
* the learner pool: the original trees first, then generated ones (never removed);
* the incumbent: the smallest certified model offered so far, and the proved size
  lower bound (boundary witnesses, synthesis proofs);
* the log: separating-sample history, L1 values, reduced costs, why generation
  stopped.

Methods are the small operations every step needs (add a sample, the margin matrix of
some learners, fold a master solution into the candidate, offer a result).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pace_cert.driver.result import (
    HistoryEntry,
    Offer,
    PhaseResult,
    StartModel,
    StopReason,
    TreeReport,
    size_key,
)
from pace_cert.errors import EmptyRegion
from pace_cert.learners import merge
from pace_cert.learners.pool import fold, leaf_values
from pace_cert.master.l1 import L1Master
from pace_cert.master.rows import MasterSolution, margin_rows
from pace_cert.model.ensemble import Ensemble, Tree
from pace_cert.oracle.cpsat import SeparationOracle
from pace_cert.oracle.score_model import RegionSpec, ScoreModel
from pace_cert.oracle.screen import Screen
from pace_cert.plumbing.budget import Budget
from pace_cert.region.domain import FeatureDomain, build_domain, infer_binary, infer_integer
from pace_cert.region.margins import own_margin, region_margin, required_margin
from pace_cert.region.masks import margin_mask, plausibility_mask
from pace_cert.region.witness import Witness
from pace_cert.settings import CompressConfig

Progress = Callable[[str], None]


def region_domain(
    original: Ensemble, X: np.ndarray, cfg: CompressConfig, plausibility=None
) -> FeatureDomain:
    """The feature domain of a run on training rows ``X`` (float32): the cells of the
    original's and the plausibility forest's thresholds, with the binary, integer and
    box restrictions ``cfg`` infers from the rows."""
    binary = infer_binary(X) if cfg.binary == "infer" else None
    lower = X.min(axis=0) if cfg.bounds == "data" else None
    upper = X.max(axis=0) if cfg.bounds == "data" else None
    trees = list(original.trees) + (list(plausibility.trees) if plausibility else [])
    integer = infer_integer(X) if cfg.integer == "infer" else None
    return build_domain(trees, original.n_features, binary, lower, upper, integer)


@dataclass
class L1State:
    """The last L1 loop's result and master solution (its duals price new learners),
    and whether the first L1 loop certified (the later phases build on it)."""

    result: PhaseResult
    solution: MasterSolution | None
    first_certified: bool


@dataclass
class RunStats:
    """What the certificate reports about the masters and generation."""

    big_m: float | None = None  # the L0 big-M of the last MILP solve used
    l0_optimal: bool | None = None  # the last L0 solve's optimality
    l0_proved: int | None = None  # size of a certified, optimally solved L0 model
    used_gurobi: bool = False
    said_gurobi: bool = False  # the licence-size message was printed
    pricing: str = "none"  # none | exact | heuristic
    stop: str = "not run"  # why generation stopped


@dataclass
class RunState:
    cfg: CompressConfig
    original: Ensemble
    budget: Budget
    say: Progress
    t0: float
    plausibility: object | None
    domain: FeatureDomain
    region: RegionSpec
    screen: Screen
    oracle: SeparationOracle
    X: np.ndarray  # samples X^o, float32, one per cell
    y0: np.ndarray  # the original's class index at each sample
    samples_kept: int
    samples_dropped: int
    cells: set[tuple[int, ...]]
    pool_rows: np.ndarray | None  # training rows seeding the screening pool (once)
    learners: list[Tree]
    origin: list[str]  # "original" | "new", per learner
    l1_master: L1Master
    history: list[HistoryEntry] = field(default_factory=list)
    l1_values: list[float] = field(default_factory=list)
    reduced_costs: list[float] = field(default_factory=list)
    # no faithful model of fewer trees of depth <= the original's (None: not known)
    size_bound: int | None = None
    witnesses: dict[tuple[int, int], Witness] = field(default_factory=dict)
    witness_bound: int | None = None
    witness_rows: int = 0  # samples already searched for witnesses (rows only grow)
    pruning_bound: Any = None  # phases.pruning_bound.PruningBoundResult, after the plan
    best: tuple[PhaseResult, str] | None = None
    l1: L1State | None = None
    merge_tried: bool = False  # the merged original was offered before the L1 loop
    stats: RunStats = field(default_factory=RunStats)
    on_improve: Callable[[], None] | None = None  # called when ``best`` changes
    on_bound: Callable[[int], None] | None = None  # called when ``size_bound`` rises
    on_step: Callable[[str], None] | None = None  # called with each step's name as it starts
    # why the last step or loop that ended on its own ended (the runner's final word
    # may differ: proved minimal, time limit); see :meth:`record_stop`
    stop_reason: StopReason | None = None
    # a model certified on a region around this one (a frontier's outer rung): the
    # first candidate (phases/start_from.py)
    start: StartModel | None = None
    tree: TreeReport | None = None  # mode tree's step, once it ran

    # ------------------------------------------------------------------ building
    @classmethod
    def create(
        cls,
        original: Ensemble,
        X: np.ndarray,
        cfg: CompressConfig,
        budget: Budget,
        say: Progress,
        plausibility: object | None = None,
    ) -> RunState:
        """The region (domain, margins, plausibility), oracle, screen and first samples
        (training rows inside the region, one per cell) for ``original``.
        ``plausibility``: a forest fitted already, its threshold set for ``cfg.delta``
        (a frontier fits one for all its rungs); None: fitted here when delta > 0."""
        t0 = time.perf_counter()
        X = np.asarray(X, np.float32)
        if cfg.delta == 0:
            plausibility = None
        elif plausibility is None:
            from pace_cert.region.plausibility import fit_plausibility

            plausibility = fit_plausibility(
                X, cfg.delta, cfg.iforest_estimators, cfg.iforest_max_samples, cfg.seed
            )
        pl_model = None if plausibility is None else ScoreModel.sum_of(plausibility.trees)
        domain = region_domain(original, X, cfg, plausibility)
        region = RegionSpec(
            margin=region_margin(original, cfg.eta),
            plausibility=pl_model,
            delta_abs=None if plausibility is None else plausibility.delta_abs,
        )
        orig_model = ScoreModel.from_ensemble(original)
        settings = cfg.tuning.oracle
        screen = Screen(domain, orig_model, region, seed=cfg.seed, enum_limit=settings.enum_limit)
        oracle = SeparationOracle(
            domain, orig_model, region, seed=cfg.seed, settings=settings, hints=screen
        )
        pool_rows = X if cfg.tuning.search.pool_per_row > 0 and not screen.can_enumerate() else None
        # initial samples: training rows inside the region (domain, margin, plausibility)
        inside = domain.contains(X) & margin_mask(original, X, region.margin)
        if plausibility is not None:
            inside &= plausibility_mask(plausibility, X)
        if not inside.any():
            raise EmptyRegion(
                f"no training row lies in the region (eta {cfg.eta:g}, delta {cfg.delta:g})",
                {"domain": domain, "margin": region.margin, "plausibility": plausibility},
            )
        cells = domain.cell_index(X[inside])
        _, first = np.unique(cells, axis=0, return_index=True)
        first = np.sort(first)
        Xs = domain.representatives(cells[first].reshape(-1, original.n_features))
        y0 = original.predict_index(Xs) if len(Xs) else np.zeros(0, np.int64)
        return cls(
            cfg=cfg,
            original=original,
            budget=budget,
            say=say,
            t0=t0,
            plausibility=plausibility,
            domain=domain,
            region=region,
            screen=screen,
            oracle=oracle,
            X=Xs,
            y0=y0,
            samples_kept=int(inside.sum()),
            samples_dropped=int((~inside).sum()),
            cells={tuple(c) for c in cells[first]},
            pool_rows=pool_rows,
            learners=list(original.trees),
            origin=["original"] * original.n_trees,
            l1_master=L1Master(seed=cfg.seed),  # warm-started across rounds
        )

    # ------------------------------------------------------------------ samples
    def add_sample(self, x: np.ndarray, y0: int | None = None) -> bool:
        """Add float32 point ``x`` (labelled ``y0``, the original's class index there,
        computed when None) unless a sample in its cell exists; True if added."""
        c = tuple(self.domain.cell_index(x[None, :])[0])
        if c in self.cells:
            return False
        self.cells.add(c)
        self.X = np.vstack([self.X, x[None, :]])
        label = self.original.predict_index(x[None, :])[0] if y0 is None else y0
        self.y0 = np.r_[self.y0, np.int64(label)]
        return True

    def matrix(self, learners: list[Tree]) -> np.ndarray:
        """The margin rows of ``learners`` on the samples (``master.rows.margin_rows``)."""
        H = (
            leaf_values(learners, self.X)
            if len(self.X) and learners
            else np.zeros((len(self.X), len(learners), self.original.n_classes))
        )
        return margin_rows(H, self.y0)

    def ensure_pool(self) -> None:
        """Seed the screening pool from the training rows, once (large domains)."""
        if self.pool_rows is None:
            return
        n = self.screen.seed_pool(self.pool_rows, self.cfg.tuning.search.pool_per_row)
        self.pool_rows = None
        self.say(f"screening pool: {n} points clearly inside the region")

    # --------------------------------------------------------------- candidates
    def candidate(self, sol: MasterSolution, learners: list[Tree]) -> tuple[Ensemble, list[int]]:
        """The float32 model the master solution stands for (``learners.pool.fold``)."""
        return fold(
            learners,
            sol.weights,
            sol.offsets,
            self.original.classes,
            self.origin,
            self.original.n_features,
            self.cfg.tuning.master.weight_tol,
        )

    def clears_own_rows(self, sol: MasterSolution, learners: list[Tree]) -> bool:
        """Whether the folded candidate of ``sol`` beats every other class by more than
        its float32 guard E_req on every master row.

        If not, the oracle can only refute it with rows the master already has (the
        weights met them in float64 only: a support with margin barely above zero gets
        weights so large that E_req exceeds the master's margin of 1, or weights below
        the fold tolerance carried rows), and solving again returns the same weights.
        """
        if not len(self.X):
            return True
        cand, _ = self.candidate(sol, learners)
        return bool(np.all(own_margin(cand, self.X, self.y0) > required_margin(cand)))

    # ---------------------------------------------------------------- incumbent
    def offer(self, offer: Offer) -> None:
        """Keep the smallest certified model (trees, then leaves; leaves first for the
        objective ``leaves``); ``offer.replace`` keeps it whatever its size."""
        res = offer.result
        if not res.certified or res.model is None:
            return
        if self.best is not None and not offer.replace:
            objective = self.cfg.objective
            if size_key(self.best[0].model, objective) <= size_key(res.model, objective):
                return
        self.best = (res, offer.name)
        if self.on_improve is not None:
            self.on_improve()

    def raise_bound(self, k: int) -> bool:
        """Proved: no faithful model of fewer than ``k`` trees (of the original's depth).
        Raises ``size_bound`` to ``k`` if that is higher; True if it did."""
        if k <= (self.size_bound or 0):
            return False
        self.size_bound = k
        if self.on_bound is not None:
            self.on_bound(k)
        return True

    def prune_scale(self) -> float:
        """The part of their share PACE's pruning steps may spend: with ``--objective
        leaves`` they leave ``pace.collapse_share`` for collapsing splits after them."""
        if self.cfg.mode == "pace" and self.cfg.objective == "leaves":
            return 1.0 - self.cfg.tuning.pace.collapse_share
        return 1.0

    def learner_depth(self) -> int:
        """Depth of the learners generation creates: ``--learner-depth``, else the
        original's (at least 1)."""
        return self.cfg.learner_depth or max(1, self.original.max_depth)

    def best_size(self) -> int | None:
        """Trees of the smallest certified model so far (None: nothing certified)."""
        return None if self.best is None else self.best[0].model.n_trees

    def minimal(self) -> bool:
        """The best certified model has as few trees as the proved lower bound (never
        with ``--objective leaves``: a bound on trees says nothing of leaves)."""
        if self.cfg.objective == "leaves":
            return False
        size = self.best_size()
        if size is None or self.size_bound is None or self.best is None:
            return False
        # the bound speaks of trees of the original's depth: a deeper model is not bound
        in_family = self.best[0].model.max_depth <= self.original.max_depth
        return in_family and self.size_bound >= size

    def record_stop(self, step: str, reason: str) -> None:
        """A step or loop ended for ``reason`` (plain words): the run's stop reason if
        nothing after it decides otherwise."""
        self.stop_reason = StopReason(step, reason)

    def say_minimal(self) -> None:
        self.say(
            f"[bound] {self.best_size()} trees is the smallest faithful model of "
            "this family in the region (size lower bound reached)"
        )

    def warm_from_best(self) -> np.ndarray | None:
        """The smallest certified model so far as an L0 start over the current pool."""
        if self.best is None or self.best[0].offsets is None:
            return None
        res = self.best[0]
        w = np.zeros(len(self.learners))
        w[res.keep] = res.weights
        return np.r_[w, res.offsets[1:]]

    def tree_sources(self, res: PhaseResult) -> tuple[list[float], list[int], list[list[int]]]:
        """Per tree of ``res.model``: its master weight (summed over merged learners),
        how many pool learners it merges, and the original trees among them (indices in
        the original). Results built outside the pool (refit, synth: ``keep`` empty)
        have one learner per tree, none of them an original tree."""
        assert res.model is not None
        if res.sources is not None:  # a start model: its own run's provenance
            return res.sources
        n = res.model.n_trees
        if not res.keep:
            return list(res.weights) or [1.0] * n, [1] * n, [[] for _ in range(n)]
        groups = merge.group_by_structure([self.learners[t] for t in res.keep])
        if len(groups) != n:
            raise RuntimeError(
                f"internal error: {n} trees but {len(groups)} groups of kept learners"
            )
        weights = [float(sum(res.weights[i] for i in g)) for g in groups]
        originals = [
            [int(res.keep[i]) for i in g if self.origin[res.keep[i]] == "original"] for g in groups
        ]
        return weights, [len(g) for g in groups], originals
