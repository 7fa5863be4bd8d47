"""CP-SAT settings of the separation oracle, side by side on the same candidates.

For each case (dataset, RF n_estimators x depth, eta, delta; prepared as in the
harness, seed 0) the candidates are: the L1 loop's first candidate (weights fitted to
the training rows only: its first CP-SAT round, mostly FEASIBLE near the decision
boundary), the certified candidate the loop ends on (every pair INFEASIBLE: its last
round; left out if the loop does not certify within ``--l1-limit``), and two random
subsets of n/4 original trees (mostly FEASIBLE). Then every variant separates the same
candidates, one after the other in one process, each with its own oracle
(:class:`~pace_cert.oracle.cpsat.SeparationOracle` built with the variant's
:class:`~pace_cert.oracle.settings.OracleSettings`, hinted by the run's screen):

- ``default``: ``OracleSettings()``, the settings as shipped;
- each ``--variant KEY=VALUE[;KEY=VALUE]``: the shipped settings with these changed.

Hints (``OracleSettings.use_hints``) are on unless a variant says ``hints=False``;
``schedule=race|parallel|sequential`` sets ``OracleSettings.schedule`` (shipped:
``race``); ``race_linearization=0,1`` sets the racing attempts' cycle of
``linearization_level`` in every region (shipped: ``race_linearization`` without a
plausibility forest, ``race_linearization_stumps`` for depth-1 originals,
``race_linearization_plausible`` with one; ``race_linearization=1`` is the racing
schedule before the portfolio: CP-SAT's default on every attempt). T is the wall time
of ``separate`` with ``--threads``; the status string has one letter per pair (I:
INFEASIBLE, F: FEASIBLE, U: UNKNOWN). ``tree_sums=none|plausibility|all`` sets
``OracleSettings.tree_sums`` (shipped: ``plausibility``). Any other key is a CP-SAT
parameter, set over the shipped ``cpsat_params``.

    python -m benchmarks.studies.cpsat_params --variant use_sat_inprocessing=True \\
        --variant 'use_sat_inprocessing=True;hints=False' \\
        --out benchmarks/results/studies/cpsat_params.md
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from pace_cert.budget import Budget
from pace_cert.driver.phases.l1 import l1_loop
from pace_cert.driver.state import RunState
from pace_cert.model.ensemble import Ensemble
from pace_cert.oracle.cpsat import SeparationOracle
from pace_cert.oracle.score_model import ScoreModel
from pace_cert.oracle.settings import OracleSettings
from pace_cert.region.margins import required_margin
from pace_cert.settings import CompressConfig

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
SHIPPED = OracleSettings()


@dataclasses.dataclass
class Variant:
    """One column: CP-SAT parameter overrides and the oracle's own switches."""

    params: dict[str, object]
    hints: bool = SHIPPED.use_hints
    schedule: str = SHIPPED.schedule
    race_linearization: tuple[int, ...] | None = None  # None: as shipped
    tree_sums: str = SHIPPED.tree_sums

    def settings(self, base: OracleSettings = SHIPPED) -> OracleSettings:
        """``base`` with this variant's changes."""
        levels = self.race_linearization
        lin = (
            {}
            if levels is None
            else dict(
                race_linearization=levels,
                race_linearization_stumps=levels,
                race_linearization_plausible=levels,
            )
        )
        return dataclasses.replace(
            base,
            cpsat_params={**base.cpsat_params, **self.params},
            use_hints=self.hints,
            schedule=self.schedule,
            tree_sums=self.tree_sums,
            **lin,
        )


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


def oracle_for(state: RunState, settings: OracleSettings, seed: int | None = None):
    """A fresh oracle for the run's region with ``settings``, hinted by its screen."""
    return SeparationOracle(
        state.domain,
        ScoreModel.from_ensemble(state.original),
        state.region,
        seed=state.cfg.seed if seed is None else seed,
        settings=settings,
        hints=state.screen,
    )


def candidates(state: RunState, l1_limit: float) -> list[tuple[str, Ensemble]]:
    """The L1 loop's first and (if it certifies) last candidates, and two random
    subsets of a quarter of the original trees."""
    ens = state.original
    learners = list(ens.trees)
    first, _ = state.candidate(
        state.l1_master.solve(state.matrix(learners), len(learners)), learners
    )
    res, _ = l1_loop(state, learners, Budget.seconds(l1_limit))
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variant", action="append", default=[], help="KEY=VALUE[;KEY=VALUE]")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--time-limit", type=float, default=120.0, help="seconds per separate()")
    p.add_argument("--only", default="", help="substring of 'dataset-nN-dD'")
    p.add_argument("--l1-limit", type=float, default=300.0, help="seconds for the L1 loop per case")
    p.add_argument("--out", type=Path, default=None, help="write a Markdown table here")
    args = p.parse_args(argv)
    variants = ["default", *args.variant]
    settings = {v: parse_variant("" if v == "default" else v).settings() for v in variants}
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
        cfg = CompressConfig.of(mode="prune", eta=eta, delta=delta, time_limit=args.l1_limit)
        state = RunState.create(
            prep.original, prep.X_train, cfg, Budget.seconds(args.l1_limit), lambda _m: None
        )
        oracles = {v: oracle_for(state, settings[v]) for v in variants}
        for label, cand in candidates(state, args.l1_limit):
            sm = ScoreModel.from_ensemble(cand)
            cells = []
            for v in variants:
                t = time.perf_counter()
                res = oracles[v].separate(
                    sm,
                    required_margin(cand),
                    threads=args.threads,
                    budget=Budget.seconds(args.time_limit),
                )
                dt = time.perf_counter() - t
                totals[v] += dt
                cells.append(f"{''.join(r.status[0] for r in res)} | {dt:.2f}")
            row = f"| {name} | {label} | " + " | ".join(cells) + " |"
            lines.append(row)
            print(row, flush=True)
    lines.append("| **total** | | " + " | ".join(f" | {totals[v]:.1f}" for v in variants) + " |")
    print(lines[-1])
    if args.out:
        head = harness.report_head(
            "CP-SAT settings of the separation oracle",
            "benchmarks.studies.cpsat_params",
            [
                f"shipped settings (`default`): `{SHIPPED.cpsat_params}`, racing "
                f"linearization_level by attempt `{SHIPPED.race_linearization}` (depth-1 "
                f"originals `{SHIPPED.race_linearization_stumps}`, with a plausibility "
                f"forest `{SHIPPED.race_linearization_plausible}`), hints on",
                f"threads: {args.threads}; per-call limit {args.time_limit} s",
            ],
            __doc__,
            argv,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(head + lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
