"""Lower bounds on PACE sizes in our region (any depth-2 model), beside the paper's Table 2.

For each case (random forest, depth 2, eta = delta = 0.1, seed 0, the harness's
preprocessing) the driver's synthesis step (``synthesize_trees`` of
``pace_cert/driver/phases/synth.py``, CP-SAT in ``pace_cert/learners/synth.py``) runs
alone from the training rows, with ``--time-limit``: for k = 1, 2, ... CP-SAT looks
for k trees of depth <= 2 whose joint partition holds one original label per cell on the
samples; found trees go through the refit loop (leaf values by LP, the oracle certifies
or adds separating samples), and a proof that no k trees are pure raises the bound to
k + 1. Any model of k such trees -- PACE's generated trees, re-fitted leaves, any
weights -- predicts one label per cell of their joint partition, so the bound holds for
every faithful model of the family, whatever the algorithm.

The samples are then restricted to the stated region (the certificate's exact masks:
domain, original margin > eta, plausibility >= delta_abs; a separating sample may sit in
the rounding slack just outside) and the last proof is re-run on those alone: `bound`
is stated for the region itself only when that re-check is INFEASIBLE too (else `*`).
Where the bound exceeds the paper's PACE S, the paper's size cannot be reached by any
depth-2 model in our region.

    python -m benchmarks.studies.pace_bound --time-limit 120 \
        --out benchmarks/results/studies/pace_bound.md
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks import harness
from benchmarks.harness import paper_values as pv
from pace_cert.budget import Budget
from pace_cert.driver.phases.synth import synthesize_trees
from pace_cert.driver.state import RunState
from pace_cert.learners import synth
from pace_cert.region.masks import margin_mask, plausibility_mask
from pace_cert.settings import CompressConfig

DATASETS = ("cancer", "compas", "diabetes", "fico", "seeds", "spambase")
CASES = [(ds, n) for ds in DATASETS for n in (25, 50, 100)]


@dataclass
class Bound:
    dataset: str
    n: int
    bound: int  # no faithful model of fewer depth-2 trees (proved on the samples)
    in_region: bool  # the last proof holds on the samples inside the stated region too
    certified: int | None  # trees of a model the synthesis certified (None: none in time)
    rows: int  # samples at the end
    outside: int  # of them outside the stated region (rounding slack)
    seconds: float


def run_case(dataset: str, n: int, time_limit: float, max_size: int, solve_limit: float) -> Bound:
    cfg = harness.Config(dataset, "rf", n, 2, "pace", 0.1, 0.1, 0)
    prep = harness.prepare(cfg)
    cc = CompressConfig.of(
        mode="pace", eta=0.1, delta=0.1, time_limit=time_limit, threads=2,
        synth_seconds=solve_limit,
    )  # fmt: skip
    t0 = time.perf_counter()
    budget = Budget.seconds(time_limit, start=t0)
    state = RunState.create(prep.original, prep.X_train, cc, budget, lambda _m: None)
    res = synthesize_trees(state, max_size, budget)
    seconds = time.perf_counter() - t0
    inside = state.domain.contains(state.X) & margin_mask(
        prep.original, state.X, state.region.margin
    )
    if state.plausibility is not None:
        inside &= plausibility_mask(state.plausibility, state.X)
    bound = state.size_bound or 1
    in_region = bound == 1
    if bound > 1:
        X = state.X[inside]
        check = synth.synthesize(
            state.domain.cell_index(X), prep.original.predict_index(X),
            prep.original.n_classes, bound - 1, 2, threads=2,
        )  # fmt: skip
        in_region = check.status == "infeasible"
    return Bound(
        dataset,
        n,
        bound,
        in_region,
        res.model.n_trees if res.certified and res.model is not None else None,
        len(state.X),
        int((~inside).sum()),
        seconds,
    )


def table2_pace(path: Path) -> dict[tuple[str, int], str]:
    """Our PACE S per (dataset, n) from the Table-2 CSV ("—" when not certified)."""
    return {
        (r.dataset, r.n_estimators): str(r.S) if r.status == "certified" else "—"
        for r in harness.read_results(path).values()
        if r.mode == "pace" and r.depth == 2
    }


def render(rows: list[Bound], command: str, time_limit: float, ours: dict) -> str:
    lines = [
        "# Lower bounds on PACE sizes in our region (`pace_bound.py`)",
        "",
        f"- command: `{command}`",
        f"- date (UTC): {harness.now()}",
        "- random forests, depth 2, eta = delta = 0.1, seed 0, harness preprocessing; the "
        f"synthesis phase alone from the training rows, capped at {time_limit:g} s per case",
        "",
        "`bound`: no model of fewer trees of depth <= 2 (any leaf values and weights) is "
        "faithful in our region: CP-SAT proved that no such set splits the samples into "
        "cells of one label (`*`: proved on all samples, not re-proved on those inside the "
        "stated region alone). `synth S`: a model the synthesis certified within the cap "
        "(— none). `ours PACE S`: `results/profiles/table2.csv` (100 s cap).",
        "",
    ]
    header = ["dataset", "n", "bound", "synth S", "T (s)", "samples", "outside",
              "ours PACE S", "paper PACE S", "paper PACE reachable here?"]  # fmt: skip
    body = []
    for b in rows:
        pa = pv.pruning_table("rf", b.dataset, b.n, "pace")
        verdict = harness.paper_verdict(b.bound, pa)
        body.append([
            b.dataset, str(b.n), f"{b.bound}{'' if b.in_region else '*'}",
            "—" if b.certified is None else str(b.certified), f"{b.seconds:.0f}",
            str(b.rows), str(b.outside), ours.get((b.dataset, b.n), "--"),
            harness.paper_cell(pa, "S") or "--", verdict,
        ])  # fmt: skip
    lines.append(harness.md_table(header, body))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=120.0, help="per case (s)")
    ap.add_argument("--max-size", type=int, default=4, help="largest k to try")
    ap.add_argument("--solve-limit", type=float, default=60.0, help="per CP-SAT solve (s)")
    ap.add_argument("--only", default=None, help="regex on 'dataset-n'")
    ap.add_argument("--out", type=Path, default=None, help="Markdown file to write")
    args = ap.parse_args(argv)
    rows = []
    for ds, n in harness.select_cases(CASES, args.only):
        b = run_case(ds, n, args.time_limit, args.max_size, args.solve_limit)
        print(b, flush=True)
        rows.append(b)
    ours = table2_pace(harness.PROFILES_OUT / "table2.csv")
    command = harness.command_line("benchmarks.studies.pace_bound", argv)
    harness.emit_report(render(rows, command, args.time_limit, ours), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
