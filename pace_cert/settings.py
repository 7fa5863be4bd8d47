"""Settings as data: what a user chooses, and the tuning of each stage, checked once.

:class:`CompressConfig` holds the user-facing fields (the CLI's flags) and a
:class:`Tuning` of frozen groups (master, search, generation, L0 fallbacks, PACE
phases, oracle). Every field is checked against one table, :data:`RULES`, when a
config is built; the CLI and the app report the same messages, naming the CLI flag
(``--eta must be >= 0, got -1``). A benchmark varies a setting by building another
config (:meth:`CompressConfig.of`, :meth:`CompressConfig.tuned`), never by patching a
module.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pace_cert.oracle.settings import BACKENDS, OracleSettings, ray_address_ok

MODES = ("pace", "prune", "generate", "tree")
OBJECTIVES = ("trees", "leaves")
CHOICES: dict[str, tuple[str, ...]] = {
    "mode": MODES,
    "objective": OBJECTIVES,
    "binary": ("infer", "none"),
    "bounds": ("none", "data"),
    "integer": ("infer", "none"),
    "milp": ("auto", "cover", "highs", "gurobi"),
    "l0.fallback": ("grow", "reweight"),
    "oracle.backend": BACKENDS,
}
MAX_SEED = 2**31 - 1  # CP-SAT and HiGHS take 32-bit seeds


class SettingError(ValueError):
    """A setting outside its rule; ``flag`` names it as the CLI does."""

    def __init__(self, flag: str, problem: str) -> None:
        super().__init__(f"{flag} {problem}")
        self.flag = flag


class UnknownSetting(SettingError):
    """A name that is no setting, with the closest of ``known`` (default: every setting
    name, :func:`setting_names`) as a suggestion: ``time_limt is not a setting; did you
    mean 'time_limit'?``."""

    def __init__(self, name: str, known: Iterable[str] | None = None) -> None:
        super().__init__(name, "is not a setting" + did_you_mean(name, known))


def did_you_mean(name: str, known: Iterable[str] | None = None) -> str:
    """``; did you mean 'x'?`` for the name of ``known`` (default
    :func:`setting_names`) closest to ``name`` (difflib); empty when none is close."""
    names = sorted(setting_names() if known is None else set(known))
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


@dataclass(frozen=True)
class MasterTuning:
    """The master problems. ``weight_tol``: weights below this share of the largest are
    dropped before a candidate is folded; ``kappa``: L0 big-M = kappa * (L1 value);
    ``l0_time_limit``: seconds per L0 MILP solve (its incumbent is kept);
    ``l0_stall``: a screened gurobipy L0 solve stops this many seconds after its last
    incumbent (0: runs to its limit);
    ``robust_weights``: certify an L0 support with max-margin weights rather than the
    MILP's vertex; ``l1_warm_start``: one HiGHS L1 model across rounds; ``max_rounds``:
    master solves per faithful loop before it gives up uncertified;
    ``progress_seconds``: a long L0 or refit search reports its state this often."""

    weight_tol: float = 1e-7
    kappa: float = 10.0
    l0_time_limit: float = 30.0
    l0_stall: float = 5.0
    robust_weights: bool = True
    l1_warm_start: bool = True
    max_rounds: int = 500
    progress_seconds: float = 15.0


@dataclass(frozen=True)
class SearchTuning:
    """How a round looks for separating samples before and around CP-SAT.
    ``neighbours``: extra samples per pair from one-cell moves of found ones (0: off);
    ``family_size``: when an L0 candidate is refuted, this many of its one-swap
    neighbours (largest max-margin LP margin first) are screened in the same round
    (0: off);
    ``enumeration_per_pair``: samples per pair from a screen; ``climb_steps``: beam
    search steps from the pool before CP-SAT on large domains (0: off);
    ``lazy_proofs``: a CP-SAT round that found a sample stops its other pairs' proofs;
    ``lazy_screen``: incumbents of one L0 MILP solve screened inside it, their separating
    samples added to it as lazy rows (gurobipy; 0: off; ``driver/lazy_screen.py``);
    ``lazy_oracle``: of those, incumbents the screen passes checked by CP-SAT inside the
    same solve on domains too large to enumerate (0: off);
    ``pool_per_row``: random variants per training row in the screening pool (0: off);
    ``l1_share``: on domains too large to enumerate, of the time left, for the first L1
    loop (its vertex weightings may never converge there; elimination gets the rest);
    ``eliminate_share``: of the time left, for elimination (the rest: the L0 loop from
    its certified model; 1.0: elimination may use it all);
    ``eliminate_box``: elimination re-fits the kept trees' weights within this share
    of the original's (0: the original's weights, rescaled);
    ``eliminate_oracle_seconds``: CP-SAT's time per separation round of an elimination
    candidate; a round it leaves undecided counts the removal as refuted (0: no cap,
    the time left)."""

    neighbours: int = 10
    family_size: int = 0
    enumeration_per_pair: int = 25
    climb_steps: int = 0
    lazy_proofs: bool = True
    lazy_screen: int = 200
    lazy_oracle: int = 0
    pool_per_row: int = 20
    l1_share: float = 0.1
    eliminate_share: float = 1.0
    eliminate_box: float = 0.0
    eliminate_oracle_seconds: float = 30.0


@dataclass(frozen=True)
class GenerationTuning:
    """Column generation (pace, generate). ``max_learners``: generated learners at most;
    ``pricing_candidates``: heuristic candidates per pricing round;
    ``columns_per_round``: improving learners added per round; ``stall_rounds``: stop
    after this many rounds without L1 progress."""

    max_learners: int = 200
    pricing_candidates: int = 8
    columns_per_round: int = 3
    stall_rounds: int = 8


@dataclass(frozen=True)
class L0Tuning:
    """The L0 loop's anytime fallbacks under a time limit. ``share``: of the time left,
    for the L0 loop before the fallbacks; ``reweight_rounds``, ``reweight_eps``:
    reweighted L1 (costs 1 / (w + eps * max w)); ``fallback``: "grow" (reweighted L1,
    then column growth) or "reweight" (reweighted L1 only); ``grow_rho``: a learner
    joins while the max normalised margin is below this (and shrinking removes one
    only while the rest keeps it); ``shrink_rounds``: rounds of the faithful loop per
    removal the shrink step tries (0, the default: no shrinking; 3 measured, not kept:
    benchmarks/results/studies/shrink.md); ``descent_rounds``: rounds of the faithful
    loop the descent gives each size it tries (0: no descent)."""

    share: float = 0.5
    reweight_rounds: int = 12
    reweight_eps: float = 0.01
    fallback: str = "grow"
    grow_rho: float = 1e-3
    shrink_rounds: int = 0
    descent_rounds: int = 0


@dataclass(frozen=True)
class PaceTuning:
    """PACE's phases after pruning. ``*_share``: of the time left, for pruning, column
    generation and boosting; ``boost_restarts``: boosting also starts from each of these
    best-support trees; ``refit_size``: supports of up to this many re-fitted
    partitions; ``synth_size``: CP-SAT synthesis of up to this many trees (0: off);
    ``synth_seconds``: per synthesis solve; ``bound_seconds``: per lower-bound proof
    right after pruning; ``merge_original``: first certify the original with its shared
    splits merged; ``synth_threads``: CP-SAT workers per synthesis solve (0: the run's
    threads); ``tree_share``: of the time pruning leaves, for one tree of the learner
    depth (0: no such step); ``collapse_rounds``: rounds of the faithful loop per
    collapsed split (objective leaves); ``collapse_share``: of their share, what the
    pruning steps (elimination, L0) leave for collapsing (objective leaves; 0: pruning
    spends what it does in mode prune, so PACE is never larger than prune with the same
    limit, decision 0010)."""

    prune_share: float = 1.0
    generate_share: float = 1.0
    boost_share: float = 1.0
    boost_restarts: int = 4
    refit_size: int = 3
    synth_size: int = 5
    synth_seconds: float = 60.0
    bound_seconds: float = 10.0
    merge_original: bool = True
    synth_threads: int = 1
    tree_share: float = 0.5
    collapse_rounds: int = 3
    collapse_share: float = 0.0


@dataclass(frozen=True)
class BoundTuning:
    """The pruning lower bound after the plan (``driver/phases/pruning_bound.py``).
    ``pruning_share``: of a time limit, kept back for it (0: no bound);
    ``pruning_seconds``: at most this long; ``pruning_points``: region points it uses
    at most (separating samples first); ``aim_rounds``: when the points cannot refute a
    support the bound's master proposes, rounds of the faithful loop on that support
    (max-margin weights, screen, CP-SAT) that look for region points which do (0: the
    run's points only)."""

    pruning_share: float = 0.1
    pruning_seconds: float = 60.0
    pruning_points: int = 4000
    aim_rounds: int = 0


@dataclass(frozen=True)
class TreeTuning:
    """The single tree of ``--mode tree`` (``driver/phases/single_tree.py``).
    ``first_boxes`` / ``exact_boxes``: a node whose labelled cells span at most this
    many sub-boxes (after merging identical slices) is solved by the exact program
    (fewest leaves), larger ones split greedily; the first fits (until one certifies)
    use the first limit, the improving fit after them the second; ``dense_cells``:
    nodes whose cells span a denser grid than this go greedy without trying;
    ``enum_cells``: a feature domain of at most this many allowed cells is enumerated,
    so that the tree is built on every region cell (else on the known region points,
    and the oracle's separating samples add cells); ``flood_points``: on a larger
    domain, region points found at most by moving known ones into neighbouring cells of
    the original's grid, before the first fit and around the samples of each round;
    ``fallback_share``: when neither the region's cells nor the confident cells can be
    enumerated (raw features: a tree may not certify), the share of the time the tree
    leaves to mode prune's steps, which run when no tree was certified (the fallback);
    ``bound_share``: the share of the time limit the leaf witnesses after the tree step
    may spend (``driver/phases/leaf_bound.py``), kept back from the tree step;
    ``bound_tries``: the known region points it tries at most."""

    first_boxes: int = 50_000
    exact_boxes: int = 2_000_000
    dense_cells: int = 8_000_000
    enum_cells: int = 2_000_000
    flood_points: int = 200_000
    fallback_share: float = 0.5
    bound_share: float = 0.1
    bound_tries: int = 2000


@dataclass(frozen=True)
class HookTuning:
    """Test hooks, off by default: ``hang_step`` names a plan step (or
    ``pruning-bound``) that sleeps ``hang_seconds`` when it starts instead of running,
    so a test can force the process guard's hard deadline to fall in that step (the
    CLI's hidden ``--test-hang-step``)."""

    hang_step: str | None = None
    hang_seconds: float = 3600.0


@dataclass(frozen=True)
class Tuning:
    """Every stage's tuning, each group a frozen dataclass."""

    master: MasterTuning = field(default_factory=MasterTuning)
    search: SearchTuning = field(default_factory=SearchTuning)
    generation: GenerationTuning = field(default_factory=GenerationTuning)
    l0: L0Tuning = field(default_factory=L0Tuning)
    pace: PaceTuning = field(default_factory=PaceTuning)
    bound: BoundTuning = field(default_factory=BoundTuning)
    tree: TreeTuning = field(default_factory=TreeTuning)
    oracle: OracleSettings = field(default_factory=OracleSettings)
    hooks: HookTuning = field(default_factory=HookTuning)


@dataclass(frozen=True)
class CompressConfig:
    """What a compress run is asked to do (the CLI's flags) and how it is tuned.

    ``time_limit``: seconds for the whole run, counted from process start by the CLI
    (from the call by the library); None: no limit. ``objective``: what the search
    minimises first, trees (then leaves) or leaves (then trees); ``learner_depth``: the
    depth of generated learners (None: the original's); ``max_depth``, ``max_leaves``:
    caps on the single tree of mode tree (None: none). ``coverage``: the share of the
    training rows, in %, the region must hold (``--coverage``; eta is derived from the
    rows when they are read, :func:`pace_cert.app.with_coverage_eta`; None: eta as
    given). Checked against :data:`RULES`; :meth:`of` also checks :func:`check_asked`."""

    mode: str = "prune"
    objective: str = "trees"
    learner_depth: int | None = None
    max_depth: int | None = None
    max_leaves: int | None = None
    eta: float = 0.0
    coverage: float | None = None
    delta: float = 0.0
    time_limit: float | None = None
    threads: int = 2
    seed: int = 0
    binary: str = "infer"  # infer | none
    bounds: str = "none"  # none | data
    integer: str = "infer"  # infer (integer-valued training columns stay integers) | none
    iforest_estimators: int = 100
    iforest_max_samples: int | str = "auto"
    milp: str = "auto"  # auto | cover | highs | gurobi (docs/decisions/0003-...)
    tuning: Tuning = field(default_factory=Tuning)

    def __post_init__(self) -> None:
        check(self)

    @classmethod
    def of(cls, **settings: Any) -> CompressConfig:
        """A config from user fields and tuning fields by their own names (unique across
        groups, e.g. ``CompressConfig.of(mode="pace", synth_size=0)``)."""
        user = {k: v for k, v in settings.items() if k in _USER_FIELDS}
        cfg = cls(**user).tuned(**{k: v for k, v in settings.items() if k not in user})
        check_asked(cfg)
        return cfg

    def tuned(self, **changes: Any) -> CompressConfig:
        """A copy with tuning fields (by their own names), whole tuning groups (by the
        group's name, e.g. ``oracle=OracleSettings(...)``) or user fields changed."""
        user = {k: v for k, v in changes.items() if k in _USER_FIELDS}
        whole = {k: v for k, v in changes.items() if k in _GROUPS}
        groups: dict[str, dict[str, Any]] = {}
        for name, value in changes.items():
            if name in user or name in whole:
                continue
            if name not in TUNING_FIELDS:
                raise UnknownSetting(name)
            groups.setdefault(TUNING_FIELDS[name], {})[name] = value
        base = dataclasses.replace(self.tuning, **whole)
        tuning = dataclasses.replace(
            base, **{g: dataclasses.replace(getattr(base, g), **f) for g, f in groups.items()}
        )
        return dataclasses.replace(self, tuning=tuning, **user)


# ------------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Rule:
    """One setting's constraint: ``path`` (a field, "group.field" for tuning, or a
    whole group), ``ok(value)``, what it expects (for the message), the CLI flag naming
    it, and ``shown(value)``: what the message quotes (default: the value)."""

    path: str
    ok: Callable[[Any], bool]
    expect: str
    flag: str | None = None
    shown: Callable[[Any], Any] | None = None

    def name(self) -> str:
        return self.flag or self.path


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _choice(path: str, flag: str | None = None) -> Rule:
    allowed = CHOICES[path]
    return Rule(path, lambda v: v in allowed, f"be one of {', '.join(allowed)}", flag)


def _share(path: str) -> Rule:
    return Rule(path, lambda v: _finite(v) and 0 <= v <= 1, "be in [0, 1]")


def _count(path: str, least: int = 0, flag: str | None = None) -> Rule:
    return Rule(path, lambda v: _int(v) and v >= least, f"be an integer >= {least}", flag)


def _seconds(path: str) -> Rule:
    return Rule(path, lambda v: _finite(v) and v > 0, "be > 0")


def _cap(path: str, flag: str, least: int = 1) -> Rule:
    return Rule(
        path, lambda v: v is None or (_int(v) and v >= least), f"be an integer >= {least}", flag
    )


RULES: tuple[Rule, ...] = (
    _choice("mode", "--mode"),
    _choice("objective", "--objective"),
    _cap("learner_depth", "--learner-depth"),
    _cap("max_depth", "--max-depth", 0),
    _cap("max_leaves", "--max-leaves"),
    Rule("eta", lambda v: _finite(v) and v >= 0, "be >= 0", "--eta"),
    Rule("delta", lambda v: _finite(v) and 0 <= v <= 1, "be in [0, 1]", "--delta"),
    Rule(
        "coverage",
        lambda v: v is None or (_finite(v) and 1 <= v <= 100),
        "be a percentage of the training rows in [1, 100] (99 for 99 %)",
        "--coverage",
    ),
    Rule("time_limit", lambda v: v is None or (_finite(v) and v > 0), "be > 0", "--time-limit"),
    _count("threads", 1, "--threads"),
    Rule("seed", lambda v: _int(v) and 0 <= v <= MAX_SEED, f"be in [0, {MAX_SEED}]", "--seed"),
    _choice("binary", "--binary"),
    _choice("bounds", "--bounds"),
    _choice("integer", "--integer"),
    _choice("milp", "--milp"),
    _count("iforest_estimators", 1, "--iforest-trees"),
    Rule(
        "iforest_max_samples",
        lambda v: v == "auto" or (_int(v) and v >= 1),
        'be "auto" or an integer >= 1 (the CLI\'s 0 means auto)',
        "--iforest-samples",
    ),
    Rule("master.weight_tol", lambda v: _finite(v) and 0 <= v < 1, "be in [0, 1)"),
    Rule("master.kappa", lambda v: _finite(v) and v > 0, "be > 0"),
    _seconds("master.l0_time_limit"),
    Rule("master.l0_stall", lambda v: _finite(v) and v >= 0, "be >= 0"),
    _count("master.max_rounds", 1),
    Rule("master.progress_seconds", lambda v: _finite(v) and v >= 0, "be >= 0"),
    _count("search.neighbours"),
    _count("search.family_size"),
    _count("search.enumeration_per_pair", 1),
    _count("search.climb_steps"),
    _count("search.lazy_screen"),
    _count("search.lazy_oracle"),
    _count("search.pool_per_row"),
    _share("search.l1_share"),
    _share("search.eliminate_share"),
    Rule("search.eliminate_box", lambda v: _finite(v) and 0 <= v < 1, "be in [0, 1)"),
    Rule("search.eliminate_oracle_seconds", lambda v: _finite(v) and v >= 0, "be >= 0"),
    _count("generation.max_learners"),
    _count("generation.pricing_candidates"),
    _count("generation.columns_per_round", 1),
    _count("generation.stall_rounds", 1),
    _share("l0.share"),
    _count("l0.reweight_rounds"),
    Rule("l0.reweight_eps", lambda v: _finite(v) and v > 0, "be > 0"),
    _choice("l0.fallback"),
    Rule("l0.grow_rho", lambda v: _finite(v) and v > 0, "be > 0"),
    _count("l0.shrink_rounds"),
    _count("l0.descent_rounds"),
    _share("pace.prune_share"),
    _share("pace.generate_share"),
    _share("pace.boost_share"),
    _count("pace.boost_restarts"),
    _count("pace.refit_size"),
    _count("pace.synth_size"),
    _seconds("pace.synth_seconds"),
    _seconds("pace.bound_seconds"),
    _count("pace.synth_threads"),
    _share("pace.tree_share"),
    _count("pace.collapse_rounds", 1),
    _share("pace.collapse_share"),
    _share("bound.pruning_share"),
    _seconds("bound.pruning_seconds"),
    _count("bound.pruning_points", 1),
    _count("bound.aim_rounds"),
    _count("tree.first_boxes"),
    _count("tree.exact_boxes"),
    _count("tree.dense_cells"),
    _count("tree.enum_cells"),
    _count("tree.flood_points"),
    _share("tree.fallback_share"),
    _share("tree.bound_share"),
    _count("tree.bound_tries"),
    _choice("oracle.backend", "--backend"),
    Rule(
        "oracle.ray_address",
        ray_address_ok,
        "be a Ray cluster address (host:port or ray://host:port)",
        "--ray-address",
    ),
    Rule(
        "oracle",
        lambda o: o.ray_address is None or o.backend == "ray",
        "come with --backend ray",
        "--ray-address",
        lambda o: o.ray_address,
    ),
    _count("oracle.ray_retries"),
    _count("oracle.harvest"),
    _seconds("oracle.harvest_seconds"),
    Rule("hooks.hang_step", lambda v: v is None or (isinstance(v, str) and v != ""), "be a step"),
    _seconds("hooks.hang_seconds"),
)


def _value(cfg: CompressConfig, path: str) -> Any:
    group, _, name = path.rpartition(".")
    if not group and name in _GROUPS:
        return getattr(cfg.tuning, name)  # a whole group (a rule across its fields)
    return getattr(getattr(cfg.tuning, group) if group else cfg, name)


def check(cfg: CompressConfig) -> None:
    """Raise :class:`SettingError` for the first setting outside its rule."""
    for rule in RULES:
        value = _value(cfg, rule.path)
        if not rule.ok(value):
            got = value if rule.shown is None else rule.shown(value)
            raise SettingError(rule.name(), f"must {rule.expect}, got {got!r}")


def check_asked(cfg: CompressConfig) -> None:
    """The rule across what the user gave (:meth:`CompressConfig.of`): ``--coverage``
    derives eta from the rows, so it comes without a nonzero ``--eta``. A config whose
    eta was derived (``dataclasses.replace``) keeps its coverage and passes the table
    alone."""
    if cfg.coverage is not None and cfg.eta != 0:
        raise SettingError(
            "--coverage",
            f"derives eta from the rows: give either --coverage or --eta, not both "
            f"(got --coverage {cfg.coverage:g} and --eta {cfg.eta:g})",
        )


def check_for_model(cfg: CompressConfig, kind: str) -> None:
    """The rule that depends on the model: eta is a vote share for voting ensembles
    (random forests, AdaBoost), so it must be below 1 there."""
    if kind == "voting" and cfg.eta >= 1:
        raise SettingError(
            "--eta", f"is a vote share for this model and must be < 1, got {cfg.eta}"
        )


_USER_FIELDS = frozenset(f.name for f in dataclasses.fields(CompressConfig)) - {"tuning"}
_GROUPS = frozenset(f.name for f in dataclasses.fields(Tuning))
#: tuning field name -> its group in :class:`Tuning` (names are unique across groups)
TUNING_FIELDS: dict[str, str] = {
    f.name: g.name
    for g in dataclasses.fields(Tuning)
    for f in dataclasses.fields(g.default_factory())  # type: ignore[misc]
}
if len(TUNING_FIELDS) != sum(
    len(dataclasses.fields(g.default_factory()))  # type: ignore[misc]
    for g in dataclasses.fields(Tuning)
):
    raise AssertionError("tuning field names must be unique across groups")


def setting_names() -> frozenset[str]:
    """Every name a setting goes by: the user fields, the tuning fields and groups, and
    the CLI flags as keywords (``--iforest-trees``: ``iforest_trees``)."""
    flags = {r.flag[2:].replace("-", "_") for r in RULES if r.flag}
    return _USER_FIELDS | _GROUPS | frozenset(TUNING_FIELDS) | flags
