"""The profiles: which configurations each runs, its tables, limits and budget."""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchmarks.harness.records import MODES, Config
from benchmarks.harness.tables import FipeTable, PruningTable, RegionsTable, TableSpec
from pace_cert import zoo

PROFILES = ("quick", "fipe", "table2", "regions", "full")
# seconds for the quick profile's oracle comparison; with the 630 s harness budget and
# the install, make bench-quick takes about 17 min of its 20 (docs/lab-notebook.md)
ORACLE_BUDGET = 300.0


@dataclass(frozen=True)
class Profile:
    name: str
    tables: tuple[TableSpec, ...]
    time_limit: float | None  # per configuration, seconds
    budget: float | None  # whole run, seconds: later configurations get less (quick only)
    resume: bool  # skip configurations whose row already exists
    description: str = ""

    def configs(self) -> list[Config]:
        """Every configuration once, cheap modes first (prune, then generate, then pace)."""
        unique: dict[str, Config] = {}
        for t in self.tables:
            for c in t.configs():
                unique.setdefault(c.key, c)
        order = {m: i for i, m in enumerate(MODES)}
        return sorted(unique.values(), key=lambda c: order[c.mode])


def make_profile(name: str) -> Profile:
    if name == "quick":
        return Profile(
            "quick",
            (
                FipeTable(("cancer", "compas", "seeds")),
                PruningTable(("compas", "cancer"), (25,)),
                RegionsTable(("compas",), (0.0, 0.1), (0.0, 0.1)),
            ),
            time_limit=300.0,
            budget=630.0,
            resume=False,
            description="seed 0; slices of tables (a), (b), (c); at most 300 s per "
            "configuration and 630 s of wall time in all, shared evenly "
            "by the configurations still to run (prune first); then one oracle "
            f"comparison (oracle_compare.py --quick, {ORACLE_BUDGET:.0f} s budget)",
        )
    if name == "fipe":
        return Profile(
            "fipe",
            (FipeTable(zoo.DATASETS, modes=("prune", "pace")),),
            time_limit=900.0,
            budget=None,
            resume=True,
            description="seed 0; table (a) on all six datasets: prune-only vs FIPE, PACE vs the "
            "paper's PACE column; "
            "900 s per configuration; resumable",
        )
    if name == "table2":
        return Profile(
            "table2",
            (PruningTable(zoo.DATASETS, (25, 50, 100)),),
            time_limit=600.0,
            budget=None,
            resume=True,
            description="seed 0; table (b): RF depth 2, eta=delta=0.1, n in {25, 50, 100}, "
            "generate / prune / pace on all six datasets; 600 s per configuration; resumable",
        )
    if name == "regions":
        return Profile(
            "regions",
            (RegionsTable(("compas", "fico"), (0.0, 0.05, 0.1, 0.2), (0.0, 0.1, 0.2, 0.4)),),
            time_limit=900.0,
            budget=None,
            resume=True,
            description="seed 0; table (c): RF n=100 d=2 on compas and fico, eta and delta "
            "sweeps, prune and pace; 900 s per configuration; resumable",
        )
    if name == "full":
        seeds = tuple(range(5))
        return Profile(
            "full",
            (
                FipeTable(zoo.DATASETS, seeds=seeds, modes=("prune", "pace")),
                PruningTable(zoo.DATASETS, (25, 50, 100), seeds=seeds),
                RegionsTable(
                    ("compas", "fico"), (0.0, 0.05, 0.1, 0.2), (0.0, 0.1, 0.2, 0.4), seeds=seeds
                ),
            ),
            time_limit=3600.0,
            budget=None,
            resume=True,
            description="seeds 0-4 (means over seeds); all of tables (a), (b), (c); "
            "3600 s per configuration; resumable",
        )
    raise ValueError(f"unknown profile {name!r} (quick, fipe, table2, regions, full)")


def select(configs: list[Config], only: str | None) -> list[Config]:
    """The configurations whose key matches the regex ``only`` (all if None)."""
    if not only:
        return configs
    pattern = re.compile(only)
    return [c for c in configs if pattern.search(c.key)]


def config_time_limit(
    profile: Profile, override: float | None, budget_left: float | None, remaining: int
) -> float | None:
    """Per-configuration limit; under a budget, a fair share of what is left.

    Configurations run cheap modes first, so the fast prune runs leave most of the budget
    to the slower generate / pace runs, which then split it evenly.
    """
    limit = profile.time_limit if override is None else (override or None)
    if budget_left is None:
        return limit
    share = budget_left / max(remaining, 1)
    return share if limit is None else min(limit, share)
