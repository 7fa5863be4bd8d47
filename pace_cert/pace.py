"""The PACE driver (paper Figure 1): L1 + separation, price learners, L0 + separation.

Data flow: samples X^o → master (HiGHS) chooses weights → the candidate is folded to
the exact float32 model that will be written → the oracle (CP-SAT) searches every
label pair for a separating sample → samples are added and the master re-solved, until
every pair is proved INFEASIBLE. ``mode``:

* ``prune``: L1 loop on the original trees, then L0 loop on the same trees;
* ``generate``: L1 loop with column generation (pricing), the L1 support is the result;
* ``pace``: prune, boosting for a smaller support, generation, then the L0 loop on
  the enriched ensemble (the smallest certified model wins).

Under a time limit the best ensemble whose certificate is complete is returned; an
uncertified candidate is never presented as certified.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from pace_cert.learners import merge, refit, synth
from pace_cert.learners.pool import fold, leaf_values
from pace_cert.master import l0_cover
from pace_cert.master.l0_bigm import (
    GUROBI_SIZE_LIMIT,
    NoIncumbent,
    gurobi_available,
    l0_size,
    solve_l0,
    solve_l0_gurobi,
)
from pace_cert.master.l0_cover import L0Cover
from pace_cert.master.l1 import L1Master, solve_l1, solve_on_support
from pace_cert.master.max_margin import margin_on_support, max_margin_on_support
from pace_cert.master.rows import (
    MasterSolution,
    margin_rows,
    meets_rows,
    minimal_rows,
    normalise_columns,
)
from pace_cert.model.ensemble import Ensemble, Tree
from pace_cert.oracle.cpsat import PairResult, RegionSpec, ScoreModel, SeparationOracle
from pace_cert.region import witness
from pace_cert.region.domain import FeatureDomain, build_domain, infer_binary, infer_integer
from pace_cert.region.margins import own_margin, region_margin, required_margin
from pace_cert.region.masks import margin_mask, region_mask

#: ``generation_stop`` when PACE ends right after pruning: the bound step proved the pruned
#: model as small as any faithful model of the family
STOP_PROVED_MINIMAL = "not run: the certified model is proved minimal"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class CompressConfig:
    """User-facing knobs (CLI flags) plus solver settings with sensible defaults."""

    mode: str = "prune"
    eta: float = 0.0
    delta: float = 0.0
    time_limit: float | None = None
    threads: int = 2
    seed: int = 0
    binary: str = "infer"  # infer | none
    bounds: str = "none"  # none | data
    integer: str = "infer"  # infer (integer-valued training columns stay integers) | none
    iforest_estimators: int = 100
    iforest_max_samples: int | str = "auto"
    weight_tol: float = 1e-7  # relative to the largest weight; smaller weights are dropped
    kappa: float = 10.0  # L0 big-M = kappa * (L1 value)
    l0_time_limit: float = 30.0  # per MILP solve; the incumbent is kept (certificate: optimal?)
    milp: str = "auto"  # auto (gurobipy's big-M MILP within its licence, else the cover)
    # | cover (combinatorial Benders, l0_cover.py) | highs | gurobi (big-M MILPs)
    max_rounds: int = 500
    max_learners: int = 200  # generated learners cap (pace / generate)
    pricing_candidates: int = 8
    columns_per_round: int = 3  # improving learners added per pricing round
    stall_rounds: int = 8  # stop generation after this many rounds without L1 progress
    neighbours: int = 10  # extra separating samples per pair from one-cell moves (0: off)
    enumeration_per_pair: int = 25  # separating samples per pair from the enumeration
    climb_steps: int = 0  # large domains: beam-search steps from the pool before CP-SAT (0: off)
    lazy_proofs: bool = True  # a CP-SAT round that found a sample stops its pairs' proofs
    # (SeparationOracle.separate(until_found=True): the loop re-solves anyway)
    robust_weights: bool = True  # L0 support: max-margin weights instead of the MILP's
    boost_restarts: int = 4  # boosting also starts from each of these best-support trees
    l1_warm_start: bool = True  # keep one HiGHS L1 model across rounds (False: rebuild)
    pool_per_row: int = 20  # screening pool on large domains: random variants per row (0: off)
    l0_share: float = 0.5  # of the time left, for the L0 loop before the reweighting fallback
    pace_prune_share: float = 1.0  # pace: of the time left, for pruning the original trees
    pace_generate_share: float = 1.0  # pace: of the time left, for column generation
    pace_boost_share: float = 1.0  # pace: of the time left, for boosting a smaller support
    reweight_rounds: int = 8  # reweighted-L1 loops after an L0 loop that did not certify
    reweight_eps: float = 0.01  # c_t = 1 / (w_t + eps * max w)
    fallback: str = "grow"  # anytime fallback of an L0 loop that did not certify in its
    # share: grow (reweighted L1, then column growth from the L0 loop's last support)
    # | reweight (reweighted L1 only)
    grow_rho: float = 1e-3  # grow: a learner joins while the max normalised margin is below
    refit_size: int = 3  # pace: try supports of up to this many partitions, free leaves
    synth_size: int = 5  # pace: CP-SAT synthesis of up to this many trees (0: off)
    synth_seconds: float = 60.0  # per CP-SAT synthesis solve; under a time limit a stopped
    # solve is asked again once with all the time left (the phase runs last)
    bound_seconds: float = 10.0  # pace: per CP-SAT proof of the lower bound right after
    # pruning (synthesis without candidates); a pruned model proved minimal ends the run
    merge_original: bool = True  # prune/pace: first certify the original with its trees
    # that share every split merged (merge.py); fold merges shared splits either way
    synth_threads: int = 1  # CP-SAT workers per synthesis solve (0: ``threads``); one
    # worker proved the long k = 3 bounds 1.2-1.3x faster than two (benchmarks/README.md)

    def __post_init__(self) -> None:
        """A misspelt choice (``CHOICES``) fails loudly instead of silently selecting
        another setting; the CLI checks its flags against the same lists first."""
        for name, allowed in CHOICES.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"CompressConfig.{name} must be one of {allowed}, got {value!r}")


CHOICES = {
    "milp": ("auto", "cover", "highs", "gurobi"),
    "fallback": ("grow", "reweight"),
    "binary": ("infer", "none"),
    "bounds": ("none", "data"),
    "integer": ("infer", "none"),
}


@dataclass
class HistoryEntry:
    phase: str
    iteration: int
    y0: int
    y: int
    point: np.ndarray
    original_label: int
    compressed_label: int


@dataclass
class PhaseResult:
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


@dataclass
class CompressResult:
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
    witnesses: list[witness.Witness] = field(default_factory=list)  # evidence for size_bound
    witness_bound: int | None = None  # the bound the witnesses give alone
    merged: list[int] = field(default_factory=list)  # per compressed tree: learners summed
    original_trees: list[list[int]] = field(default_factory=list)  # per tree: original
    # trees (indices in the original) among them


# ---------------------------------------------------------------------- pure helpers


# ------------------------------------------------------------------------ the driver


class Pace:
    """One compression run. Holds the sample set, learners, the oracle and the log."""

    def __init__(
        self,
        original: Ensemble,
        X: np.ndarray,
        cfg: CompressConfig,
        progress: Progress | None = None,
    ) -> None:
        self.t0 = time.perf_counter()
        self.cfg = cfg
        self.original = original
        self.say = progress or (lambda _m: None)
        self.deadline = None if cfg.time_limit is None else self.t0 + cfg.time_limit
        X = np.asarray(X, np.float32)
        self.plausibility = None
        if cfg.delta > 0:
            from pace_cert.region.plausibility import fit_plausibility

            self.plausibility = fit_plausibility(
                X, cfg.delta, cfg.iforest_estimators, cfg.iforest_max_samples, cfg.seed
            )
        pl_model = None if self.plausibility is None else ScoreModel.sum_of(self.plausibility.trees)
        binary = infer_binary(X) if cfg.binary == "infer" else None
        lower = X.min(axis=0) if cfg.bounds == "data" else None
        upper = X.max(axis=0) if cfg.bounds == "data" else None
        trees = list(original.trees) + (list(self.plausibility.trees) if self.plausibility else [])
        integer = infer_integer(X) if cfg.integer == "infer" else None
        self.domain = build_domain(trees, original.n_features, binary, lower, upper, integer)
        self.region = RegionSpec(
            margin=region_margin(original, cfg.eta),
            plausibility=pl_model,
            delta_abs=None if self.plausibility is None else self.plausibility.delta_abs,
        )
        self.oracle = SeparationOracle(
            self.domain, ScoreModel.from_ensemble(original), self.region, seed=cfg.seed
        )
        # the screening pool is built by the first faithful loop that screens
        self._pool_rows = X if cfg.pool_per_row > 0 and not self.oracle.can_enumerate() else None
        # initial samples: training rows inside the region (domain, margin, plausibility)
        inside = self.domain.contains(X) & margin_mask(original, X, self.region.margin)
        if self.plausibility is not None:
            from pace_cert.region.masks import plausibility_mask

            inside &= plausibility_mask(self.plausibility, X)
        self.samples_dropped = int((~inside).sum())
        Xin = X[inside]
        cells = self.domain.cell_index(Xin)
        _, first = np.unique(cells, axis=0, return_index=True)
        first = np.sort(first)
        self.samples_kept = int(inside.sum())
        self.X = self.domain.representatives(cells[first].reshape(-1, original.n_features))
        self.y0 = original.predict_index(self.X) if len(self.X) else np.zeros(0, np.int64)
        self._cells = {tuple(c) for c in cells[first]}
        self.l1_master = L1Master(seed=cfg.seed)  # warm-started across rounds
        self.learners: list[Tree] = list(original.trees)
        self.origin: list[str] = ["original"] * len(self.learners)
        self.history: list[HistoryEntry] = []
        self.l1_values: list[float] = []
        self.reduced_costs: list[float] = []
        # no faithful model of fewer trees of depth <= the original's (None: not known):
        # synth_phase's proofs and boundary witnesses (witness.py) raise it
        self.size_bound: int | None = None
        self.witnesses: dict[tuple[int, int], witness.Witness] = {}
        self.witness_bound: int | None = None
        self._witness_rows = 0  # samples already searched for witnesses (rows only grow)

    # ---------------------------------------------------------------- utilities
    def remaining(self) -> float | None:
        if self.deadline is None:
            return None
        return self.deadline - time.perf_counter()

    def _out_of_time(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0

    @contextlib.contextmanager
    def share(self, fraction: float) -> Iterator[None]:
        """Within the block, the deadline is ``fraction`` of the time left (no-op
        without a time limit); the overall deadline is restored afterwards."""
        left = self.remaining()
        deadline = self.deadline
        if left is not None:
            self.deadline = time.perf_counter() + fraction * max(left, 0.0)
        try:
            yield
        finally:
            self.deadline = deadline

    def add_sample(self, x: np.ndarray, y0: int | None = None) -> bool:
        """Add float32 point ``x`` (labelled ``y0``, the original's class index there,
        computed when None) unless a sample in its cell exists; True if added."""
        c = tuple(self.domain.cell_index(x[None, :])[0])
        if c in self._cells:
            return False
        self._cells.add(c)
        self.X = np.vstack([self.X, x[None, :]])
        label = self.original.predict_index(x[None, :])[0] if y0 is None else y0
        self.y0 = np.r_[self.y0, np.int64(label)]
        return True

    def matrix(self, learners: list[Tree]) -> np.ndarray:
        H = (
            leaf_values(learners, self.X)
            if len(self.X)
            else np.zeros((0, len(learners), self.original.n_classes))
        )
        return margin_rows(H, self.y0)

    def candidate(self, sol: MasterSolution, learners: list[Tree]) -> tuple[Ensemble, list[int]]:
        return fold(
            learners,
            sol.weights,
            sol.offsets,
            self.original.classes,
            self.origin,
            self.original.n_features,
            self.cfg.weight_tol,
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

    def _ensure_pool(self) -> None:
        """Seed the oracle's screening pool from the training rows, once (large domains)."""
        if self._pool_rows is None:
            return
        n = self.oracle.seed_pool(self._pool_rows, self.cfg.pool_per_row)
        self._pool_rows = None
        self.say(f"screening pool: {n} points clearly inside the region")

    # ---------------------------------------------------------------- one phase
    def faithful_loop(
        self,
        phase: str,
        solve: Callable[[np.ndarray], MasterSolution],
        learners: list[Tree],
        certify: bool = True,
        make: Callable[[MasterSolution], tuple[Ensemble, list[int]]] | None = None,
        screen: bool = True,
        max_rounds: int | None = None,
    ) -> PhaseResult:
        """Solve, separate, add samples, repeat until every pair is proved.

        ``make`` turns a master solution into the candidate to certify and the learners
        it keeps (default: :meth:`candidate`, the weights folded into the learners).

        Every round first screens the candidate with numpy (every cell of a small domain,
        else a pool of points inside the region); CP-SAT runs only when the screen finds
        nothing, and its points grow the pool. With ``certify=False`` the screen alone is
        used and the loop ends, uncertified, when it finds nothing: used for intermediate
        L1 models of the generation phase, which are never output. ``screen=False``
        skips the screen (CP-SAT only): for a candidate expected to be faithful.
        ``max_rounds`` (default ``cfg.max_rounds``): solves before giving up uncertified.
        """
        rounds = self.cfg.max_rounds if max_rounds is None else max_rounds
        if screen:
            self._ensure_pool()
        screenable = screen and (self.oracle.can_enumerate() or self.oracle.pool_size() > 0)
        screen_only = not certify and screenable
        first: list[float] = []

        def done(res: PhaseResult) -> PhaseResult:
            res.first_objective = first[0] if first else None
            return res

        for it in range(1, rounds + 1):
            sol = solve(self.matrix(learners))
            if it == 1:
                first.append(sol.objective)
            cand, keep = self.candidate(sol, learners) if make is None else make(sol)
            left = self.remaining()
            if left is not None and left <= 0:
                return done(PhaseResult(None, [], it, False))
            sm, e_req = ScoreModel.from_ensemble(cand), required_margin(cand)
            results = self.oracle.screen(sm, e_req, self.cfg.enumeration_per_pair) if screen else []
            if not results and screen_only:
                res = PhaseResult(None, [], it, False, sol.objective, sol.optimal, screened=True)
                return done(res)
            climbed = False
            if not results and screen and self.cfg.climb_steps and not self.oracle.can_enumerate():
                results = self.oracle.climb(
                    sm, e_req, self.cfg.enumeration_per_pair,
                    steps=self.cfg.climb_steps, deadline=self.deadline,
                )  # fmt: skip
                climbed = bool(results)
                left = self.remaining()
            if not results:
                results = self.oracle.separate(
                    sm, e_req, threads=self.cfg.threads, time_limit=left,
                    until_found=self.cfg.lazy_proofs,
                )  # fmt: skip
            found = [r for r in results if r.status == "FEASIBLE"]
            proved = sum(r.status == "INFEASIBLE" for r in results)
            if found and (climbed or any(r.seconds > 0 for r in results)):  # new ground
                self.oracle.grow_pool([r.point for r in found])
                if self.cfg.neighbours:
                    found += self.oracle.neighbours(
                        [r.point for r in found], sm, e_req, self.cfg.neighbours
                    )
            how = (
                f"{len(found)} separating samples by {'climbing' if climbed else 'screening'}"
                if found and not proved and all(r.seconds == 0.0 for r in results)
                else f"pairs proved {proved}/{len(results)}"
            )
            self.say(
                f"[{phase}] round {it}: {cand.n_trees} trees, objective {sol.objective:.6g}, "
                f"{how}, samples {len(self.X)}"
            )
            if not found:
                certified = proved == len(results)
                return done(
                    PhaseResult(
                        cand if certified else None,
                        results,
                        it,
                        certified,
                        sol.objective,
                        sol.optimal,
                        [float(sol.weights[t]) for t in keep],
                        list(keep),
                        sol.offsets,
                    )
                )
            new = 0
            points = np.array([r.point for r in found], np.float32)
            by_original = self.original.predict_index(points)
            by_candidate = cand.predict_index(points)
            for r, yo, yc in zip(found, by_original, by_candidate):
                x = r.point
                if not self.add_sample(x, int(yo)):
                    continue
                new += 1
                self.history.append(
                    HistoryEntry(
                        phase.split("-")[0],  # l0-reweighted samples are L0-phase samples
                        it,
                        r.y0,
                        r.y,
                        x,
                        int(yo),
                        int(yc),
                    )
                )
            if new == 0:
                # every separating sample is already a row: the master's weights meet
                # these rows in its own arithmetic only (LP tolerance, or a margin below
                # the float32 guard E_req of the folded model). Solving again gives the
                # same weights, so stop this loop uncertified instead of cycling.
                A = self.matrix(learners)
                low = float((A @ np.r_[sol.weights, sol.offsets[1:]]).min()) if len(A) else 1.0
                on_found = own_margin(
                    cand, np.array([r.point for r in found]), np.array([r.y0 for r in found])
                )
                self.say(
                    f"[{phase}] round {it}: the {len(found)} separating samples are all rows "
                    f"already (smallest master row {low:.3g}, candidate margin on them "
                    f"{float(on_found.min()):.3g}, float32 guard "
                    f"{e_req:.3g}, status {sol.status}); stopping"
                )
                return done(PhaseResult(None, [], it, False, sol.objective, sol.optimal))
        return done(PhaseResult(None, [], rounds, False))

    def l1_phase(
        self, learners: list[Tree], certify: bool = True
    ) -> tuple[PhaseResult, MasterSolution | None]:
        last: dict[str, MasterSolution] = {}

        def solve(A: np.ndarray) -> MasterSolution:
            if self.cfg.l1_warm_start:
                s = self.l1_master.solve(A, len(learners))
            else:
                s = solve_l1(A, len(learners), seed=self.cfg.seed)
            last["sol"] = s
            return s

        res = self.faithful_loop("l1", solve, learners, certify)
        if res.objective is not None:
            self.l1_values.append(res.objective)
        return res, last.get("sol")

    def _l0_master(
        self, learners: list[Tree], l1_value: float, warm: np.ndarray | None
    ) -> tuple[Callable[[np.ndarray], MasterSolution], dict[str, MasterSolution]]:
        """The L0 master as a function of the sample matrix, and the dict holding its last
        solution. State (the cover's cuts, the last support) persists across calls, so a
        caller may solve once, do something else, and then run the loop on it."""
        big_m = self.cfg.kappa * max(l1_value, 1e-9)
        if warm is not None:  # keep the warm start (e.g. the prune-only solution) feasible
            big_m = max(big_m, 2.0 * float(np.max(warm[: len(learners)], initial=0.0)))
        state: dict = {"cover": None}
        last: dict[str, MasterSolution] = {}

        def solve(A: np.ndarray) -> MasterSolution:
            left = self.remaining()
            again = last.pop("again", False)  # re-solve an incumbent with more time
            tl = self.cfg.l0_time_limit * (4 if again else 1)
            if left is not None:
                tl = max(left, 1) if again else min(tl, max(left, 1))
            start = last.get("sol")

            by_support: dict[tuple[int, ...], MasterSolution] = {}

            def reweighted(s: MasterSolution) -> MasterSolution:
                """``self._robust(A, ., s)``, once per support within this solve."""
                key = tuple(np.flatnonzero(s.weights > 0).tolist())
                if key not in by_support:
                    by_support[key] = self._robust(A, len(learners), s)
                return dataclasses.replace(by_support[key], optimal=s.optimal, status=s.status)

            def usable(s: MasterSolution) -> bool:
                return self.clears_own_rows(reweighted(s), learners)

            if start is not None and not again:  # cheap first: is the last support feasible?
                on = np.flatnonzero(start.weights > 0)
                kept = solve_on_support(A, len(learners), on, seed=self.cfg.seed)
                if kept is not None:  # optimal stays optimal; a time-limited incumbent stays one
                    kept = dataclasses.replace(kept, optimal=start.optimal)
                if kept is not None and usable(kept):
                    last["sol"] = kept
                    return reweighted(kept)
                if kept is not None:  # feasible in float64 only: the cover skips it from now on
                    state["exact"] = True
            w = warm if start is None else np.r_[start.weights, start.offsets[1:]]
            # the rows P needs (each once, none another implies), for the licence check
            # and the MILP alike
            rows = None if state.get("exact") else minimal_rows(A, len(learners))
            solver = None if rows is None else self._l0_solver(rows, len(learners))
            if solver is None:  # the cover: no big-M, any weights on the support
                ws = None if w is None else np.flatnonzero(np.asarray(w[: len(learners)]) > 0)
                fb = None  # the smallest certified model's support, when over this pool
                if self.best is not None and max(self.best[0].keep, default=-1) < len(learners):
                    fb = np.asarray(self.best[0].keep, np.int64)
                if state["cover"] is None:
                    state["cover"] = L0Cover(
                        len(learners), self.original.n_classes - 1, seed=self.cfg.seed
                    )
                    if warm is not None:
                        state["cover"].prefer(np.asarray(warm[: len(learners)]))
                s = state["cover"].solve(
                    minimal_rows(A, len(learners)) if rows is None else rows,
                    warm_support=ws,
                    deadline=time.perf_counter() + tl,
                    fallback=fb,
                    usable=usable,
                    progress=lambda m: self.say(f"[l0] {m}"),
                )
                last["sol"] = s
                self.l0_optimal = s.optimal
                return reweighted(s)  # computed already when the cover tested it
            # rows were only added since the last solve: its optimum is a lower bound
            lb = round(start.objective) if start is not None and start.optimal else 0
            report = {}
            if solver is solve_l0_gurobi:  # HiGHS' big-M solve has no reports
                report = {
                    "progress": lambda m: self.say(f"[l0] {m}"),
                    "progress_seconds": l0_cover.PROGRESS_SECONDS,
                }
            try:
                s = solver(
                    rows,
                    len(learners),
                    big_m,
                    warm=w,
                    threads=1,
                    seed=self.cfg.seed,
                    time_limit=tl,
                    min_support=lb,
                    **report,
                )
            except NoIncumbent as e:
                # no incumbent by the time limit (the warm support fails the new rows),
                # or a row needs more than the big-M: the cover has neither problem
                self.say(f"[l0] {e}; switching to the cover")
                state["exact"] = True
                return solve(A)
            if not meets_rows(A, s):
                # big-M trickle: u below the integrality tolerance counted as 0 while
                # w = u * M still carried the rows; the support is not what was solved.
                # The cover has no big-M: use it from now on for this master.
                self.say("[l0] big-M MILP solution violates its rows; switching to the cover")
                state["exact"] = True
                return solve(A)
            if not usable(s):
                self.say("[l0] MILP support fails its rows in float32; switching to the cover")
                state["exact"] = True
                return solve(A)
            last["sol"] = s
            self.l0_optimal = s.optimal
            self.big_m = big_m
            return reweighted(s)  # computed already by usable()

        return solve, last

    def prune_phase(
        self, learners: list[Tree], l1_value: float, warm: np.ndarray | None, name: str
    ) -> None:
        """The L0 loop, with an anytime fallback; certified models offered as ``name``,
        ``name + "-grow"`` and ``name + "-reweighted"``.

        Under a time limit, and when a certified model with more than one learner exists,
        the L0 loop first gets ``cfg.l0_share`` of the time left. On large domains it may
        not converge (every optimal support of the samples is falsified in turn); if it
        has not certified by then, reweighted L1 (:meth:`reweight_phase`, first costs
        from the last L0 candidate's support) turns part of the budget into certified,
        smaller models, and stops once the support stops shrinking (quick, but often
        little smaller than the L1 model). Then column growth from the last L0
        candidate's support (:meth:`grow_phase`, unless ``cfg.fallback == "reweight"``)
        adds learners until a max-margin weighting of them certifies, smaller than the
        best model so far (slower, usually much smaller). The L0 loop then
        continues on the same master (its cuts, last support and samples kept) with the
        time still left, so a loop that converges slowly can still finish."""
        solve, last = self._l0_master(learners, l1_value, warm)
        left = self.remaining()
        if left is not None and self.best is not None and self.best[0].model.n_trees > 1:
            with self.share(self.cfg.l0_share):
                l0 = self.faithful_loop("l0", solve, learners)
            if l0.certified:
                self._offer_l0(l0, name)
                self._l0_improve(l0, solve, last, learners, name)
                return
            guide = last["sol"].weights > 0 if "sol" in last else None
            self._offer(self.reweight_phase(self.best[0], learners, guide), name + "-reweighted")
            if self.cfg.fallback == "grow" and guide is not None and guide.any():
                size = self.best[0].model.n_trees - 1
                if int(guide.sum()) <= size and not self._out_of_time():
                    self._offer(
                        self.grow_phase(learners, np.flatnonzero(guide), size), name + "-grow"
                    )
        l0 = self.faithful_loop("l0", solve, learners)
        self._offer_l0(l0, name)
        self._l0_improve(l0, solve, last, learners, name)

    def _l0_improve(
        self,
        res: PhaseResult,
        solve: Callable[[np.ndarray], MasterSolution],
        last: dict,
        learners: list[Tree],
        name: str,
    ) -> None:
        """After an L0 loop certified a support its MILP had not proved optimal (a
        per-solve time limit stopped it), re-solve with the time left, the certified
        support as the incumbent: a smaller support goes through the faithful loop
        again, the same one proved optimal sets ``l0_optimal``. Stops when a re-solve
        brings neither."""
        while res.certified and not res.optimal and res.model is not None:
            left = self.remaining()
            if left is not None and left <= 1.0:
                return
            size = res.model.n_trees
            last["again"] = True
            self.say(
                f"[l0] {size} learners certified but not proved minimal; re-solving the L0 "
                "master" + ("" if left is None else f" with up to {left:.0f} s")
            )
            nxt = self.faithful_loop("l0", solve, learners)
            self._offer_l0(nxt, name)
            if not nxt.certified or nxt.model is None:
                return
            if nxt.model.n_trees >= size and not nxt.optimal:
                return
            self.say(
                f"[l0] re-solved: {nxt.model.n_trees} learners"
                + (" (optimal on the samples)" if nxt.optimal else "")
            )
            res = nxt

    def _offer_l0(self, res: PhaseResult, name: str) -> None:
        """Offer an L0 loop's result; remember its size when its support was proved
        optimal on the samples (no faithful weighting of the pool has fewer learners)."""
        if res.certified and res.optimal and res.model is not None:
            self.l0_proved = res.model.n_trees
        self._offer(res, name)

    def reweight_phase(
        self, start: PhaseResult, learners: list[Tree], guide: np.ndarray | None = None
    ) -> PhaseResult:
        """Iteratively reweighted L1 (Candes, Wakin and Boyd 2008) from the certified
        ``start``, an anytime route towards the L0 optimum: the faithful loop on
        min sum_t c_t w_t with c_t = 1 / (w_t + eps * max w) from the last certified
        weights, so learners with small or no weight become expensive and drop out.
        Each round is an ordinary L1 faithful loop (few separation rounds, as it moves
        the weights smoothly); it stops when the support no longer shrinks, a loop does
        not certify, or after ``cfg.reweight_rounds``. ``guide`` (a boolean mask over
        learners, e.g. the last L0 candidate's support) sets the first costs instead: 1 on
        the mask, 1 / eps elsewhere. Returns the smallest certified result (``start`` if
        none is smaller)."""
        best = start
        n = len(learners)
        for k in range(self.cfg.reweight_rounds):
            left = self.remaining()
            if (left is not None and left <= 0) or best.model.n_trees <= 1:
                break
            w = np.zeros(n)
            if k == 0 and guide is not None and guide.any():
                w[guide] = 1.0
            else:
                w[best.keep] = best.weights
            cost = 1.0 / (w + self.cfg.reweight_eps * float(w.max()))
            cost /= cost.min()
            lp = L1Master(seed=self.cfg.seed)  # warm within the loop: costs fixed

            def solve(A: np.ndarray, lp: L1Master = lp, cost: np.ndarray = cost) -> MasterSolution:
                s = lp.solve(np.hstack([A[:, :n] / cost, A[:, n:]]), n)  # w' = c w
                return dataclasses.replace(s, weights=s.weights / cost)

            res = self.faithful_loop("l0-reweighted", solve, learners)
            if not res.certified or res.model is None:
                break
            if res.model.n_trees >= best.model.n_trees:
                break
            self.say(f"[l0-reweighted] certified {res.model.n_trees} learners")
            best = res
        return best

    def grow_phase(self, learners: list[Tree], support: np.ndarray, max_size: int) -> PhaseResult:
        """Column growth from ``support`` (the last, refuted L0 candidate): the faithful
        loop on the max-margin LP (:func:`solve_max_margin`) restricted to a
        growing set R of learners. While no weighting of R meets every sample with a
        normalised margin of at least ``cfg.grow_rho``, the learner outside R whose
        column the LP's duals price highest joins R (a column-generation step of the
        max-margin LP over the pool), so R grows only as far as the samples force it.
        Max-margin weights, not a vertex of the feasible cone, so each candidate tends to
        hold near its samples too. Gives up (uncertified) once R would exceed
        ``max_size`` learners (e.g. one fewer than the smallest certified model)."""
        n = len(learners)
        R = [int(t) for t in support]

        class _TooLarge(Exception):
            pass

        def solve(A: np.ndarray) -> MasterSolution:
            pool = None  # every learner's normalised column, once per call when needed
            while len(R) <= max_size:
                mm, sol = margin_on_support(A, n, np.array(R), seed=self.cfg.seed)
                if mm.rho >= self.cfg.grow_rho:
                    return dataclasses.replace(sol, optimal=False, status="grown")
                if pool is None:
                    pool = normalise_columns(A, n)[0][:, :n]
                gain = mm.duals @ pool - mm.gamma
                gain[R] = -np.inf
                if not gain.max() > 0:  # R's margin is the whole pool's: no R is enough
                    break
                R.append(int(np.argmax(gain)))
            raise _TooLarge

        try:
            res = self.faithful_loop("l0-grow", solve, learners)
        except _TooLarge:
            self.say(
                f"[l0-grow] no weighting of at most {max_size} learners meets the samples "
                f"with a normalised margin of {self.cfg.grow_rho:g}"
            )
            return PhaseResult(None, [], 0, False)
        if res.certified and res.model is not None:
            self.say(f"[l0-grow] certified {res.model.n_trees} learners")
        return res

    def _robust(self, A: np.ndarray, n_learners: int, sol: MasterSolution) -> MasterSolution:
        """Same support, max-margin weights (``cfg.robust_weights``); else ``sol``."""
        if not self.cfg.robust_weights:
            return sol
        mm = max_margin_on_support(
            A, n_learners, np.flatnonzero(sol.weights > 0), seed=self.cfg.seed
        )
        if mm is None:
            return sol
        return dataclasses.replace(mm, optimal=sol.optimal, status=sol.status)

    def boost_phase(self, max_size: int) -> PhaseResult:
        """Totally corrective boosting (``boost.py``) as the master: a support of at most
        ``max_size`` learners mixing pool and newly priced trees, certified by the oracle
        like any other candidate. Gives up (uncertified) when the budget cannot be met."""
        from pace_cert.learners.boost import boost

        class _NoSmaller(Exception):
            pass

        depth = max(1, self.original.max_depth)

        keep = [] if self.best is None else list(self.best[0].keep)
        starts: list[int | None] = [None, *keep[: self.cfg.boost_restarts]]

        def solve(A: np.ndarray) -> MasterSolution:
            """Boost from several starts; every new tree a run used joins the pool (the
            enriched L0 may combine them even when no run meets the budget)."""
            pool_n = len(self.learners)
            best = None
            for i, st in enumerate(starts):
                left = self.remaining()
                if left is not None and left <= 0:
                    break
                res = boost(
                    self.X,
                    self.y0,
                    self.learners[:pool_n],
                    self.domain,
                    depth,
                    self.original.n_classes,
                    max_size,
                    start=st,
                    seed=self.cfg.seed + 101 * i,
                    deadline=self.deadline,
                    pool_cols=A[:, :pool_n],  # the loop's matrix: pool columns, once
                )
                if res is None:
                    continue
                at = len(self.learners)
                self.learners.extend(res.new_trees)
                self.origin.extend(["new"] * len(res.new_trees))
                fits = res.feasible and res.support <= max_size
                if fits and (best is None or res.support < best[0]):
                    w = np.zeros(at + len(res.new_trees))
                    w[:pool_n] = res.weights[:pool_n]
                    w[at:] = res.weights[pool_n:]
                    best = (res.support, w, res.offsets)
            if best is None:
                raise _NoSmaller
            w = np.r_[best[1], np.zeros(len(self.learners) - len(best[1]))]
            return MasterSolution(w, best[2], float(best[0]), None, False, "boost")

        try:
            return self.faithful_loop("boost", solve, self.learners)
        except _NoSmaller:
            self.say(f"[boost] no support of at most {max_size} learners on the samples")
            return PhaseResult(None, [], 0, False)

    def refit_phase(self, max_size: int) -> PhaseResult:
        """Supports of at most ``max_size`` (at most 3) tree partitions with free leaf
        values (``refit.py``), smallest size first. Size 1 and 2: sets of pool
        partitions; size 2 also each partition with partners; size 3 pairs of the best
        model's partitions, then one of them with any pool partition, each pair with
        partners. Partitions of the best certified model come first, partners are
        built from the pool's splits. A set is tried when its joint partition is
        label-pure on the samples: the faithful loop on its indicator columns
        (max-margin LP over leaf values), until certified or the LP cannot meet the
        samples; a refuted set leaves its separating samples behind, which rule out
        others. Returns the first certified result (uncertified if none); its trees are
        marked new, their leaf values folded (weight 1 each); ``keep`` is empty (not a
        weighting of the pool)."""
        t0 = time.perf_counter()
        k = self.original.n_classes
        best = list(self.best[0].model.trees) if self.best is not None else []
        trees: list[Tree] = []  # one per distinct partition: the best model's, then the pool's
        seen: set[bytes] = set()
        for t in [*best, *self.learners]:
            if refit.partition_key(t) not in seen:
                seen.add(refit.partition_key(t))
                trees.append(t)
        n_best = len({refit.partition_key(t) for t in best})
        splits = refit.pool_splits(trees, self.domain.thresholds)
        depth = max(1, self.original.max_depth)
        tried: set[bytes] = set()

        def pending(chosen: list[Tree]) -> bool:
            key = b"|".join(refit.partition_key(t) for t in chosen)
            if key in tried:
                return False
            tried.add(key)
            return True

        def first_certified(sets) -> PhaseResult | None:
            """Try sets from the generator ``sets()`` (re-run after every refuted set,
            as the samples grow) until one certifies or none is left."""
            while not self._out_of_time():
                chosen = next((c for c in sets() if pending(c)), None)
                if chosen is None:
                    return None
                res = self._refit_loop(chosen, k)
                if res is not None and res.certified:
                    return res
            return None

        def pool_sets(size: int):
            ids = refit.leaf_ids(trees, self.X)
            for c in refit.pure_sets(ids, self.y0, k, size):
                yield [trees[j] for j in c]

        def with_partners(base: list[Tree]):
            ids = refit.leaf_ids(base, self.X)
            joint = np.unique(ids.T, axis=0, return_inverse=True)[1].ravel()
            cells = self.domain.cell_index(self.X)
            th = self.domain.thresholds
            for c in refit.partners(joint, self.y0, cells, splits, th, k, depth):
                yield [*base, c]

        def bases(size: int):
            if size == 2:
                yield from ([a] for a in trees)
            else:
                yield from (
                    [trees[i], trees[j]] for i in range(n_best) for j in range(i + 1, n_best)
                )
                yield from (
                    [trees[i], trees[j]] for i in range(n_best) for j in range(n_best, len(trees))
                )

        res = None
        top = min(max_size, 3)
        for size in range(1, top + 1):
            if size <= 2:
                res = first_certified(lambda size=size: pool_sets(size))
            if res is None and size >= 2:
                reported = time.perf_counter()
                for i, base in enumerate(bases(size)):
                    res = first_certified(lambda base=base: with_partners(base))
                    if res is not None or self._out_of_time():
                        break
                    if time.perf_counter() - reported >= l0_cover.PROGRESS_SECONDS:
                        reported = time.perf_counter()
                        self.say(
                            f"[refit] {size} partitions: partners searched for {i + 1} "
                            f"bases, {len(tried)} sets tried, {reported - t0:.0f} s"
                        )
            if res is not None:
                self.say(f"[refit] certified {res.model.n_trees} learners with re-fitted leaves")
                return res
            if self._out_of_time():
                break
        self.say(
            f"[refit] no certified support of at most {top} partition{'s' if top > 1 else ''} "
            f"({len(tried)} sets tried, {time.perf_counter() - t0:.1f} s)"
        )
        return PhaseResult(None, [], 0, False)

    def synth_phase(self, max_size: int, propose: bool = True) -> PhaseResult:
        """Counterexample-guided synthesis (``synth.py``): for k = 1, 2, ... up to
        ``max_size``, CP-SAT proposes k trees of depth <= 2 whose joint partition is
        label-pure on the samples; the refit loop fits their leaf values and the oracle
        certifies them or adds separating samples, and CP-SAT proposes again. When
        CP-SAT proves that no k trees are pure on the samples, no model of k such trees
        is faithful in the region: ``self.size_bound`` becomes k + 1 and k grows.
        Returns the first certified result (uncertified if none in time).

        ``propose=False``: proofs only, each capped at ``cfg.bound_seconds`` -- the phase
        ends at the first k for which CP-SAT finds a pure set or stops at its cap."""
        k_cls = self.original.n_classes
        depth = min(2, max(1, self.original.max_depth))
        th = self.domain.thresholds
        t0 = time.perf_counter()
        size = self.size_bound or 1
        exclude: list = []
        hint = None
        retry: float | None = None  # the time left, after a solve stopped at its cap
        while size <= max_size:
            left = self.remaining()
            if left is not None and left <= 0:
                break
            cells = self.domain.cell_index(self.X)
            # proofs alone are a side step before the other phases: a tenth of the time left
            limit = self.cfg.synth_seconds if propose else self.cfg.bound_seconds
            cap = limit if left is None else min(left if propose else left / 10, limit)
            cap, retry = (cap if retry is None else retry), None
            res = synth.synthesize(
                cells, self.y0, k_cls, size, depth,
                time_limit=cap, threads=self.cfg.synth_threads or self.cfg.threads,
                seed=self.cfg.seed, exclude=exclude, hint=hint,
            )  # fmt: skip
            if res.status == "infeasible":
                self.size_bound = size + 1
                self.say(
                    f"[synth] no {size} tree{'s' if size > 1 else ''} of depth {depth} "
                    f"label-pure on the {len(self.X)} samples ({res.seconds:.1f} s): a "
                    f"faithful model of this family has at least {size + 1} trees"
                )
                size, exclude, hint = size + 1, [], None
                continue
            if not propose:
                break
            if res.status != "found" or not res.shapes:
                left = self.remaining()
                if left is None or left <= cap + 1.0:
                    self.say(f"[synth] {size} trees: CP-SAT stopped at {res.seconds:.0f} s")
                    break
                # nothing runs after this phase: give the same question all the time left
                self.say(
                    f"[synth] {size} trees: CP-SAT stopped at {res.seconds:.0f} s; "
                    f"again with the {left:.0f} s left"
                )
                retry = left
                continue
            before = len(self.X)
            trees = [synth.shape_tree(s, th, k_cls) for s in res.shapes]
            out = self._refit_loop(trees, k_cls) if trees else None
            if out is not None and out.certified:
                self.say(
                    f"[synth] certified {out.model.n_trees} trees "
                    f"({time.perf_counter() - t0:.0f} s)"
                )
                return out
            if len(self.X) == before:  # no leaf values meet the samples: ask for others
                exclude.append(res.shapes)
            hint = res.shapes
        return PhaseResult(None, [], 0, False)

    def _refit_loop(self, chosen: list[Tree], k: int) -> PhaseResult | None:
        """The faithful loop over the free leaf values of the partitions ``chosen``;
        None when the max-margin LP cannot meet the samples (at once or after some)."""
        ind = [x for t in chosen for x in refit.indicators(t, k)]
        n = len(ind)

        class _Refuted(Exception):
            pass

        def solve(A: np.ndarray) -> MasterSolution:
            sol = max_margin_on_support(A, n, np.arange(n), seed=self.cfg.seed)
            if sol is None:
                raise _Refuted
            return dataclasses.replace(sol, objective=float(len(chosen)))

        def make(sol: MasterSolution) -> tuple[Ensemble, list[int]]:
            built, kept = refit.assemble(chosen, sol.weights, k)
            model, _ = fold(
                built,
                np.ones(len(built)),
                sol.offsets,
                self.original.classes,
                ["new"] * len(built),
                self.original.n_features,
                0.0,
            )
            return model, kept

        try:
            res = self.faithful_loop("refit", solve, ind, make=make)
        except _Refuted:
            return None
        if not res.certified or res.model is None:
            return res
        n_out = res.model.n_trees
        return dataclasses.replace(res, weights=[1.0] * n_out, keep=[], offsets=None)

    def _warm_from_best(self) -> np.ndarray | None:
        """The smallest certified model so far as an L0 start over the current pool."""
        if self.best is None or self.best[0].offsets is None:
            return None
        res = self.best[0]
        w = np.zeros(len(self.learners))
        w[res.keep] = res.weights
        return np.r_[w, res.offsets[1:]]

    def _l0_solver(self, rows: np.ndarray, n_learners: int):
        """The big-M MILP solver to call on the margin ``rows`` P needs
        (``minimal_rows``), or None for the cover (``l0_cover.py``).

        auto: gurobipy when installed and the MILP fits its pip licence, else the cover
        (on cancer RF 25 x d2, eta = delta = 0.1, 120 s: 28 L0 rounds with gurobipy,
        13 with the cover, 10 with HiGHS' big-M MILP)."""
        choice = self.cfg.milp
        if choice == "highs":
            return solve_l0
        if choice == "cover":
            return None
        if not gurobi_available():
            if choice == "gurobi":
                self.say("gurobipy is not installed; using the L0 cover instead")
            return None
        n_vars, n_cons = l0_size(rows, n_learners)
        if max(n_vars, n_cons) > GUROBI_SIZE_LIMIT:
            if not getattr(self, "_said_gurobi", False):
                self.say(
                    f"L0 problem has {n_vars} variables and {n_cons} constraints, beyond the "
                    f"gurobipy pip licence ({GUROBI_SIZE_LIMIT}); using the L0 cover"
                )
                self._said_gurobi = True
            return None
        self.used_gurobi = True
        return solve_l0_gurobi

    # ---------------------------------------------------------------- modes
    def run(self) -> CompressResult:
        """prune: L1 → L0 on the original trees. generate: L1 → generation (L1 support).
        prune and pace certify the original with its shared splits merged
        (``merge_phase``) before the L1 loop when the size bound proves it minimal (or,
        failing that, the same without its unwitnessed trees when that is as small as
        the bound), else after it when it is smaller than the L1 model. pace: L1 → L0 on
        the original trees (kept as a fallback) → for depth <= 2 originals, CP-SAT proofs of a lower
        bound on the size (``synth_phase`` without candidates; a pruned model of that
        size is minimal and ends the run) → boosting for a smaller support
        (``boost.py``) → L1 generation → L0 on the enriched ensemble warm-started from
        the smallest certified model → one to three tree partitions with re-fitted
        leaves (``refit.py``, when the best is larger) → for depth <= 2 originals, CP-SAT
        synthesis of fewer trees (``synth.py``), which also raises the lower bound; the
        smallest certified model wins, so PACE is never larger than prune-only, and it
        stops once the best model is as small as the bound."""
        cfg = self.cfg
        self.big_m = None
        self.pricing, self.stop = "none", "not run"
        self.say(
            f"original: {self.original.n_trees} trees, {self.original.n_classes} classes; "
            f"{len(self.X)} distinct samples in the region ({self.samples_dropped} rows dropped)"
        )
        self.best: tuple[PhaseResult, str] | None = None
        self.l0_optimal: bool | None = None
        self.l0_proved: int | None = None  # size of a certified, optimally solved L0 model
        self._witness_bound()
        pace = cfg.mode == "pace"
        use_merge = cfg.mode != "generate" and cfg.merge_original
        merged = len(merge.group_by_structure(self.learners))  # the original trees so far
        if not use_merge or merged == len(self.learners):
            merged = 0
        trimmed = self._trimmed_size() if use_merge else None
        first = None  # tried before the L1 loop when it would be proved minimal at once
        if merged and (self.size_bound or 0) >= merged:
            first, merged = self.merge_phase(), 0  # not again after the L1 loop
        elif trimmed is not None and trimmed == self.size_bound:
            first = self.merge_phase(trim=True)
        if first is not None:
            self._offer(first, "merge")
            if self._minimal():
                self.stop = STOP_PROVED_MINIMAL if pace else self.stop
                self._say_minimal()
                return self._result()
        l1, l1_sol = self.l1_phase(self.learners)
        if l1.certified:
            self._offer(l1, "l1" if cfg.mode != "generate" else "l1-original")
        if merged and (self.best is None or self.best[0].model.n_trees > merged):
            self._offer(self.merge_phase(), "merge")  # a smaller certified fallback
        self._witness_bound()  # the samples the L1 loop added
        if cfg.mode != "generate" and self._minimal():  # nothing smaller can be faithful
            self.stop = STOP_PROVED_MINIMAL if pace else self.stop
            self._say_minimal()
            return self._result()
        if cfg.mode in ("prune", "pace") and l1.certified and l1_sol is not None:
            warm = np.r_[l1_sol.weights, l1_sol.offsets[1:]]
            with self.share(cfg.pace_prune_share if pace else 1.0):
                self.prune_phase(self.learners, l1_sol.objective, warm, "l0")
        self._witness_bound()  # the samples the loops added
        if pace and self._minimal():
            self.stop = STOP_PROVED_MINIMAL
            self._say_minimal()
            return self._result()
        synth_on = pace and cfg.synth_size > 0 and self.original.max_depth <= 2
        if synth_on and self.best is not None and self.best[0].model.n_trees > 1:
            self.synth_phase(self.best[0].model.n_trees - 1, propose=False)
            if self._minimal():
                self.stop = STOP_PROVED_MINIMAL
                self._say_minimal()
                return self._result()
        if cfg.mode in ("pace", "generate") and l1.certified:
            l1, l1_sol = self.enrich(l1, l1_sol)
            if cfg.mode == "generate" and l1.certified:
                self.best = (l1, "l1-generated")
            if pace and l1_sol is not None:
                warm = self._warm_from_best()
                if warm is None:
                    warm = np.r_[l1_sol.weights, l1_sol.offsets[1:]]
                A = self.matrix(self.learners)
                l1_value = self.l1_master.solve(A, len(self.learners)).objective
                self.prune_phase(self.learners, l1_value, warm, "l0-enriched")
        if pace and cfg.refit_size > 0 and self.best is not None and not self._minimal():
            size = self.best[0].model.n_trees
            if size > 1:
                self._offer(self.refit_phase(min(cfg.refit_size, size - 1)), "refit")
        if synth_on and self.best is not None:
            size = self.best[0].model.n_trees
            if size > 1 and not self._out_of_time():
                self._offer(self.synth_phase(min(cfg.synth_size, size - 1)), "synth")
                if self._minimal():
                    self._say_minimal()
        return self._result()

    def merge_phase(self, trim: bool = False) -> PhaseResult:
        """The original itself with its trees that share every split merged
        (``merge.py``): its own function in exact arithmetic, fewer trees. ``run`` tries
        it first when the size lower bound already equals its size (boosted stumps
        often: it is then the answer), else after the L1 loop when that is larger. The weights
        are the original's, scaled so the smallest sample margin is 1 like a master
        solution's; the oracle certifies the float32 model like any candidate (a
        separating sample -- rounding at a near-tie -- is kept and the phase gives up).
        Uncertified without a round when no two trees share their splits.

        ``trim``: also drop the trees that split no witnessed gap
        (:func:`witness.unwitnessed_trees`), each replaced by the mean of its leaf values
        (a constant, folded into the class offsets). A heuristic candidate, certified or
        refuted by the oracle like any other. Why it often holds: in a binary model whose
        dropped stump is the only split on its feature, the trimmed margin at x is the
        mean of the original's margins on the two sides of that split, which has the
        sign of every side inside the region unless the two sides carry opposite labels
        (a boundary witness, had the samples found it). ``run`` tries it first when what
        is left is as small as the size bound (then it is the answer, proved minimal);
        uncertified without a round when nothing is dropped or a sample disagrees. On
        domains small enough to enumerate, the trimmed candidate is screened on every
        cell before CP-SAT runs; the separating cells found are kept as samples."""
        n = self.original.n_trees
        learners = self.learners[:n]  # the pool starts with the original trees, in order
        w = np.asarray(self.original.weights, np.float64).copy()
        offsets = self.original.base - self.original.base[0]
        drop = self._unwitnessed() if trim else []
        same = len(merge.group_by_structure(learners)) == n
        if (same and not drop) or len(drop) == n or not len(self.X) or (w <= 0).any():
            return PhaseResult(None, [], 0, False)
        for i in drop:
            mean = learners[i].value[learners[i].leaves].mean(axis=0)
            offsets = offsets + w[i] * (mean - mean[0])
            w[i] = 0.0
        margins = self.matrix(learners) @ np.r_[w, offsets[1:]]
        low = float(margins.min())
        what = "the merged original" + (f" without {len(drop)} unwitnessed tree(s)" if drop else "")
        if low <= 0:  # merged only: cannot happen for samples inside the region
            self.say(f"[merge] {what} disagrees with the original on a sample; skipped")
            return PhaseResult(None, [], 0, False)
        sol = MasterSolution(w / low, offsets / low, float(np.sum(w / low)), None, True, "")
        # a trimmed candidate is a guess: on a small domain every cell is screened with
        # numpy first, so a refuted guess costs no CP-SAT round (the exact merge is the
        # original's own function: straight to the proof)
        screen = bool(drop) and self.oracle.can_enumerate()
        res = self.faithful_loop("merge", lambda _A: sol, learners, screen=screen, max_rounds=1)
        if not res.certified:
            self.say(f"[merge] {what} was not certified in its round; continuing")
        elif res.model is not None:
            self.say(f"[merge] certified {what}: {res.model.n_trees} trees")
        return res

    def _unwitnessed(self) -> list[int]:
        """Indices of the original trees that split no witnessed gap."""
        originals = self.learners[: self.original.n_trees]
        return witness.unwitnessed_trees(originals, self.witnesses.values())

    def _trimmed_size(self) -> int | None:
        """Trees of the merged original without its unwitnessed trees (``merge_phase``
        with ``trim``); None when no tree is unwitnessed or the bound is unknown."""
        if not self.witnesses:
            return None
        n = self.original.n_trees
        drop = set(self._unwitnessed())
        if not drop or len(drop) == n:
            return None
        kept = [t for i, t in enumerate(self.learners[:n]) if i not in drop]
        return len(merge.group_by_structure(kept))

    def _witness_bound(self) -> None:
        """Look for boundary witnesses among the samples (``witness.py``): pairs of
        region points one allowed cell apart on one feature that the original labels
        differently. Each gap needs an internal node of some tree, so the gaps witnessed
        bound every faithful model's size from below; raise ``size_bound`` to that."""
        depth = self.original.max_depth
        if depth < 1 or len(self.X) == self._witness_rows:
            return
        before = len(self.witnesses)
        new_rows = self.X[self._witness_rows :]
        if self._witness_rows == 0:  # the first look: every label change of a small domain
            new_rows = np.vstack([self.oracle.label_change_points(), new_rows])
        self._witness_rows = len(self.X)
        witness.find_witnesses(
            self.original,
            self.domain,
            new_rows,
            lambda Z: region_mask(self.original, self.region.margin, self.plausibility, Z),
            self.witnesses,
            limit=witness.MAX_WITNESSES,
        )
        if len(self.witnesses) == before:
            return
        self.witness_bound = witness.size_bound(len(self.witnesses), depth)
        if self.witness_bound > (self.size_bound or 0):
            self.size_bound = self.witness_bound
            self.say(
                f"[witness] {len(self.witnesses)} feature gaps where the original's label "
                f"changes inside the region: a faithful model of trees of depth <= {depth} "
                f"has at least {self.size_bound} trees"
            )

    def _minimal(self) -> bool:
        """The best certified model has as few trees as the proved lower bound."""
        return (
            self.best is not None
            and self.size_bound is not None
            and self.size_bound >= self.best[0].model.n_trees
        )

    def _say_minimal(self) -> None:
        assert self.best is not None
        self.say(
            f"[bound] {self.best[0].model.n_trees} trees is the smallest faithful model of "
            "this family in the region (size lower bound reached)"
        )

    def enrich(
        self, l1: PhaseResult, l1_sol: MasterSolution | None
    ) -> tuple[PhaseResult, MasterSolution | None]:
        """Grow the pool: boosting for a smaller support (pace), then column generation
        from the L1 duals. Returns the last L1 result and solution."""
        from pace_cert.learners.pricing import generate

        if self.cfg.mode == "pace":
            if self.best is not None and self.best[0].model.n_trees > 1:
                with self.share(self.cfg.pace_boost_share):
                    self._offer(self.boost_phase(self.best[0].model.n_trees - 1), "boost")
            # duals for the samples added since; intermediate, so screened only
            l1, l1_sol = self.l1_phase(self.learners, certify=False)
        if (l1.certified or l1.screened) and l1_sol is not None:
            share = self.cfg.pace_generate_share if self.cfg.mode == "pace" else 1.0
            with self.share(share):
                l1, l1_sol, self.pricing, self.stop = generate(self, l1, l1_sol)
        return l1, l1_sol

    def _offer(self, res: PhaseResult, name: str) -> None:
        """Keep the smallest certified model (trees, then leaves)."""
        if not res.certified or res.model is None:
            return
        if self.best is not None:
            cur = self.best[0].model
            if (cur.n_trees, cur.n_leaves) <= (res.model.n_trees, res.model.n_leaves):
                return
        self.best = (res, name)

    def _tree_sources(self, res: PhaseResult) -> tuple[list[float], list[int], list[list[int]]]:
        """Per tree of ``res.model``: its master weight (summed over merged learners),
        how many pool learners it merges, and the original trees among them (indices in
        the original). Results built outside the pool (refit, synth: ``keep`` empty)
        have one learner per tree, none of them an original tree."""
        assert res.model is not None
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

    def _result(self) -> CompressResult:
        self._witness_bound()
        best = self.best
        if best is not None and (self.size_bound or 0) > best[0].model.n_trees:
            # two proofs contradict each other: one of them is wrong; write neither
            raise RuntimeError(
                f"internal error: a certified model of {best[0].model.n_trees} trees and a "
                f"proved lower bound of {self.size_bound} trees; please report this"
            )
        k = self.original.n_classes
        certified = best is not None
        model = best[0].model if certified else self.original
        if certified:
            weights, merged, originals = self._tree_sources(best[0])
        else:  # the original is written: each tree is itself
            weights = [float(w) for w in self.original.weights]
            merged, originals = [1] * model.n_trees, [[t] for t in range(model.n_trees)]
        return CompressResult(
            original=self.original,
            compressed=model,
            certified=certified,
            status="certified" if certified else "inconclusive",
            proof=best[0].proof if certified else [],
            history=self.history,
            domain=self.domain,
            region=self.region,
            l1_values=self.l1_values,
            reduced_costs=self.reduced_costs,
            pricing=self.pricing,
            generation_stop=self.stop,
            samples_kept=self.samples_kept,
            samples_dropped=self.samples_dropped,
            e_req=required_margin(model) if certified else 0.0,
            big_m=self.big_m,
            l0_optimal=(
                None if self.l0_optimal is None else certified and self.l0_proved == model.n_trees
            ),
            seconds=time.perf_counter() - self.t0,
            plausibility=self.plausibility,
            weights=weights,
            merged=merged,
            original_trees=originals,
            phase=best[1] if certified else "",
            gurobi_used=getattr(self, "used_gurobi", False),
            schedule=self.oracle.schedule_for(self.cfg.threads, k * (k - 1)),
            race_linearization=self.oracle.race_linearization(),
            size_bound=self.size_bound,
            witnesses=list(self.witnesses.values()),
            witness_bound=self.witness_bound,
        )


def compress(
    original: Ensemble, X: np.ndarray, cfg: CompressConfig, progress: Progress | None = None
) -> CompressResult:
    """Run PACE in ``cfg.mode`` on ``original`` with training rows ``X`` (float32)."""
    return Pace(original, X, cfg, progress).run()
