"""Tuning variants side by side on paper Table 2's forests.

For each case (random forest, depth 2, eta = delta = 0.1, seed 0, the harness's
preprocessing, 2 threads) one compress run per variant in this process, one after the
other (``-v``: with each run's progress lines). A variant is ``NAME=JSON``:
CompressConfig fields by their own names (tuning fields or user fields such as
``milp``), e.g. ``off='{"shrink_rounds": 0}'``. The row
gives each run's certified size, the phase that found it and the checkable pruning
bound its certificate states, and the paper's prune-only size. Runs with 2 threads are
not bit-for-bit repeatable, so a difference of a tree or two can be noise.

    python -m benchmarks.studies.side_by_side --time-limit 100 \\
        --variant 'off={"shrink_rounds": 0}' --variant 'on={"shrink_rounds": 3}' \\
        --out benchmarks/results/studies/shrink.md
"""

from __future__ import annotations

import json
import shlex
import sys
import time

from benchmarks import harness
from benchmarks.harness import paper_values as pv
from benchmarks.studies.pruning_bound import CASES, ROOT, case_arguments, header, run_case


def parse_variant(text: str) -> tuple[str, dict]:
    name, _, settings = text.partition("=")
    return name, json.loads(settings or "{}")


def render(rows: list[dict], variants: list[tuple[str, dict]], command: str, commit: str) -> str:
    head = ["dataset", "n"]
    for name, _ in variants:
        head += [f"{name}: trees", "phase", "bound"]
    head.append("paper prune S")
    notes = [
        "- the runs of a row one after the other in one process; variants: "
        + "; ".join(f"`{n}` = `{json.dumps(s)}`" for n, s in variants),
        "",
        "`bound`: the pruning lower bound each run's certificate states (verify re-checks "
        "it); `phase`: the step whose model was kept.",
    ]
    lines = header("Variants side by side (Table 2 forests)", command, commit, notes, head)
    for r in rows:
        pp = pv.pruning_table("rf", r["dataset"], r["n"], "prune")
        cells = [r["dataset"], r["n"]]
        for name, _ in variants:
            cells += [r[name]["after"], r[name]["phase"], r[name]["bound"]]
        cells.append("--" if pp is None else pp.S)
        lines.append("| " + " | ".join("-" if c is None else str(c) for c in cells) + " |")
    if rows:
        totals = ", ".join(f"{n} {sum(r[n]['after'] for r in rows)}" for n, _ in variants)
        lines += ["", f"Trees in all ({len(rows)} cases): {totals}."]
    return "\n".join(lines) + "\n"


def _printer(prefix: str):
    """A progress callback printing each line after ``prefix`` and the seconds since
    the callback was made (about the run's start)."""
    start = time.monotonic()

    def say(message: str) -> None:
        print(f"{prefix}{time.monotonic() - start:6.1f}s {message}", flush=True)

    return say


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv  # the command line, quoted in results
    ap = case_arguments("python -m benchmarks.studies.side_by_side")
    ap.add_argument("--variant", action="append", type=parse_variant, required=True)
    ap.add_argument("-v", "--verbose", action="store_true", help="show each run's progress")
    args = ap.parse_args(argv)
    command = "python -m benchmarks.studies.side_by_side " + shlex.join(argv or [])
    commit = harness.git_revision(ROOT)
    rows = []
    for ds, n in harness.select_cases(CASES, args.only):
        row: dict = {"dataset": ds, "n": n}
        for name, settings in args.variant:
            progress = _printer(f"    {ds} n{n} {name}: ") if args.verbose else None
            row[name] = run_case(ds, n, args.mode, args.time_limit, progress, **settings)
        rows.append(row)
        said = ", ".join(f"{name} {row[name]['after']}" for name, _ in args.variant)
        print(f"{ds} n{n}: {said}", flush=True)
        if args.out is not None:
            args.out.write_text(render(rows, args.variant, command.strip(), commit))
    print(render(rows, args.variant, command.strip(), commit))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
