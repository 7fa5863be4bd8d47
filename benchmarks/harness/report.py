"""The report: a profile's Markdown (tables, errors, run record), the machine it ran
on, and the small writers the studies share (header, atomic write, case selection)."""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import platform
import re
import resource
import shlex
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.harness import paper_values as pv
from benchmarks.harness.profiles import Profile
from benchmarks.harness.records import Result, now, write_atomic
from benchmarks.harness.tables import Index


def command_line(module: str, argv: Sequence[str] | None = None) -> str:
    """How this process was started: ``python -m MODULE ARGS`` (``argv``: the arguments,
    default this process's), quoted for a shell."""
    return shlex.join(["python", "-m", module, *(sys.argv[1:] if argv is None else argv)])


def report_head(
    title: str, module: str, facts: list[str], doc: str | None, argv: Sequence[str] | None = None
) -> list[str]:
    """Header lines of a side-by-side results file: title, the command that made it
    (``python -m module`` with ``argv``, default this process's arguments), the date,
    ``facts`` (one bullet each) and the script docstring's second paragraph on one line."""
    return [
        f"# {title}",
        "",
        f"- command: `{command_line(module, argv)}`",
        f"- date (UTC): {now()}",
        *(f"- {f}" for f in facts),
        "",
        (doc or "").split("\n\n")[1].replace("\n", " "),
        "",
    ]


# ------------------------------------------ lower-bound studies (studies/*_bound.py)


def select_cases(cases: Iterable[tuple[str, int]], only: str | None) -> list[tuple[str, int]]:
    """(dataset, n) cases whose key "dataset-nN" matches the regex ``only`` (all if None)."""
    return [(ds, n) for ds, n in cases if not only or re.search(only, f"{ds}-n{n}")]


def paper_verdict(bound: int, paper: pv.PaperStat | None) -> str:
    """ "no" when a proved lower ``bound`` exceeds the paper's size S, "not excluded"
    otherwise, "--" when the paper has no S."""
    if paper is None or paper.S is None:
        return "--"
    return "no" if bound > paper.S else "not excluded"


def emit_report(text: str, out: Path | None) -> None:
    """Write ``text`` to ``out`` atomically (when given) and print it."""
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, text)
    print(text)


# ------------------------------------------------------------------------ machine info


def package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_revision(repo: Path) -> str:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}  # read-only: never touch the index
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = (
            subprocess.run(
                ["git", "diff", "--quiet", "HEAD", "--"],
                cwd=repo,
                env=env,
                capture_output=True,
                timeout=10,
            ).returncode
            != 0
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head or 'unknown'}{' (working tree modified)' if dirty else ''}"


@functools.cache
def machine_info() -> list[tuple[str, str]]:
    """Machine, package versions and the pace_cert git revision, as of the first call
    (call it when a run starts: later commits must not relabel the run)."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    pkgs = (
        "pace-cert",
        "ortools",
        "highspy",
        "numpy",
        "scikit-learn",
        "onnx",
        "onnxruntime",
        "skl2onnx",
    )
    return [
        ("nproc (usable / total)", f"{affinity} / {os.cpu_count()}"),
        ("cpu", cpu_model()),
        ("os", platform.platform()),
        ("python", platform.python_version()),
        *((name, package_version(name)) for name in pkgs),
        ("pace_cert git", git_revision(Path(__file__).resolve().parents[2])),
    ]


# ------------------------------------------------------------------------- the report


@dataclass
class RunStats:
    """What one invocation did; saved as ``<profile>.run.json`` next to the CSV."""

    command: str
    started: str
    machine: list[tuple[str, str]] = field(default_factory=list)
    wall_seconds: float = 0.0
    peak_rss_mb: float = 0.0
    ran: int = 0
    reused: int = 0
    filtered: int = 0  # configurations left out by --only
    over_budget: list[str] = field(default_factory=list)  # keys skipped: budget exhausted


def save_stats(path: Path, stats: RunStats) -> None:
    write_atomic(path, json.dumps(asdict(stats), indent=1) + "\n")


def load_stats(path: Path) -> RunStats | None:
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    data["machine"] = [tuple(kv) for kv in data.get("machine", [])]
    return RunStats(**data)


def peak_rss_mb() -> float:
    """Peak resident memory of this process and its waited-for children (MiB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024.0  # Linux reports KiB


def render_report(
    profile: Profile, results: dict[str, Result], stats: RunStats, regenerated_by: str | None = None
) -> str:
    index = Index(results.values())
    own = [results[c.key] for c in profile.configs() if c.key in results]
    counts: dict[str, int] = {}
    for r in own:
        counts[r.status] = counts.get(r.status, 0) + 1
    out = [
        f"# pace-cert benchmarks — profile `{profile.name}`",
        "",
        f"- command: `{stats.command}`",
        f"- date (UTC): started {stats.started}, written {now()}"
        + (f" (tables regenerated from the CSV by `{regenerated_by}`)" if regenerated_by else ""),
        f"- profile: {profile.description}",
        f"- this invocation: {stats.ran} configurations run, {stats.reused} reused from the "
        f"CSV, {stats.filtered} left out by --only, {len(stats.over_budget)} skipped for lack "
        f"of budget; wall time {stats.wall_seconds:.0f} s, "
        f"peak RSS {stats.peak_rss_mb:.0f} MiB",
        f"- rows by status: {', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}",
        "",
        "Machine: " + "; ".join(f"{k} {v}" for k, v in stats.machine or machine_info()),
        "",
        "Legend: S = trees in the returned ensemble (mean over certified seeds), P = % of "
        "them newly generated, T = wall seconds of `compress` (mean over runs that ran), "
        "fid./acc. = agreement with the original / accuracy of the compressed IR on the "
        "held-out 20% (mean over certified seeds), orig. = original's accuracy. `paper` "
        "columns are the PACE paper's (its own hardware, 20 h limit); `FIPE here` is "
        "FIPE (L0) run with this preprocessing at seed 0 (shared/paper/REPRODUCTION.md). "
        "`not-implemented`: this pace_cert build lacks the mode (no pace_cert.learners.pricing, or "
        'NotImplementedError). "(time limit)": the run stopped at its time limit, so S is '
        "the best fully certified ensemble found by then, not a converged result. "
        "`min. here` = the certificate's size_lower_bound (in table (a) the larger of the "
        "prune and PACE rows'): no faithful model of fewer trees of the original's depth "
        "exists in our region (boundary witnesses, any mode, re-checked by verify; for "
        "depth <= 2, pace's synthesis phase, a CP-SAT proof; -- when neither gave a "
        "bound); S equal to it is minimal. In table (b): `pruning bound` = the "
        "certificate's checkable pruning bound (no subset of the original trees with any "
        "weights and fewer trees is faithful in our region; verify re-checks it); "
        "`target` (prune rows) = max(paper prune S, pruning bound + 1), a paper size below "
        "our bound being out of reach in our region; `T to S` = seconds into compress "
        "when the returned size was first certified.",
    ]
    for table in profile.tables:
        out += [
            "",
            f"## {table.title}",
            "",
            f"Seeds: {', '.join(map(str, table.seeds))}.",
            "",
            table.render(index),
        ]
    problems = [r for r in own if r.status == "error"]
    if problems:
        out += ["", "## Errors", ""] + [f"- `{r.key}`: {r.error}" for r in problems]
    if stats.over_budget:
        out += [
            "",
            "## Skipped for lack of budget",
            "",
            ", ".join(f"`{k}`" for k in stats.over_budget),
        ]
    return "\n".join(out) + "\n"


def with_oracle_section(report: str, out: Path) -> str:
    """Append ``oracle_compare_quick.md`` as the last section; its last line, and so the
    report's, reads ``speedup: N.Nx`` (median T(MILP) / T(constraint); ``>N.Nx (lower
    bound: ...)`` when MILP runs were cut by their time limit, or ``n/a``)."""
    path = out / "oracle_compare_quick.md"
    if not path.exists():
        return report + "\nspeedup: n/a (no oracle comparison in this directory)\n"
    body = path.read_text().strip().splitlines()
    body = ["## " + body[0].lstrip("# "), *body[1:]] if body else body
    return report.rstrip("\n") + "\n\n" + "\n".join(body) + "\n"
