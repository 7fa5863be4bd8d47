"""``pace-cert compress``: read a model and its data, compress, write the model and its
certificate, print the summary."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pace_cert.cli.common import (
    BackendOpt,
    DebugOpt,
    JsonOpt,
    RayAddressOpt,
    ThreadsOpt,
    domain_line,
    print_json,
    run_command,
)
from pace_cert.errors import InputError
from pace_cert.plumbing.progress import ProgressDisplay

if TYPE_CHECKING:
    from pace_cert.app import CompressOutcome

#: the process ends at the latest this factor times --time-limit (+ 2 s) after it started
HARD_LIMIT_FACTOR = 1.04


def compress(
    model: Annotated[Path, typer.Argument(help="Tree-ensemble classifier exported to ONNX.")],
    data: Annotated[
        Path,
        typer.Option(
            "--data",
            help="Training CSV: header row, features (by name when the model records "
            "names, else in model order), target column.",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="Output directory (created if missing).")],
    target: Annotated[str, typer.Option(help="Name of the label column.")] = "target",
    eta: Annotated[
        float,
        typer.Option(
            help="Confidence region: the original's margin must exceed eta "
            "(vote share for forests/AdaBoost, raw score for boosting)."
        ),
    ] = 0.0,
    coverage: Annotated[
        float | None,
        typer.Option(
            help="Instead of --eta: the percentage of the training rows the confidence "
            "region must hold (99 for 99 %); eta is derived from the rows (the largest, "
            "two significant digits, that holds them) and recorded with it."
        ),
    ] = None,
    delta: Annotated[
        float,
        typer.Option(help="Plausibility region: share of training rows treated as outliers."),
    ] = 0.0,
    mode: Annotated[
        str,
        typer.Option(
            help="pace (generate learners, then prune), prune (prune only), "
            "generate (generation only), tree (one decision tree, certified in the region)."
        ),
    ] = "pace",
    objective: Annotated[
        str,
        typer.Option(
            help="What the search minimises first: trees (then leaves) or leaves (then trees)."
        ),
    ] = "trees",
    learner_depth: Annotated[
        int | None,
        typer.Option(
            help="Depth of the learners pace and generate create (default: the original's)."
        ),
    ] = None,
    max_depth: Annotated[
        int | None,
        typer.Option(help="Mode tree: the tree's depth at most this (default: any)."),
    ] = None,
    max_leaves: Annotated[
        int | None,
        typer.Option(help="Mode tree: the tree's leaves at most this (default: any)."),
    ] = None,
    time_limit: Annotated[
        float | None,
        typer.Option(help="Seconds; the best fully certified model found so far is returned."),
    ] = None,
    threads: ThreadsOpt = 2,
    seed: Annotated[int, typer.Option(help="Seed for every solver and learner.")] = 0,
    bounds: Annotated[
        str, typer.Option(help="none: whole float32 line; data: training min/max box.")
    ] = "none",
    binary: Annotated[
        str, typer.Option(help="infer: 0/1-valued training columns stay in {0,1}; none: off.")
    ] = "infer",
    integer: Annotated[
        str,
        typer.Option(
            help="infer: integer-valued training columns (bin indices, counts) are certified "
            "over the integers only; none: over every float32."
        ),
    ] = "infer",
    iforest_trees: Annotated[
        int, typer.Option(help="Isolation-forest trees for the plausibility region (--delta).")
    ] = 100,
    iforest_samples: Annotated[
        int, typer.Option(help="Rows per isolation tree (0: scikit-learn's auto = min(256, n)).")
    ] = 0,
    milp: Annotated[
        str,
        typer.Option(
            help="L0 solver: auto (gurobipy's big-M MILP when installed and within its "
            "size-limited licence, else cover), cover (hitting set over learners on CP-SAT "
            "with LP cuts on HiGHS; no big-M), highs or gurobi (the big-M MILP)."
        ),
    ] = "auto",
    backend: BackendOpt = "local",
    ray_address: RayAddressOpt = None,
    as_json: JsonOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress lines.")] = False,
    debug: DebugOpt = False,
    test_hang_step: Annotated[
        str | None,
        typer.Option(
            "--test-hang-step",
            hidden=True,
            help="Test hook: this plan step (or pruning-bound) sleeps instead of running, "
            "so the process guard's deadline falls in it.",
        ),
    ] = None,
) -> None:
    """Compress MODEL and write OUT/compressed.onnx + OUT/certificate.json."""

    def body() -> int:
        from pace_cert.plumbing.guard import block_signals

        old_mask = block_signals()  # before the imports that start threads (see guard.py)
        try:
            return _compress()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)

    def _compress() -> int:
        from pace_cert.app import guard_outcome, run_compress
        from pace_cert.driver.result import StopReason
        from pace_cert.plumbing.budget import Budget, process_start
        from pace_cert.plumbing.guard import GuardStop, ProcessGuard
        from pace_cert.plumbing.outputs import OutputDir
        from pace_cert.settings import CompressConfig, SettingError

        try:  # every flag checked against the settings table (pace_cert/settings.py)
            cfg = CompressConfig.of(
                mode=mode,
                objective=objective,
                learner_depth=learner_depth,
                max_depth=max_depth,
                max_leaves=max_leaves,
                eta=eta,
                coverage=coverage,
                delta=delta,
                time_limit=time_limit,
                threads=threads,
                seed=seed,
                bounds=bounds,
                binary=binary,
                integer=integer,
                milp=milp,
                iforest_estimators=iforest_trees,
                iforest_max_samples=iforest_samples or "auto",
                backend=backend,
                ray_address=ray_address,
                **({} if test_hang_step is None else {"hang_step": test_hang_step}),
            )
        except SettingError as e:
            raise InputError(None, str(e)) from None
        start = process_start()
        budget = Budget.seconds(time_limit, start=start)  # counted from process start
        hard = None if time_limit is None else start + HARD_LIMIT_FACTOR * time_limit + 2.0
        output = OutputDir(out)
        progress = ProgressDisplay(quiet, start, budget)
        running: list[str | None] = [None]  # the plan step running now

        def last_words(stop: GuardStop) -> int:
            """The guard ends the run: the result as a normal end prints it, from the
            last committed set, whose certificate now records the stop."""
            progress.close()
            why = StopReason.guard(running[0], stop.signal, time_limit)
            res = guard_outcome(output, why)
            seconds = stop.at - start
            if res is None:
                code = stop.signal_exit_code or 2
                _say_nothing_written(why, code, out, seconds, as_json)
                return code
            code = stop.signal_exit_code or res.exit_code
            _say_result(res, cfg, model, as_json, code)
            last = output.committed
            typer.echo(
                f"{stop.cause} ended the run in step {why.step} ({seconds:.0f} s); "
                f"{out} holds {last.summary if last else 'nothing'}",
                err=True,
            )
            return code

        try:
            with ProcessGuard(output, hard, last_words):
                progress.begin()
                res = run_compress(
                    model,
                    data,
                    out,
                    cfg,
                    target,
                    progress,
                    budget,
                    output=output,
                    on_commit=progress.committed,
                    on_bound=progress.bound_raised,
                    on_step=lambda name: running.__setitem__(0, name),
                )
        finally:
            progress.close()
        _say_result(res, cfg, model, as_json, res.exit_code)
        return res.exit_code

    run_command(body, debug)


def _say_result(res: CompressOutcome, cfg: Any, model: Path, as_json: bool, code: int) -> None:
    """The result on stdout, at a normal end and in the process guard's last words
    alike: the summary block, or with ``--json`` one object (``exit_code``: the
    process's, 143 / 130 when a signal ended the run)."""
    if not as_json:
        typer.echo(compress_summary(res, cfg, model))
        return
    from pace_cert.estimate import recorded_room_line

    cert = res.certificate
    print_json(
        {
            "status": res.status,
            "exit_code": code,
            "out_dir": str(res.out_dir),
            "compressed_model": str(res.out_dir / "compressed.onnx"),
            "certificate": str(res.out_dir / "certificate.json"),
            "original_unchanged": res.exit_code == 2,
            "stop": _stop_json(res.stop),
            "time_limit_reached": res.timed_out,
            "summary": cert.summary.model_dump(),
            "coverage": None if cert.region.coverage is None else cert.region.coverage.model_dump(),
            "coverage_asked": cert.region.coverage_asked,
            "eta": cert.region.eta,
            "room": recorded_room_line(cert),  # the floor table's warning (summary.floor)
        }
    )


def _stop_json(stop: Any) -> dict | None:
    if stop is None:
        return None
    return {"step": stop.step, "reason": stop.reason, "signal": stop.signal}


def _say_nothing_written(stop: Any, code: int, out: Path, seconds: float, as_json: bool) -> None:
    """The guard ended the run before its first commit (the model and data were still
    being read, or the region built): nothing is in ``out``."""
    if as_json:
        print_json(
            {
                "status": "stopped",
                "exit_code": code,
                "out_dir": str(out),
                "compressed_model": None,
                "certificate": None,
                "original_unchanged": None,
                "stop": _stop_json(stop),
                "time_limit_reached": stop.time_limit,
                "summary": None,
                "coverage": None,
                "coverage_asked": None,
                "eta": None,
            }
        )
    else:
        typer.echo(f"stopped: {stop.step}: {stop.reason} ({seconds:.0f} s); nothing was written")


def compress_summary(res: CompressOutcome, cfg: Any, model: Path) -> str:
    """What compress prints on stdout: the result, the region's coverage of the data,
    and for an unchanged original (exit 2) what that means and what to try."""
    from pace_cert.cert.coverage import coverage_line, missing_lines, tie_band_line
    from pace_cert.cert.words import (
        bound_lines,
        deployment_lines,
        narrowing_lines,
        pruning_bound_lines,
        tree_lines,
    )
    from pace_cert.estimate import placement
    from pace_cert.outcome_words import asked_coverage_lines, stop_lines, unchanged_lines

    cert = res.certificate
    s, reg = cert.summary, cert.region
    comp, cert_path = res.out_dir / "compressed.onnx", res.out_dir / "certificate.json"
    if res.exit_code == 0:
        lines = [
            f"certified: {s.trees_before} -> {s.trees_after} trees "
            f"({s.leaves_before} -> {s.leaves_after} leaves, {s.new_learner_share:.0%} new), "
            f"fidelity {s.fidelity:.4f} on the data, {s.seconds:.1f}s"
        ]
    else:
        lines = [
            f"inconclusive: nothing smaller than the original's {s.trees_before} trees was "
            f"certified ({s.seconds:.1f}s)",
            f"the original was written unchanged: {comp} is {model}, byte for byte, with an "
            "inconclusive certificate",
        ]
    lines += asked_coverage_lines(cert)  # the eta --coverage came to, before the why
    if res.exit_code != 0:
        lines += unchanged_lines(res, cfg)
    lines += tree_lines(cert)
    lines += deployment_lines(s.deployment)
    if s.single_tree is None:  # the bounds below are about ensembles of the original's depth
        lines += bound_lines(s, cert.original.max_depth, cert.compressed.max_depth)
    lines += pruning_bound_lines(cert)
    if res.estimate is not None and s.single_tree is None:
        pb = s.pruning_bound.value if s.pruning_bound is not None else None
        lines.append(placement(s.trees_after if res.exit_code == 0 else None, pb, res.estimate))
    if reg.coverage is not None:
        lines.append("region: " + coverage_line(reg.coverage, reg.eta, reg.delta))
        if tie := tie_band_line(reg.coverage, reg.runtime_guard):
            lines.append(tie)
    lines += missing_lines(cert)
    names = cert.data.feature_names if cert.data is not None else None
    lines.append(f"domain: {domain_line(reg.domain, 'the training min/max', names)}")
    lines += narrowing_lines(reg.domain, names)
    lines += stop_lines(res)
    written = [comp, cert_path]
    if reg.plausibility is not None:
        written.append(res.out_dir / reg.plausibility.path)
    lines.append(f"wrote {', '.join(map(str, written[:-1]))} and {written[-1]}")
    return "\n".join(lines)
