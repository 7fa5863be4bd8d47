"""``pace-cert frontier``: certify a ladder of nested regions in one run, one rung
directory each, and print the frontier table."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Annotated

import typer

from pace_cert.cli.common import (
    DebugOpt,
    JsonOpt,
    RayAddressOpt,
    ThreadsOpt,
    print_json,
    run_command,
)
from pace_cert.cli.compress_cmd import HARD_LIMIT_FACTOR
from pace_cert.errors import InputError


def frontier(
    model: Annotated[Path, typer.Argument(help="Tree-ensemble classifier exported to ONNX.")],
    data: Annotated[
        Path,
        typer.Option(
            "--data",
            help="Training CSV: header row, features (by name when the model records "
            "names, else in model order), target column.",
        ),
    ],
    out: Annotated[
        Path,
        typer.Option("--out", help="Output directory: one sub-directory per rung + frontier.json."),
    ],
    test: Annotated[
        Path | None,
        typer.Option(
            "--test", help="Test CSV (same columns): its coverage and agreement per rung."
        ),
    ] = None,
    target: Annotated[str, typer.Option(help="Name of the label column.")] = "target",
    rows: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated shares of the --data rows (in %) the rungs' regions must "
            "hold, e.g. 100,95,80: each is translated for this model into the largest eta "
            "(rounded down to two significant digits) whose region holds that share. The "
            "default ladder: 100,99,95,90,80,70. Not with --eta/--delta."
        ),
    ] = None,
    eta: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated etas, e.g. 0,0.1,0.2 (vote share for forests/AdaBoost, raw "
            "score for boosting) instead of --rows. With --delta: every (eta, delta) pair "
            "is a rung, run from the largest region to the smallest."
        ),
    ] = None,
    delta: Annotated[
        str | None,
        typer.Option(help="Comma-separated deltas in [0, 1), e.g. 0,0.1 (see --eta)."),
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            help="pace (default: prune, then look for a smaller support mixing original and "
            "newly generated trees; never larger than prune), prune (L1 then L0 on the "
            "original trees) or tree (one decision tree per rung)."
        ),
    ] = "pace",
    time_limit: Annotated[
        float | None,
        typer.Option(
            help="Seconds for the whole frontier, counted from process start; each rung gets "
            "the time left divided by the rungs still to run and is stopped at its share "
            "(+3 %); time left at the end goes back to the rungs cut."
        ),
    ] = None,
    threads: ThreadsOpt = 2,
    seed: Annotated[int, typer.Option(help="Seed for every solver and learner.")] = 0,
    backend: Annotated[
        str,
        typer.Option(
            help="local: rungs one after another, each starting from the smallest model "
            "certified on a rung around it; ray: rungs as Ray tasks in parallel, each from "
            "the original (no model reuse between rungs)."
        ),
    ] = "local",
    ray_address: RayAddressOpt = None,
    refine: Annotated[
        bool,
        typer.Option(
            "--refine/--no-refine",
            help="Local backend: where the size falls by more than half between two "
            "neighbouring rungs, add rungs between them (at most 3) within the same time.",
        ),
    ] = True,
    as_json: JsonOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress lines.")] = False,
    debug: DebugOpt = False,
) -> None:
    """Certify MODEL on a ladder of nested regions: OUT/<rung>/ holds each rung's
    compressed.onnx + certificate.json (pace-cert verify checks each on its own);
    OUT/frontier.json and the table on stdout sum them up."""

    def body() -> int:
        from pace_cert.plumbing.guard import block_signals

        old_mask = block_signals()  # before the imports that start threads (see guard.py)
        try:
            return _frontier()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)

    def _frontier() -> int:
        from pace_cert.frontier.ladder import LadderError, ladder
        from pace_cert.frontier.run import run_frontier
        from pace_cert.frontier.state import FrontierState, last_words
        from pace_cert.frontier.table import render_text
        from pace_cert.plumbing.budget import Budget, process_start
        from pace_cert.plumbing.guard import GuardStop, ProcessGuard

        if mode not in ("pace", "prune", "tree"):
            raise InputError(None, f"--mode: expected pace, prune or tree, got {mode!r}")
        if backend not in ("local", "ray"):
            raise InputError(None, f"--backend: expected local or ray, got {backend!r}")
        try:
            rungs = ladder(eta, delta, rows)
        except LadderError as e:
            raise InputError(None, str(e)) from None
        start = process_start()
        budget = Budget.seconds(time_limit, start=start)
        hard = None if time_limit is None else start + HARD_LIMIT_FACTOR * time_limit + 2.0
        settings = {"mode": mode, "time_limit": time_limit, "threads": threads, "seed": seed}
        state = FrontierState()

        def say(msg: str) -> None:
            if not quiet:
                typer.echo(f"{time.perf_counter() - start:6.1f}s {msg}", err=True)

        def ended(stop: GuardStop) -> int:
            """The guard's last words: frontier.json with every rung and the table (or
            the --json record); the exit code is the signal's, else the last commit's."""
            committed = state.committed
            by = "at the time limit" if stop.time_limit else f"by {stop.signal}"
            reason = f"stopped {by} ({stop.at - start:.0f} s)"
            words = last_words(state, reason)
            if as_json and words.record is not None:
                print_json(words.record.model_dump())
            elif words.table:
                typer.echo(words.table)
            typer.echo(words.note, err=True)
            return stop.signal_exit_code or (committed.exit_code if committed is not None else 2)

        with ProcessGuard(state, hard, ended):  # type: ignore[arg-type]
            res = run_frontier(
                model,
                data,
                out,
                rungs,
                settings,
                test=test,
                target=target,
                budget=budget,
                backend=backend,
                ray_address=ray_address,
                progress=say,
                state=state,
                refine=refine,
            )
        if as_json:
            print_json(res.record.model_dump())
        else:
            typer.echo(render_text(res.record))
            typer.echo(f"wrote {res.path} and one directory per rung under {out}")
        return res.exit_code

    run_command(body, debug)
