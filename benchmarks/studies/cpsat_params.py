"""CP-SAT settings of the separation oracle, side by side on the same candidates.

For each case (dataset, RF n_estimators x depth, eta, delta; prepared as in
``harness.py``, seed 0) the candidates are: the L1 loop's first candidate (weights
fitted to the training rows only: its first CP-SAT round, mostly FEASIBLE near the
decision boundary), the certified candidate the loop ends on (every pair INFEASIBLE:
its last round; left out if the loop does not certify within ``--l1-limit``), and two
random subsets of n/4 original trees (mostly FEASIBLE). Then every variant separates
the same candidates, one after the other in one process:

- ``default``: ``oracle.CPSAT_PARAMS`` and the pair schedule as shipped;
- each ``--variant KEY=VALUE[;KEY=VALUE]``: the shipped settings with these changed.

Hints (``SeparationOracle.use_hints``) are on unless a variant says ``hints=False``;
``schedule=race|parallel|sequential`` sets ``SeparationOracle.schedule`` (shipped:
``race``); ``race_linearization=0,1`` sets the racing attempts' cycle of
``linearization_level`` in every region (shipped: ``oracle.RACE_LINEARIZATION`` without
a plausibility forest, ``RACE_LINEARIZATION_PLAUSIBLE`` with one; ``race_linearization=1``
is the racing schedule before the portfolio: CP-SAT's default on every attempt). T is the
wall time of ``separate`` with ``--threads``; the status string has one letter per pair
(I: INFEASIBLE, F: FEASIBLE, U: UNKNOWN). ``tree_sums=none|plausibility|all`` sets
``SeparationOracle.tree_sums`` (shipped: ``plausibility``).

    python benchmarks/cpsat_params.py --variant use_sat_inprocessing=True \\
        --variant 'use_sat_inprocessing=True;hints=False' --out benchmarks/results/cpsat_params.md
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness

from pace_cert.oracle import cpsat as oracle_mod
from pace_cert.oracle.score_model import ScoreModel
from pace_cert.settings import CompressConfig
from tests.helpers import run_state as Pace  # TODO(restructure)
from pace_cert.region.margins import required_margin

CASES = [
    ("seeds", 25, 2, 0.1, 0.1),
    ("diabetes", 50, 2, 0.1, 0.1),
    ("cancer", 25, 2, 0.1, 0.1),
    ("spambase", 25, 2, 0.1, 0.1),
    ("spambase", 50, 2, 0.1, 0.1),
    ("compas", 25, 2, 0.1, 0.1),
    ("fico", 25, 2, 0.1, 0.1),
    ("compas", 50, 5, 0.0, 0.0),
    ("cancer", 25, 3, 0.0, 0.0),
    ("compas", 50, 7, 0.0, 0.0),
]


SHIPPED_RACE_LINEARIZATION = (
    oracle_mod.RACE_LINEARIZATION,
    oracle_mod.RACE_LINEARIZATION_STUMPS,
    oracle_mod.RACE_LINEARIZATION_PLAUSIBLE,
)  # (without a plausibility forest, stumps, with one); variants change them
SHIPPED_TREE_SUMS = oracle_mod.TREE_SUMS


def set_race_linearization(levels: tuple[int, ...] | None) -> None:
    """Racing attempts' linearization levels in every region (None: as shipped)."""
    plain, stumps, plausible = (
        SHIPPED_RACE_LINEARIZATION if levels is None else (levels, levels, levels)
    )
    oracle_mod.RACE_LINEARIZATION = plain
    oracle_mod.RACE_LINEARIZATION_STUMPS = stumps
    oracle_mod.RACE_LINEARIZATION_PLAUSIBLE = plausible


@dataclasses.dataclass
class Variant:
    """One column: CP-SAT parameter overrides and the oracle's own switches."""

    params: dict[str, object]
    hints: bool = True
    schedule: str = "race"
    race_linearization: tuple[int, ...] | None = None  # None: as shipped
    tree_sums: str = SHIPPED_TREE_SUMS


def parse_variant(spec: str) -> Variant:
    """``KEY=VALUE;...`` -> a :class:`Variant` (unknown keys are CP-SAT parameters)."""
    v = Variant(params={})
    for kv in filter(None, spec.split(";")):
        key, value = kv.split("=", 1)
        if key == "schedule":
            v.schedule = value
        elif key == "tree_sums":
            v.tree_sums = value
        elif key == "race_linearization":
            v.race_linearization = tuple(int(x) for x in value.split(","))
        else:
            parsed: object = {"True": True, "False": False}.get(value)
            if parsed is None:
                parsed = float(value) if "." in value else int(value)
            if key == "hints":
                v.hints = bool(parsed)
            else:
                v.params[key] = parsed
    return v


def candidates(prep: harness.Prepared, pace: Pace) -> list[tuple[str, object]]:
    ens = prep.original
    learners = list(ens.trees)
    first, _ = pace.candidate(pace.l1_master.solve(pace.matrix(learners), len(learners)), learners)
    res, _ = pace.l1_phase(learners)
    out = [("L1 first", first)]
    out += [("L1 certified", res.model)] if res.model is not None else []
    n = ens.n_trees
    for seed in range(2):
        idx = np.random.default_rng(seed).choice(n, max(2, n // 4), replace=False)
        sub = dataclasses.replace(
            ens,
            trees=tuple(ens.trees[i] for i in idx),
            weights=np.asarray(ens.weights)[idx],
            origin=(),
        )
        out.append((f"subset {seed}", sub))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variant", action="append", default=[], help="KEY=VALUE[;KEY=VALUE]")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--time-limit", type=float, default=120.0, help="seconds per separate()")
    p.add_argument("--only", default="", help="substring of 'dataset-nN-dD'")
    p.add_argument("--l1-limit", type=float, default=300.0, help="seconds for the L1 loop per case")
    p.add_argument("--out", type=Path, default=None, help="write a Markdown table here")
    args = p.parse_args()
    shipped = dict(oracle_mod.CPSAT_PARAMS)
    variants = ["default", *args.variant]
    lines = [
        "| case | candidate | " + " | ".join(f"{v} status | T (s)" for v in variants) + " |",
        "|---|---|" + "---|---|" * len(variants),
    ]
    totals = {v: 0.0 for v in variants}
    for ds, n, d, eta, delta in CASES:
        name = f"{ds}-n{n}-d{d}-eta{eta}-delta{delta}"
        if args.only not in name:
            continue
        prep = harness.prepare(harness.Config(ds, "rf", n, d, "prune", eta, delta, 0))
        pace = Pace(
            prep.original,
            prep.X_train,
            CompressConfig.of(mode="prune", eta=eta, delta=delta, time_limit=args.l1_limit),
        )
        oracle = pace.oracle
        for label, cand in candidates(prep, pace):
            sm = ScoreModel.from_ensemble(cand)
            cells = []
            for v in variants:
                var = parse_variant("" if v == "default" else v)
                set_race_linearization(var.race_linearization)
                oracle_mod.CPSAT_PARAMS.clear()
                oracle_mod.CPSAT_PARAMS.update({**shipped, **var.params})
                oracle.use_hints = var.hints
                oracle.schedule = var.schedule
                oracle.tree_sums = var.tree_sums
                t = time.perf_counter()
                res = oracle.separate(
                    sm, required_margin(cand), threads=args.threads, time_limit=args.time_limit
                )
                dt = time.perf_counter() - t
                totals[v] += dt
                cells.append(f"{''.join(r.status[0] for r in res)} | {dt:.2f}")
            row = f"| {name} | {label} | " + " | ".join(cells) + " |"
            lines.append(row)
            print(row, flush=True)
        oracle_mod.CPSAT_PARAMS.clear()
        oracle_mod.CPSAT_PARAMS.update(shipped)
        set_race_linearization(None)
    lines.append("| **total** | | " + " | ".join(f" | {totals[v]:.1f}" for v in variants) + " |")
    print(lines[-1])
    if args.out:
        head = harness.report_head(
            "CP-SAT settings of the separation oracle",
            "cpsat_params.py",
            [
                f"shipped settings (`default`): `{shipped}`, racing linearization_level "
                f"by attempt `{SHIPPED_RACE_LINEARIZATION[0]}` (with a plausibility forest "
                f"`{SHIPPED_RACE_LINEARIZATION[1]}`), hints on",
                f"threads: {args.threads}; per-call limit {args.time_limit} s",
            ],
            __doc__,
        )
        args.out.write_text("\n".join(head + lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
