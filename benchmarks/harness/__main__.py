"""Benchmark harness: reproduce the PACE paper's tables with pace-cert.

    python -m benchmarks.harness quick|fipe|table2|regions|full [--out DIR] [--only PATTERN]

Each configuration follows ``shared/paper/REPRODUCTION.md`` (:mod:`benchmarks.harness.prepare`):
bundled dataset -> 10 ordinal bins -> stratified 80/20 split with the seed ->
scikit-learn ensemble -> skl2onnx -> read back with pace-cert's ONNX reader (so we
measure what onnxruntime runs) -> ``compress`` on the float32 training rows. Results go
to ``<out>/<profile>.csv`` (one row per configuration, appended as soon as it finishes)
and ``<out>/<profile>.md`` (tables with the paper's numbers alongside), by default in
``benchmarks/results/profiles/``. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.harness.profiles import ORACLE_BUDGET, PROFILES, Profile, make_profile
from benchmarks.harness.records import PROFILES_OUT, now, read_results, write_atomic
from benchmarks.harness.report import (
    RunStats,
    command_line,
    load_stats,
    machine_info,
    peak_rss_mb,
    render_report,
    save_stats,
    with_oracle_section,
)
from benchmarks.harness.run import run_profile


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("profile", choices=PROFILES)
    p.add_argument(
        "--out",
        type=Path,
        default=PROFILES_OUT,
        help="results directory (default: benchmarks/results/profiles)",
    )
    p.add_argument(
        "--only",
        metavar="PATTERN",
        help="regex searched in configuration keys, e.g. 'rf-compas' or '-prune-.*-s0$'",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="seconds per configuration (default: 300 quick, 3600 full; 0 = none)",
    )
    p.add_argument("--threads", type=int, default=2, help="CP-SAT threads (default 2)")
    p.add_argument(
        "--fresh",
        action="store_true",
        help="delete the profile's CSV first (full resumes otherwise)",
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="rewrite <profile>.md from the CSV and the last run's "
        "<profile>.run.json without running anything",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="show compress progress")
    p.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="local: one configuration after another in this process; ray: each "
        "configuration a Ray task (--threads CPUs each), as many at once as fit",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        help="with --backend ray: the cluster (default RAY_ADDRESS, else a local Ray "
        "instance with every CPU)",
    )
    args = p.parse_args(argv)
    if args.ray_address is not None and args.backend != "ray":
        p.error("--ray-address needs --backend ray")
    return args


def run_and_report(profile: Profile, args: argparse.Namespace, command: str) -> int:
    """Run the profile, then write the CSV, the run record and the md."""
    stats = RunStats(command=command, started=now(), machine=machine_info())
    if args.fresh:
        (args.out / f"{profile.name}.csv").unlink(missing_ok=True)
    t0 = time.perf_counter()
    if args.backend == "ray":
        from benchmarks.harness.ray_run import run_profile_ray

        results = run_profile_ray(
            profile,
            args.out,
            args.only,
            args.time_limit,
            args.threads,
            args.verbose,
            stats,
            args.ray_address,
        )
    else:
        results = run_profile(
            profile, args.out, args.only, args.time_limit, args.threads, args.verbose, stats
        )
    stats.wall_seconds = time.perf_counter() - t0
    stats.peak_rss_mb = peak_rss_mb()
    save_stats(args.out / f"{profile.name}.run.json", stats)
    md_path = args.out / f"{profile.name}.md"
    report = render_report(profile, results, stats)
    if profile.name == "quick" and not args.only:  # one oracle comparison, last
        from benchmarks import oracle_compare

        oracle_compare.main(["--quick", "--out", str(args.out), "--budget", str(ORACLE_BUDGET)])
        report = with_oracle_section(report, args.out)
    write_atomic(md_path, report)
    print(
        f"wrote {args.out / (profile.name + '.csv')} and {md_path} "
        f"({stats.wall_seconds:.0f} s, peak RSS {stats.peak_rss_mb:.0f} MiB)"
    )
    errors = [
        k
        for k in (c.key for c in profile.configs())
        if k in results and results[k].status == "error"
    ]
    return 1 if errors else 0


def report_only(profile: Profile, args: argparse.Namespace, command: str) -> int:
    """Rewrite the md from the CSV (e.g. after editing a table layout or paper values)."""
    results = read_results(args.out / f"{profile.name}.csv")
    stats = load_stats(args.out / f"{profile.name}.run.json") or RunStats(
        command="(no run recorded)", started="?"
    )
    md_path = args.out / f"{profile.name}.md"
    report = render_report(profile, results, stats, regenerated_by=command)
    if profile.name == "quick":
        report = with_oracle_section(report, args.out)
    write_atomic(md_path, report)
    print(f"wrote {md_path} from {len(results)} rows")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    profile = make_profile(args.profile)
    command = command_line("benchmarks.harness", argv)
    if args.report_only:
        return report_only(profile, args, command)
    return run_and_report(profile, args, command)


if __name__ == "__main__":
    sys.exit(main())
