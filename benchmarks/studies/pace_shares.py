"""Does splitting PACE's time limit between its phases give smaller models?

At a 100 s cap, every real-valued Table-2 PACE row ends with generation_stop "not run":
pruning the original trees takes the whole time limit, so column generation and the
L0 on the enriched ensemble never start. This runs PACE (random forests, depth 2,
eta = delta = 0.1, seed 0, the harness's preprocessing) with the default split (each
phase may use all the time left) beside settings that cap the prune, boosting and
generation phases at a fraction of the time left (the PACE tuning's ``prune_share``,
``boost_share``, ``generate_share``), side by side in one run.

    python -m benchmarks.studies.pace_shares --time-limit 100 --setting 1,1,1 \
        --setting 0.3,1,0.4 --out benchmarks/results/studies/pace_shares.md
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks import harness
from pace_cert.driver.runner import compress
from pace_cert.settings import CompressConfig

DATASETS = ("cancer", "diabetes", "seeds")


@dataclass(frozen=True)
class Setting:
    prune: float
    boost: float
    generate: float

    @property
    def label(self) -> str:
        return f"prune {self.prune:g} / boost {self.boost:g} / generate {self.generate:g}"


@dataclass
class Row:
    dataset: str
    n: int
    setting: Setting
    size: int
    certified: bool
    phase: str
    stop: str
    bound: int | None
    seconds: float
    new: int = 0  # trees of the returned model that are not (merged) original trees


def run_case(dataset: str, n: int, s: Setting, time_limit: float) -> Row:
    prep = harness.prepare(harness.Config(dataset, "rf", n, 2, "pace", 0.1, 0.1, 0))
    cc = CompressConfig.of(
        mode="pace", eta=0.1, delta=0.1, seed=0, threads=2, time_limit=time_limit,
        prune_share=s.prune, boost_share=s.boost, generate_share=s.generate,
    )  # fmt: skip
    t0 = time.perf_counter()
    res = compress(prep.original, prep.X_train, cc)
    return Row(
        dataset, n, s, res.compressed.n_trees, res.certified, res.phase,
        res.generation_stop, res.size_bound, time.perf_counter() - t0,
        sum(not trees for trees in res.original_trees) if res.certified else 0,
    )  # fmt: skip


def render(rows: list[Row], settings: list[Setting], command: str, limit: float) -> str:
    lines = [
        "# PACE time split between phases (`pace_shares.py`)",
        "",
        f"- command: `{command}`",
        f"- date (UTC): {harness.now()}",
        f"- random forests, depth 2, eta = delta = 0.1, seed 0; {limit:g} s per run, 2 threads",
        "",
        "Each cell: S (trees of the returned certified model; `k new`: k of them generated), "
        "the phase that produced it, "
        "generation_stop, the proved size lower bound, and wall seconds.",
        "",
    ]
    header = ["dataset", "n"] + [s.label for s in settings]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    by = {(r.dataset, r.n, r.setting): r for r in rows}
    for ds, n in dict.fromkeys((r.dataset, r.n) for r in rows):
        cells = []
        for s in settings:
            r = by.get((ds, n, s))
            if r is None:
                cells.append("—")
                continue
            size = str(r.size) if r.certified else f"{r.size} (uncertified)"
            size += f", {r.new} new" if r.new else ""
            bound = "no bound" if r.bound is None else f"bound {r.bound}"
            cells.append(f"{size} ({r.phase}; {r.stop}; {bound}; {r.seconds:.0f} s)")
        lines.append(f"| {ds} | {n} | " + " | ".join(cells) + " |")
    lines.append("")
    for s in settings:
        sizes = [r.size for r in rows if r.setting == s]
        if sizes:
            lines.append(f"- {s.label}: mean S {sum(sizes) / len(sizes):.1f} over {len(sizes)}")
    return "\n".join(lines) + "\n"


def parse_setting(text: str) -> Setting:
    prune, boost, generate = (float(v) for v in text.split(","))
    return Setting(prune, boost, generate)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=100.0)
    ap.add_argument("--setting", action="append", type=parse_setting,
                    help="prune,boost,generate shares of the time left (repeatable)")  # fmt: skip
    ap.add_argument("--n", type=int, action="append", help="trees (default 25, 50, 100)")
    ap.add_argument("--dataset", action="append", help=f"default {', '.join(DATASETS)}")
    ap.add_argument("--out", type=Path, default=harness.STUDIES_OUT / "pace_shares.md")
    args = ap.parse_args(argv)
    settings = args.setting or [Setting(1, 1, 1), Setting(0.3, 1, 0.4)]
    command = harness.command_line("benchmarks.studies.pace_shares", argv)
    rows = []
    for ds in args.dataset or DATASETS:
        for n in args.n or (25, 50, 100):
            for s in settings:
                rows.append(run_case(ds, n, s, args.time_limit))
                r = rows[-1]
                print(f"{ds} n={n} {s.label}: S {r.size} ({r.phase}, {r.seconds:.0f} s)")
                # after every run: a long sweep stopped part-way keeps what it measured
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(render(rows, settings, command, args.time_limit))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
