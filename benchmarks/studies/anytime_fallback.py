"""Which anytime fallback gives smaller certified models when the L0 loop does not converge?

On the real-valued Table-2 forests the L0 loop of a 100 s prune rarely certifies within
its share of the time (every optimal support of the samples is refuted in turn), so the
returned model comes from the fallback that follows it. This runs prune (random
forests, depth 2, eta = delta = 0.1, the harness's preprocessing) with the L0
tuning's ``fallback`` = ``reweight`` (reweighted L1 only) beside ``grow`` (reweighted
L1, then column growth from the L0 loop's last support,
``pace_cert/driver/phases/grow.py``), or other ``--variant``s (settings by their
names, as ``CompressConfig.of`` takes them), rotating their order per case in one
process, and reports the size of the returned certified model, the phase that
produced it and the wall time.

    python -m benchmarks.studies.anytime_fallback --time-limit 100 --seeds 0,1,2 \\
        --case cancer:25 --case seeds:25 --case diabetes:50 \\
        --out benchmarks/results/studies/anytime_fallback.md

Model seeds vary the forest (and its 80/20 split); ``compress`` always runs with seed 0.
Single 100 s runs swing by several trees on the same configuration, so compare means
over several seeds, not single cells.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import harness
from pace_cert.driver.runner import compress
from pace_cert.settings import TUNING_FIELDS, CompressConfig, SettingError

DEFAULT_VARIANTS = ("reweight:fallback=reweight", "grow:fallback=grow")


def setting_default(key: str) -> Any:
    """The shipped value of setting ``key``: a user field of :class:`CompressConfig` or
    a tuning field (by its own name); :class:`SettingError` for any other name."""
    cfg = CompressConfig()
    if key in TUNING_FIELDS:
        return getattr(getattr(cfg.tuning, TUNING_FIELDS[key]), key)
    if key != "tuning" and key in {f.name for f in dataclasses.fields(CompressConfig)}:
        return getattr(cfg, key)
    raise SettingError(key, "is not a setting")


def parse_variant(text: str) -> tuple[str, dict]:
    """``NAME:key=value,key=value`` -> (NAME, settings for ``CompressConfig.of``);
    values are converted to the type of the setting's default (bools from true/false, a
    None default such as ``time_limit`` as a float)."""
    name, _, spec = text.partition(":")
    over: dict = {}
    for item in filter(None, spec.split(",")):
        key, _, value = item.partition("=")
        default = setting_default(key)  # SettingError names an unknown setting
        if isinstance(default, bool):  # bool("false") would be True
            if value.lower() not in ("true", "false"):
                raise ValueError(f"{key} takes true or false, got {value!r}")
            over[key] = value.lower() == "true"
        elif isinstance(default, str):
            over[key] = value
        else:
            over[key] = float(value) if default is None else type(default)(value)
    return name, over


@dataclass
class Row:
    dataset: str
    n: int
    seed: int
    variant: str
    size: int | None
    phase: str
    bound: int | None
    seconds: float


def run_case(dataset: str, n: int, seed: int, variant: tuple[str, dict], time_limit: float) -> Row:
    prep = harness.prepare(harness.Config(dataset, "rf", n, 2, "prune", 0.1, 0.1, seed))
    cc = CompressConfig.of(
        mode="prune", eta=0.1, delta=0.1, seed=0, threads=2, time_limit=time_limit,
        **variant[1],
    )  # fmt: skip
    t0 = time.perf_counter()
    res = compress(prep.original, prep.X_train, cc, None)
    seconds = time.perf_counter() - t0
    size = res.compressed.n_trees if res.certified and res.compressed is not None else None
    return Row(dataset, n, seed, variant[0], size, res.phase, res.size_bound, seconds)


def report(
    rows: list[Row], names: list[str], args: argparse.Namespace, started: str, rev: str
) -> str:
    cases = sorted({(r.dataset, r.n, r.seed) for r in rows}, key=lambda c: (c[0], c[1], c[2]))
    by = {(r.dataset, r.n, r.seed, r.variant): r for r in rows}

    def cell(r: Row | None) -> str:
        if r is None:
            return "--"
        size = "not certified" if r.size is None else str(r.size)
        return f"{size} ({r.phase}; {r.seconds:.0f} s)"

    variants = "; ".join(f"`{v}`" for v in args.variant or DEFAULT_VARIANTS)
    lines = [
        "# Anytime fallback after an unconverged L0 loop (`anytime_fallback.py`)",
        "",
        f"- command: `{harness.command_line('benchmarks.studies.anytime_fallback')}`",
        f"- date (UTC): {started} (pace_cert {rev})",
        f"- prune, random forests depth 2, eta = delta = 0.1; {args.time_limit:g} s per run, "
        "2 threads; variants (name:setting overrides) in rotating order per case: " + variants,
        "",
        "Each cell: S (trees of the returned certified model), the phase that produced it, "
        "wall seconds. Phases: l1 (the L1 model), l0 (the L0 loop converged), "
        "l0-reweighted, l0-grow.",
        "",
        "| dataset | n | model seed | " + " | ".join(names) + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    for ds, n, seed in cases:
        cells = [cell(by.get((ds, n, seed, v))) for v in names]
        lines.append(f"| {ds} | {n} | {seed} | " + " | ".join(cells) + " |")
    lines.append("")
    big = 10**9  # an uncertified run counts as larger than any certified one
    for v in names:
        sizes = [r.size for r in rows if r.variant == v and r.size is not None]
        if sizes:
            lines.append(f"- {v}: mean S {statistics.mean(sizes):.1f} over {len(sizes)} runs")
    for v in names[1:]:
        pairs = [
            (by[(*c, v)].size or big, by[(*c, names[0])].size or big)
            for c in cases
            if (*c, v) in by and (*c, names[0]) in by
        ]
        wins = sum(a < b for a, b in pairs)
        losses = sum(a > b for a, b in pairs)
        lines.append(
            f"- {v} smaller than {names[0]} on {wins} cases, larger on {losses}, of {len(pairs)}"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time-limit", type=float, default=100.0)
    ap.add_argument("--seeds", default="0,1,2", help="model seeds, comma-separated")
    ap.add_argument(
        "--case", action="append", default=[], help="DATASET:N (repeatable; default: "
        "cancer:25, seeds:25, diabetes:50)",
    )  # fmt: skip
    ap.add_argument(
        "--variant", action="append", default=[], help="NAME:key=value,... setting "
        "overrides, by CompressConfig.of's names (repeatable; the first is the baseline; "
        "default: "
        + " and ".join(DEFAULT_VARIANTS) + ")",
    )  # fmt: skip
    ap.add_argument("--out", type=Path, default=None, help="Markdown report (default: stdout)")
    args = ap.parse_args()
    cases = [(c.split(":")[0], int(c.split(":")[1])) for c in args.case] or [
        ("cancer", 25),
        ("seeds", 25),
        ("diabetes", 50),
    ]
    variants = [parse_variant(v) for v in args.variant or DEFAULT_VARIANTS]
    names = [v[0] for v in variants]
    seeds = [int(s) for s in args.seeds.split(",")]
    rev = harness.git_revision(Path(__file__).resolve().parents[2])
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    rows: list[Row] = []
    k = 0
    for seed in seeds:
        for ds, n in cases:
            order = variants[k % len(variants) :] + variants[: k % len(variants)]
            k += 1
            for v in order:
                r = run_case(ds, n, seed, v, args.time_limit)
                print(
                    f"{ds} n{n} s{seed} {v[0]}: {r.size} ({r.phase}, {r.seconds:.0f} s)", flush=True
                )
                rows.append(r)
                text = report(rows, names, args, started, rev)
                if args.out is not None:
                    args.out.write_text(text)
    if args.out is None:
        print(text)


if __name__ == "__main__":
    main()
