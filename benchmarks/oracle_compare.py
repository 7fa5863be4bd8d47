"""Constraint-based vs objective-based separation: the PACE paper's Result 1 protocol.

    python -m benchmarks.oracle_compare [--quick] [--out benchmarks/results/profiles]

For each case (dataset, random forest with n trees of depth d, seed 0) the model is
prepared exactly as in the harness (bundled dataset → 10 ordinal bins → stratified
80/20 split → scikit-learn → skl2onnx → pace-cert's ONNX reader, checked against
onnxruntime). Then the L1 faithful loop alone (the driver's faithful loop on the L1
master over the original trees, eta = delta = 0: a global region) is run three times,
side by side in the same process: with the product's constraint-based
:class:`~pace_cert.oracle.cpsat.SeparationOracle` (CP-SAT), with the objective-based
:class:`~pace_cert.oracle.objective.ObjectiveSeparationOracle` (same CP-SAT model, the
disagreement maximised) and with the objective-based
:class:`~pace_cert.oracle.milp.MilpSeparationOracle` (a HiGHS MILP maximising the
disagreement, as FIPE did with a MILP). The numpy screen (enumeration / sample pool)
is switched off in every run, so only the separation oracles are compared; the L1
master (HiGHS) is the same in all, as in the paper.

Writes ``<out>/oracle_compare[_quick].csv`` (one row per case) and ``.md`` (the table,
the median ratios objective/constraint beside the paper's claim, command, date,
machine). Both files are rewritten after every case, so a long run can be stopped. The
last line, ``speedup: ...``, is the median T(MILP objective) / T(constraint).
Results and their reading: ``docs/lab-notebook.md`` (Result 1 entries).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import os
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from benchmarks import harness
from pace_cert import zoo
from pace_cert.driver.loop import faithful_loop
from pace_cert.driver.state import RunState
from pace_cert.master.rows import MasterSolution
from pace_cert.oracle.milp import MilpSeparationOracle
from pace_cert.oracle.objective import ObjectiveSeparationOracle
from pace_cert.oracle.score_model import ScoreModel
from pace_cert.oracle.settings import OracleSettings
from pace_cert.plumbing.budget import Budget
from pace_cert.settings import CompressConfig

ORACLES = ("constraint", "objective", "milp")
BASELINES = ("objective", "milp")  # each compared with "constraint"
LABEL = {"constraint": "constraint CP-SAT", "objective": "objective CP-SAT", "milp": "MILP"}
FULL_CASES = tuple((ds, n, d) for ds in zoo.DATASETS for n in (50, 100, 200) for d in (5, 7))
# At n=50, d=5 one L1 loop already takes minutes here (compas: 65 s constraint-based,
# > 240 s objective-based; seeds, cancer, diabetes: > 120 s constraint-based), so the
# quick slice uses smaller forests that both oracles bring to global faithfulness
# (about 15 + 30 s, 15 + 25 s, 20 + 105 s); the depth-5 case last, as it needs most.
QUICK_CASES = (("fico", 25, 3), ("cancer", 20, 3), ("compas", 25, 5))
# Budget shares: the objective-based CP-SAT run typically needs 2-6x the constraint-based
# one (fico n25 d3: 6 s vs 15-26 s), the HiGHS MILP run more again (fico: 65-75 s, cancer
# and compas well over 70 s). The two CP-SAT runs keep about the shares they had before
# the MILP was added, so their comparison still finishes; the MILP gets the rest and, in
# the quick slice, is usually cut by its limit (its ratios are then lower bounds).
BUDGET_WEIGHT = {"constraint": 1.5, "objective": 3.5, "milp": 4.0}
PAPER_CLAIM = (
    "up to 37× in the worst case, RF n=50 d=7 (paper, Result 1: constraint-based vs "
    "FIPE's objective-based separation, time to global faithfulness of L1, 20 h limit)"
)
DEFAULT_OUT = harness.PROFILES_OUT


@dataclass
class OracleRun:
    """One L1 faithful loop with one oracle."""

    status: str = "not run"  # faithful | time-limit | max-rounds | inconclusive | not run
    seconds: float = 0.0  # wall time of the L1 loop
    cpu_seconds: float = 0.0  # process CPU time of the L1 loop (all threads): robust to load
    time_limit: float = 0.0
    rounds: int = 0  # master solves = separation calls (one per round, all pairs)
    pair_solves: int = 0  # CP-SAT separation problems (label pairs over all rounds)
    samples: int = 0  # separating samples returned by the oracle
    oracle_seconds: float = 0.0  # sum over pair problems (pairs run in parallel threads)
    l1_value: float | None = None
    trees: int | None = None  # trees with non-zero L1 weight in the final candidate
    start_samples: int = 0  # distinct training cells the loop starts from


@dataclass
class Case:
    """One (dataset, n, d) comparison."""

    dataset: str
    n_estimators: int
    depth: int
    n_features: int = 0
    n_classes: int = 0
    initial_samples: int = 0  # distinct training cells the loop starts from
    runs: dict[str, OracleRun] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"rf-{self.dataset}-n{self.n_estimators}-d{self.depth}"

    def ratio(self, name: str = "objective") -> float | None:
        """``name`` seconds / constraint seconds when both reached faithfulness."""
        c, o = self.runs.get("constraint"), self.runs.get(name)
        if c and o and c.status == o.status == "faithful" and c.seconds > 0:
            return o.seconds / c.seconds
        return None

    def lower_bound(self, name: str = "objective") -> float | None:
        """``name`` seconds / constraint seconds when the constraint run reached
        faithfulness and the ``name`` run hit its time limit: a lower bound on the ratio."""
        c, o = self.runs.get("constraint"), self.runs.get(name)
        if c and o and c.status == "faithful" and o.status == "time-limit" and c.seconds > 0:
            return o.seconds / c.seconds
        return None

    def ratio_cell(self, name: str = "objective") -> str:
        r = self.ratio(name)
        if r is not None:
            return f"{r:.1f}x"
        lb = self.lower_bound(name)
        return "--" if lb is None else f">{lb:.1f}x"  # a lower bound: the run was cut

    def row(self) -> dict[str, object]:
        out: dict[str, object] = {
            "key": self.key,
            "dataset": self.dataset,
            "n_estimators": self.n_estimators,
            "depth": self.depth,
            "n_features": self.n_features,
            "n_classes": self.n_classes,
            "initial_samples": self.initial_samples,
        }
        for name in ORACLES:
            run = self.runs.get(name, OracleRun())
            out.update({f"{name}_{k}": v for k, v in asdict(run).items()})
        for name in BASELINES:
            r, lb = self.ratio(name), self.lower_bound(name)
            out[f"ratio_{name}_over_constraint"] = "" if r is None else f"{r:.4f}"
            out[f"ratio_{name}_over_constraint_lower_bound"] = "" if lb is None else f"{lb:.4f}"
        return out


# ------------------------------------------------------------------------------ running


def run_oracle(
    prep: harness.Prepared, kind: str, limit: float, threads: int, schedule: str = "parallel"
) -> OracleRun:
    """L1 loop to global faithfulness with the ``kind`` oracle, the numpy screen off.
    The constraint-based oracle spreads its threads over the pairs as ``schedule`` says
    (``parallel``, like the baselines, or ``race``, the product's default: single-worker
    attempts with the LP portfolio); the baselines always run ``parallel``."""
    settings = OracleSettings(schedule=schedule if kind == "constraint" else "parallel")
    cfg = CompressConfig.of(
        mode="prune",
        threads=threads,
        time_limit=limit,
        max_rounds=10**6,
        climb_steps=0,
        lazy_proofs=False,
    ).tuned(oracle=settings)  # no pre-search of any kind, every pair to completion
    state = RunState.create(prep.original, prep.X_train, cfg, Budget.unlimited(), print_nothing)
    baseline = {"objective": ObjectiveSeparationOracle, "milp": MilpSeparationOracle}
    if kind in baseline:  # same domain, region and hints (the screen's grid, no pool)
        oracle = baseline[kind](
            state.domain,
            ScoreModel.from_ensemble(prep.original),
            state.region,
            seed=cfg.seed,
            settings=settings,
            hints=state.screen,
        )
        state = dataclasses.replace(state, oracle=oracle)
    else:
        state.ensure_pool()  # its points hint CP-SAT (the product's oracle); before the clock
    learners = state.learners

    def solve(A: np.ndarray) -> MasterSolution:
        return state.l1_master.solve(A, len(learners))  # the warm-started L1 master

    start = len(state.X)
    t0, c0 = time.perf_counter(), time.process_time()
    budget = Budget.seconds(limit, start=t0)  # the clock starts here, not at the state
    # screen=False: no numpy screen (enumeration, pool, climbing): the oracle alone
    res = faithful_loop(state, "l1", solve, learners, budget, screen=False)
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - c0
    if res.certified:
        status = "faithful"
    elif seconds >= limit or budget.expired():
        status = "time-limit"
    elif res.rounds >= cfg.tuning.master.max_rounds:
        status = "max-rounds"
    else:
        status = "inconclusive"  # an UNKNOWN pair before the limit (e.g. max_spurious)
    return OracleRun(
        status=status,
        seconds=seconds,
        cpu_seconds=cpu,
        time_limit=limit,
        rounds=res.rounds,
        pair_solves=state.oracle.stats.solves,
        samples=len(state.history),
        oracle_seconds=state.oracle.stats.seconds,
        l1_value=res.objective,
        trees=None if res.model is None else res.model.n_trees,
        start_samples=start,
    )


def print_nothing(_message: str) -> None:
    """The run state's progress callback: the L1 loop's rounds are not shown."""


def run_case(
    case: Case,
    limit: float,
    threads: int,
    budget_end: float | None,
    weight_left: float,
    oracles: Sequence[str] = ORACLES,
    schedule: str = "parallel",
) -> None:
    """Prepare the model and run the ``oracles`` (in ``ORACLES`` order, so the
    constraint-based one first) on it."""
    cfg = harness.Config(case.dataset, "rf", case.n_estimators, case.depth, "prune", 0, 0, 0)
    prep = harness.prepare(cfg)
    case.n_features = prep.original.n_features
    case.n_classes = prep.original.n_classes
    for kind in (k for k in ORACLES if k in oracles):
        this = limit
        if budget_end is not None:  # this run's weighted share of what is left
            share = (budget_end - time.perf_counter()) * BUDGET_WEIGHT[kind] / weight_left
            this = min(limit, max(1.0, share))
        weight_left -= BUDGET_WEIGHT[kind]
        case.runs[kind] = r = run_oracle(prep, kind, this, threads, schedule)
        case.initial_samples = r.start_samples
        print(
            f"{case.key} {kind:>10}: {r.status} in {r.seconds:.1f} s "
            f"(CPU {r.cpu_seconds:.1f} s, limit {this:.0f} s), "
            f"{r.rounds} rounds, {r.pair_solves} pair solves, {r.samples} samples",
            flush=True,
        )


# ------------------------------------------------------------------------------ report


def median_ratio(cases: Sequence[Case], name: str = "objective") -> float | None:
    """Median ratio over the cases where both runs reached faithfulness."""
    ratios = [r for r in (c.ratio(name) for c in cases) if r is not None]
    return statistics.median(ratios) if ratios else None


def median_summary(cases: Sequence[Case], name: str) -> str:
    """``N.Nx`` (median over cases where both finished), or ``>N.Nx (lower bound: ...)``
    when some ``name`` runs hit their time limit: their ratios are lower bounds, so the
    median over finished ratios and lower bounds is a lower bound on the median; ``n/a``
    when no case has a ratio or a bound."""
    exact = [r for r in (c.ratio(name) for c in cases) if r is not None]
    bounds = [b for b in (c.lower_bound(name) for c in cases) if b is not None]
    if not bounds:
        return "n/a" if not exact else f"{statistics.median(exact):.1f}x"
    med = statistics.median(exact + bounds)
    return (
        f">{med:.1f}x (lower bound: median over {len(exact) + len(bounds)} case(s), "
        f"{len(bounds)} of them cut by the time limit)"
    )


def render_md(cases: Sequence[Case], command: str, started: str, args: argparse.Namespace) -> str:
    def cells(run: OracleRun) -> list[str]:
        return [
            run.status,
            f"{run.seconds:.1f}",
            f"{run.cpu_seconds:.1f}",
            str(run.rounds),
            str(run.pair_solves),
            str(run.samples),
        ]

    header = ["case", "feat.", "cls", "X^o"]
    for name in ORACLES:
        header += [f"{LABEL[name]} status", "T (s)", "CPU (s)", "rounds", "pair solves", "samples"]
    header += [f"T {LABEL[name]} / T cons" for name in BASELINES]
    rows = [
        [c.key, str(c.n_features), str(c.n_classes), str(c.initial_samples)]
        + [x for name in ORACLES for x in cells(c.runs.get(name, OracleRun()))]
        + [c.ratio_cell(name) for name in BASELINES]
        for c in cases
    ]
    medians = [
        f"- T({LABEL[name]}) / T(constraint CP-SAT): median "
        f"{'--' if (m := median_ratio(cases, name)) is None else f'{m:.1f}x'} over the "
        f"{sum(c.ratio(name) is not None for c in cases)} case(s) where both reached global "
        f"faithfulness; with time-limited runs as lower bounds: {median_summary(cases, name)}"
        for name in BASELINES
    ]
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    limits = sorted({r.time_limit for c in cases for r in c.runs.values()})
    out = [
        f"# Separation oracle comparison (paper Result 1){' — quick' if args.quick else ''}",
        "",
        f"- command: `{command}`",
        f"- date (UTC): started {started}, written {harness.now()}",
        "- machine: " + "; ".join(f"{k} {v}" for k, v in harness.machine_info()),
        f"- load average when written (1, 5, 15 min): {load} — the machine is shared, so "
        "absolute times are noisy; both oracles of a case run back to back in one process",
        f"- per-run time limit: {args.time_limit:g} s"
        + (
            f", total budget {args.budget:g} s shared among the runs left (weights "
            + ", ".join(f"{k} {w:g}" for k, w in BUDGET_WEIGHT.items())
            + ")"
            if args.budget
            else ""
        )
        + f" (limits used: {', '.join(f'{v:.0f}' for v in limits) or '--'} s); "
        f"threads: {args.threads} (CP-SAT workers; HiGHS threads for the MILP); "
        f"constraint oracle's pair schedule: {args.constraint_schedule}"
        + (
            " (the product's default: pairs at once in single-worker CP-SAT attempts, a "
            "thread left idle starts another attempt on an undecided pair, attempts "
            "alternate CP-SAT's LP off/on; at most threads + 1 solvers at once)"
            if args.constraint_schedule == "race"
            else " (pairs at once, threads // pairs workers each, as the baselines)"
        ),
        "",
        "Protocol: random forest (seed 0) on the binned 80% split; the L1 loop on the "
        "original trees with eta = delta = 0 (global region) until every label pair is "
        "proved INFEASIBLE, three times: with the constraint-based oracle (the product's, "
        "CP-SAT), with the objective-based one on the same CP-SAT model and parameters "
        "(FIPE style: maximise S'_y - S'_y0), and with the objective-based one as a HiGHS "
        "MILP (binary order variables per feature, leaf variables per tree, the same "
        "region, maximise S'_y - S'_y0 to optimality; FIPE solved a MILP). Every point "
        "any oracle returns is re-checked exactly. Enumeration pre-search off in all. T = "
        "wall seconds of the L1 loop (master LP included, identical in all); CPU = its "
        "process CPU seconds over all threads (less sensitive to other load on the "
        "machine); rounds = "
        "separation calls (one master solve each); pair solves = separation problems "
        "(label pairs over all rounds); samples = separating samples added; X^o = distinct "
        "training cells the loop starts from.",
        "",
        harness.md_table(header, rows),
        "",
        "`>Nx`: that run hit its time limit, so the ratio is a lower bound; `--`: no ratio "
        "(the constraint run did not finish, or the other run stopped otherwise).",
        "",
        *medians,
        f"- Paper's claim: {PAPER_CLAIM}.",
        "",
        f"CP-SAT objective: {median_summary(cases, 'objective')}",
        f"speedup: {median_summary(cases, 'milp')}",
    ]
    return "\n".join(out) + "\n"


def render_csv(cases: Sequence[Case]) -> str:
    names = list(Case("", 0, 0).row())
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    for c in cases:
        writer.writerow(c.row())
    return buf.getvalue()


# --------------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small slice, about 5 minutes")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results directory")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per oracle run")
    ap.add_argument("--budget", type=float, default=None, help="seconds for the whole run")
    ap.add_argument("--threads", type=int, default=2, help="solver threads (default 2)")
    ap.add_argument("--only", default=None, help="regex on case keys, e.g. 'compas-n50'")
    ap.add_argument(
        "--oracles",
        default=",".join(ORACLES),
        help="comma-separated oracles to run (constraint is always run: the ratios' "
        "denominator); e.g. constraint,milp for a long MILP-only comparison",
    )
    ap.add_argument(
        "--constraint-schedule",
        choices=["parallel", "race"],
        default="parallel",
        help="pair schedule of the constraint-based oracle: parallel (like the baselines, "
        "default) or race (the product's default)",
    )
    ap.add_argument(
        "--stem",
        default=None,
        help="file name stem of the results (default oracle_compare, or oracle_compare_quick)",
    )
    args = ap.parse_args(argv)
    args.oracles = ["constraint", *(o for o in args.oracles.split(",") if o and o != "constraint")]
    unknown = sorted(set(args.oracles) - set(ORACLES))
    if unknown:
        ap.error(f"unknown oracle(s) {', '.join(unknown)}; choose from {', '.join(ORACLES)}")
    if args.time_limit is None:
        args.time_limit = 150.0 if args.quick else 600.0
    if args.budget is None and args.quick:
        args.budget = harness.ORACLE_BUDGET
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    harness.machine_info()  # the revision (and versions) this run starts from
    command = harness.command_line("benchmarks.oracle_compare", argv)
    started = harness.now()
    specs = QUICK_CASES if args.quick else FULL_CASES
    cases = [Case(*s) for s in specs]
    if args.only:
        cases = [c for c in cases if re.search(args.only, c.key)]
    stem = args.stem or ("oracle_compare_quick" if args.quick else "oracle_compare")
    args.out.mkdir(parents=True, exist_ok=True)
    budget_end = None if not args.budget else time.perf_counter() + args.budget
    for i, case in enumerate(cases):
        weight_left = (len(cases) - i) * sum(BUDGET_WEIGHT[k] for k in args.oracles)
        run_case(
            case, args.time_limit, args.threads, budget_end, weight_left, args.oracles,
            args.constraint_schedule,
        )  # fmt: skip
        done = cases[: i + 1]
        harness.write_atomic(args.out / f"{stem}.csv", render_csv(done))
        harness.write_atomic(args.out / f"{stem}.md", render_md(done, command, started, args))
    print(f"CP-SAT objective: {median_summary(cases, 'objective')}")
    print(f"speedup: {median_summary(cases, 'milp')} -> {args.out / stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
