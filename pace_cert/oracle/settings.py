"""The oracle's settings as data: CP-SAT parameters, how conditions are posted, the pair
schedule and its race portfolio. Passed in (``SeparationOracle(settings=...)``); a
benchmark varies a setting by passing another object. Why these values:
docs/decisions/0001-cpsat-parameters.md, 0002-race-schedule.md, 0004-tree-sums.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SCHEDULES = ("race", "parallel", "sequential")
TREE_SUMS = ("plausibility", "all", "none")
#: how a per-tree sum variable is tied to its leaf booleans (docs/decisions/0004-tree-sums.md)
SUM_LINKS = ("linear", "values")
#: where pair solves run: threads of this process, or Ray tasks (docs/decisions/0013-ray-backend.md)
BACKENDS = ("local", "ray")


def ray_address_ok(address: object) -> bool:
    """None (``RAY_ADDRESS``, else a local instance) or a non-empty address without
    spaces (``host:port``, ``ray://host:port``); Ray itself checks that it answers."""
    return address is None or (
        isinstance(address, str) and address != "" and not any(c.isspace() for c in address)
    )


def _cpsat_params() -> dict[str, object]:
    # probing and at-most-one merging dominate the time of these mostly-propagation
    # problems (5-20x faster, same statuses); SAT inprocessing spent most of a proof's
    # search on isolation-forest regions (2-4x faster without); a call's presolve cost
    # more than it saved (docs/decisions/0001-cpsat-parameters.md, 0004-tree-sums.md)
    return {
        "cp_model_probing_level": 0,
        "merge_at_most_one_work_limit": 0.0,
        "find_big_linear_overlap": False,
        "use_sat_inprocessing": False,
        "cp_model_presolve": False,
    }


@dataclass(frozen=True)
class OracleSettings:
    """How the separation oracle builds and solves its CP-SAT models.

    * ``cpsat_params``: CP-SAT parameters set on every solve (``linearization_level`` is
      set per racing attempt instead, see ``race_linearization*``).
    * ``tree_sums``: which conditions are posted with one integer variable per tree
      ("plausibility": the isolation forest's sum; "all"; "none": one long sum each).
    * ``sum_links``: how a per-tree variable d (``tree_sums``) is tied to its tree's
      leaf booleans z: "linear" posts d = sum c z only, whose bound propagation sees a
      sum of leaf values, not the one leaf; "values" adds, per distinct value v, a
      literal b_v <=> (d == v) and b_v => (some leaf of value v), so ruling out leaves
      removes their values from d's domain (redundant: the same solutions). Off: one
      spambase 100 candidate's samples came 5x faster, but a 600 s run certified 91
      trees against 81 (docs/decisions/0004-tree-sums.md, addendum).
    * ``race_sum_links``: ``sum_links`` of racing attempt k (cycled), e.g. ("linear",
      "values"): a pair's twin searches with the other links; empty: ``sum_links``.
      Off: 74 trees against 81 on spambase 100 at 600 s, one run, within the spread.
    * ``enum_limit``: domains with at most this many allowed cells are screened on every
      cell (and hint CP-SAT from them).
    * ``max_spurious``: nogoods per pair and call (points inside the rounding slack only)
      before the pair is declared UNKNOWN.
    * ``schedule``: "race" (one single-worker CP-SAT per pair, idle threads race other
      seeds on undecided pairs), "parallel" (pairs at once, threads // pairs workers
      each) or "sequential" (one pair at a time with every thread).
    * ``max_attempts``: racing attempts (seeds) per pair and call.
    * ``race_linearization``, ``..._stumps``, ``..._plausible``: CP-SAT
      ``linearization_level`` of racing attempt k (cycled) without a plausibility forest,
      for stump originals, and with a plausibility forest.
    * ``escalate_seconds``: an attempt running this long (doubling per attempt of its
      pair) gets a twin even when every thread is busy (one extra thread at most).
    * ``found_grace_seconds``: ``separate(until_found=True)``: least time undecided pairs
      get after the call's first separating sample.
    * ``use_hints``: start CP-SAT from the screen's closest point (steers only).
    * ``backend``: where each CP-SAT solve of a pair runs: "local" (a thread of this
      process) or "ray" (a Ray task, :mod:`pace_cert.oracle.ray_backend`; the schedule,
      the exact region check and the nogoods stay here). Checked with the other
      settings in :data:`pace_cert.settings.RULES` (``--backend``).
    * ``ray_address``: the Ray cluster to use (``--ray-address``); None: the
      ``RAY_ADDRESS`` environment variable, else a local Ray instance with ``threads`` + 1
      CPUs (the race's escalated twin included). Only with ``backend="ray"``.
    * ``ray_retries``: Ray retries of a task whose worker died or raised; after them the
      solve is UNKNOWN (never a proof).
    * ``harvest``: after a pair's first separating sample, at most this many more from
      the same model, each with a nogood on the original trees' leaves at the samples
      before it (so each is a new leaf pattern of the original, a new master row);
      every one checked against the region exactly, each solve capped at
      ``harvest_seconds`` (0: off). Samples only add rows: never a proof.
    """

    cpsat_params: dict[str, object] = field(default_factory=_cpsat_params)
    tree_sums: str = "plausibility"
    sum_links: str = "linear"
    race_sum_links: tuple[str, ...] = ()
    enum_limit: int = 300_000
    max_spurious: int = 50
    schedule: str = "race"
    max_attempts: int = 4
    race_linearization: tuple[int, ...] = (0, 1)
    race_linearization_stumps: tuple[int, ...] = (1, 0)
    race_linearization_plausible: tuple[int, ...] = (1,)
    escalate_seconds: float = 2.0
    found_grace_seconds: float = 1.0
    use_hints: bool = True
    backend: str = "local"
    ray_address: str | None = None
    ray_retries: int = 2
    harvest: int = 0
    harvest_seconds: float = 1.0

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ValueError(f"OracleSettings.schedule must be one of {SCHEDULES}")
        if self.tree_sums not in TREE_SUMS:
            raise ValueError(f"OracleSettings.tree_sums must be one of {TREE_SUMS}")
        if any(v not in SUM_LINKS for v in (self.sum_links, *self.race_sum_links)):
            raise ValueError(f"OracleSettings.sum_links must be one of {SUM_LINKS}")
        if self.max_attempts < 1 or self.max_spurious < 0 or self.enum_limit < 0:
            raise ValueError("OracleSettings: max_attempts >= 1, max_spurious and enum_limit >= 0")
