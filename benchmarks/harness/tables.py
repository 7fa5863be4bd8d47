"""The tables of a report: aggregation over seeds, cell formatting, and the three
table specs (the paper's tables (a), (b), (c)), each listing its configurations and
rendering itself beside the paper's numbers (:mod:`benchmarks.harness.paper_values`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from benchmarks.harness import paper_values as pv
from benchmarks.harness.records import DONE_STATUSES, Config, Result, reached_time_limit


@dataclass
class Agg:
    """Mean over seeds of one configuration group."""

    runs: int = 0
    certified: int = 0
    hit_limit: int = 0
    statuses: tuple[str, ...] = ()
    S: float | None = None  # over certified runs
    S_seed0: int | None = None
    bound: float | None = None  # size_bound over certified runs (None unless all have one)
    pruning_bound: float | None = None  # over certified runs (None unless all have one)
    t_final: float | None = None  # seconds to the returned size, over certified runs
    P: float | None = None
    T: float | None = None  # over all runs that ran compress
    fidelity: float | None = None
    accuracy: float | None = None
    original_accuracy: float | None = None
    samples_kept: float | None = None
    samples_dropped: float | None = None

    @property
    def status(self) -> str:
        if not self.runs:
            return "not run"
        if self.certified == self.runs:
            text = "cert" if self.runs == 1 else f"{self.runs}/{self.runs} cert"
        elif self.runs == 1:
            text = self.statuses[0]
        else:
            others = sorted(set(self.statuses) - {"certified"})
            text = f"{self.certified}/{self.runs} cert, " + ", ".join(others)
        if self.hit_limit:
            text += " (time limit)" if self.runs == 1 else f" ({self.hit_limit} hit time limit)"
        return text


def _mean(values: Iterable[float | int | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def aggregate(rows: Sequence[Result]) -> Agg:
    cert = [r for r in rows if r.status == "certified"]
    ran = [r for r in rows if r.status in DONE_STATUSES]
    seed0 = [r.S for r in cert if r.seed == 0]
    return Agg(
        runs=len(rows),
        certified=len(cert),
        hit_limit=sum(reached_time_limit(r) for r in rows),
        statuses=tuple(r.status for r in rows),
        S=_mean(r.S for r in cert),
        S_seed0=seed0[0] if seed0 else None,
        bound=_mean(r.size_bound for r in cert) if all(r.size_bound for r in cert) else None,
        pruning_bound=(
            _mean(r.pruning_bound for r in cert) if all(r.pruning_bound for r in cert) else None
        ),
        t_final=_mean(r.t_final for r in cert),
        P=_mean(r.P for r in cert),
        T=_mean(r.T for r in ran),
        fidelity=_mean(r.fidelity for r in cert),
        accuracy=_mean(r.accuracy for r in cert),
        original_accuracy=_mean(r.original_accuracy for r in ran),
        samples_kept=_mean(r.samples_kept for r in ran),
        samples_dropped=_mean(r.samples_dropped for r in ran),
    )


def fmt(x: float | int | None, digits: int = 1, suffix: str = "") -> str:
    if x is None:
        return "—"
    if float(x).is_integer():
        return f"{int(x)}{suffix}"
    return f"{x:.{digits}f}{suffix}"


def fmt_pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def paper_cell(stat: pv.PaperStat | None, attr: str, suffix: str = "") -> str:
    if stat is None:
        return ""
    if stat.tlim:
        return "tlim"
    value = getattr(stat, attr)
    return "--" if value is None else f"{value:,}{suffix}"


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


class Index:
    """Results grouped by configuration (minus seed), restricted to a table's seeds."""

    def __init__(self, results: Iterable[Result]) -> None:
        self.by_group: dict[tuple, list[Result]] = {}
        for r in results:
            self.by_group.setdefault(r.config.group, []).append(r)

    def agg(self, cfg: Config, seeds: Sequence[int]) -> Agg:
        rows = [r for r in self.by_group.get(cfg.group, []) if r.seed in seeds]
        return aggregate(rows)


# --------------------------------------------------------------------- table specs


@dataclass(frozen=True)
class FipeTable:
    """Table (a): prune-only vs FIPE, n=50, depth 1, global region; with ``pace`` in
    ``modes`` also PACE beside the paper's PACE column (the paper's table reports PACE)."""

    datasets: tuple[str, ...]
    families: tuple[str, ...] = ("rf", "ada")
    seeds: tuple[int, ...] = (0,)
    modes: tuple[str, ...] = ("prune",)
    title: str = "Comparison with FIPE (n=50, depth 1, eta=delta=0)"

    def cells(self) -> list[Config]:
        return [
            Config(ds, fam, 50, 1, m, 0.0, 0.0, 0)
            for fam in self.families
            for ds in self.datasets
            for m in self.modes
        ]

    def configs(self) -> list[Config]:
        return [replace(c, seed=s) for c in self.cells() for s in self.seeds]

    def render(self, index: Index) -> str:
        pace_cols = "pace" in self.modes
        header = [
            "dataset",
            "family",
            "status",
            "ours S (mean)",
            "min. here",
            "ours S (seed 0)",
            "FIPE here (seed 0)",
            "Δ seed 0",
            "ours T (s)",
            "fid.",
            "acc. (orig.)",
        ]
        if pace_cols:
            header += ["PACE status", "PACE S", "PACE P", "PACE T (s)"]
        header += ["paper FIPE S (T)", "paper PACE S (P, T)"]
        rows = []
        for c in self.cells():
            if c.mode != "prune":
                continue
            a = index.agg(c, self.seeds)
            here = pv.FIPE_HERE.get((c.dataset, c.family))
            fipe = pv.d1_table(c.dataset, c.family, "fipe")
            pace = pv.d1_table(c.dataset, c.family, "pace")
            delta = "—" if a.S_seed0 is None or here is None else f"{a.S_seed0 - here:+d}"
            b = index.agg(replace(c, mode="pace"), self.seeds) if pace_cols else None
            bounds = [x.bound for x in (a, b) if x is not None and x.bound is not None]
            row = [
                c.dataset,
                c.family,
                a.status,
                fmt(a.S),
                "--" if not bounds else fmt(max(bounds)),
                fmt(a.S_seed0),
                fmt(here),
                delta,
                fmt(a.T, 2),
                fmt_pct(a.fidelity),
                f"{fmt_pct(a.accuracy)} ({fmt_pct(a.original_accuracy)})",
            ]
            if b is not None:
                row += [
                    b.status,
                    fmt(b.S),
                    fmt(b.P, 0, "%"),
                    fmt(b.T, 2),
                ]
            row += [
                f"{paper_cell(fipe, 'S')} ({paper_cell(fipe, 'T')} s)" if fipe else "",
                f"{paper_cell(pace, 'S')} ({paper_cell(pace, 'P', '%')}, {paper_cell(pace, 'T')} s)"
                if pace
                else "",
            ]
            rows.append(row)
        return md_table(header, rows)


def _target(a: Agg, paper: pv.PaperStat | None) -> str:
    """Issue 52's target for a row: max(paper S, pruning bound + 1), and whether S
    meets it (a paper size below a bound we prove is out of reach in our region)."""
    if paper is None or paper.S is None or paper.tlim or a.S is None:
        return "--"
    goal = max(paper.S, 1 + int(a.pruning_bound or 0))
    return f"{goal} ({'met' if goal >= a.S else 'not met'})"


@dataclass(frozen=True)
class PruningTable:
    """Table (b): generate / prune / PACE on depth-2 ensembles at eta = delta = 0.1."""

    datasets: tuple[str, ...]
    n_estimators: tuple[int, ...]
    family: str = "rf"
    modes: tuple[str, ...] = ("generate", "prune", "pace")
    seeds: tuple[int, ...] = (0,)
    eta: float = 0.1
    delta: float = 0.1
    title: str = "Table 2 (random forests, depth 2, eta=delta=0.1)"

    def cells(self) -> list[Config]:
        return [
            Config(ds, self.family, n, 2, m, self.eta, self.delta, 0)
            for ds in self.datasets
            for n in self.n_estimators
            for m in self.modes
        ]

    def configs(self) -> list[Config]:
        return [replace(c, seed=s) for c in self.cells() for s in self.seeds]

    def render(self, index: Index) -> str:
        header = [
            "dataset",
            "n",
            "mode",
            "status",
            "S",
            "min. here",
            "pruning bound",
            "target",
            "P",
            "T (s)",
            "T to S (s)",
            "fid.",
            "acc. (orig.)",
            "rows kept/dropped",
            "paper S",
            "paper P",
            "paper T (s)",
        ]
        rows = []
        for c in self.cells():
            a = index.agg(c, self.seeds)
            paper = pv.pruning_table(c.family, c.dataset, c.n_estimators, c.mode)
            rows.append(
                [
                    c.dataset,
                    str(c.n_estimators),
                    c.mode,
                    a.status,
                    fmt(a.S),
                    "--" if a.bound is None else fmt(a.bound),
                    "--" if a.pruning_bound is None else fmt(a.pruning_bound),
                    _target(a, paper) if c.mode == "prune" else "--",
                    "--" if c.mode == "prune" else fmt(a.P, 0, "%"),
                    fmt(a.T, 2),
                    fmt(a.t_final, 1),
                    fmt_pct(a.fidelity),
                    f"{fmt_pct(a.accuracy)} ({fmt_pct(a.original_accuracy)})",
                    f"{fmt(a.samples_kept, 0)}/{fmt(a.samples_dropped, 0)}",
                    paper_cell(paper, "S"),
                    paper_cell(paper, "P", "%"),
                    paper_cell(paper, "T"),
                ]
            )
        return md_table(header, rows)


@dataclass(frozen=True)
class RegionsTable:
    """Table (c): size against eta (delta = 0) and delta (eta = 0), RF n=100 depth 2."""

    datasets: tuple[str, ...]
    etas: tuple[float, ...]
    deltas: tuple[float, ...]
    modes: tuple[str, ...] = ("prune", "pace")
    seeds: tuple[int, ...] = (0,)
    title: str = "Regions sweep (random forests, n=100, depth 2)"

    def points(self) -> list[tuple[str, float, float]]:
        return [("eta", e, 0.0) for e in self.etas] + [("delta", 0.0, d) for d in self.deltas]

    def cells(self) -> list[Config]:
        return [
            Config(ds, "rf", 100, 2, m, eta, delta, 0)
            for ds in self.datasets
            for _, eta, delta in self.points()
            for m in self.modes
        ]

    def configs(self) -> list[Config]:
        seen: dict[str, Config] = {}  # eta=delta=0 belongs to both sweeps: run it once
        for c in self.cells():
            for s in self.seeds:
                seen.setdefault(replace(c, seed=s).key, replace(c, seed=s))
        return list(seen.values())

    def render(self, index: Index) -> str:
        header = ["dataset", "sweep", "eta", "delta"]
        for m in self.modes:
            header += [f"{m} status", f"{m} S", f"{m} T (s)", f"{m} fid.", f"paper {m} S"]
        header.append("rows kept/dropped")
        rows = []
        for ds in self.datasets:
            for sweep, eta, delta in self.points():
                row = [ds, sweep, f"{eta:g}", f"{delta:g}"]
                kept = ""
                for m in self.modes:
                    a = index.agg(Config(ds, "rf", 100, 2, m, eta, delta, 0), self.seeds)
                    ref = pv.region_reference(ds, m, eta, delta)
                    row += [
                        a.status,
                        fmt(a.S),
                        fmt(a.T, 2),
                        fmt_pct(a.fidelity),
                        str(ref.S) if ref else "",
                    ]
                    kept = kept or (
                        f"{fmt(a.samples_kept, 0)}/{fmt(a.samples_dropped, 0)}"
                        if a.runs and a.samples_kept is not None
                        else ""
                    )
                rows.append([*row, kept])
        notes = "\n".join(
            f"- {r.dataset} {r.mode} eta={r.eta:g} delta={r.delta:g}: paper {r.S} ({r.note})"
            for r in pv.REGIONS_RF
        )
        notes += "\n" + "\n".join(f"- {n}" for n in pv.REGIONS_NOTES)
        return md_table(header, rows) + "\n\nPaper references (from the text, no table):\n" + notes


TableSpec = FipeTable | PruningTable | RegionsTable
