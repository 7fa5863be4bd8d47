"""The ``pace-cert`` command line: a thin shell over :mod:`pace_cert`.

Commands parse arguments, call one library function, format its result and map the
exception family to exit codes: 0 certified/verified, 1 refuted, 2 inconclusive,
3 bad input.
"""

from __future__ import annotations

import json
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from pace_cert.errors import InputError, PaceError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Certified pruning and compression of tree ensembles (PACE). "
    "Exit codes: 0 certified/verified, 1 refuted, 2 inconclusive, 3 bad input.",
)

DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON object.")]
#: the process ends at the latest this factor times --time-limit (+ 2 s) after it started
HARD_LIMIT_FACTOR = 1.04
ThreadsOpt = Annotated[
    int,
    typer.Option(
        help="Threads for the separation oracle: one single-worker CP-SAT search per "
        "label pair at a time; idle threads race other seeds on undecided pairs."
    ),
]


def _run(fn: Callable[[], int], debug: bool) -> None:
    """Run a command body; map exceptions to exit codes with one-line messages."""
    try:
        code = fn()
    except PaceError as e:
        if debug:
            traceback.print_exc()
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(e.exit_code) from None
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(130) from None
    except Exception as e:  # an internal error, not the user's input
        if debug:
            traceback.print_exc()
        typer.echo(f"internal error: {type(e).__name__}: {e} (rerun with --debug)", err=True)
        raise typer.Exit(4) from None
    raise typer.Exit(code)


def _progress(quiet: bool) -> Callable[[str], None]:
    start = time.perf_counter()

    def say(msg: str) -> None:
        if not quiet:
            typer.echo(f"[{time.perf_counter() - start:7.1f}s] {msg}", err=True)

    return say


@app.command()
def compress(
    model: Annotated[Path, typer.Argument(help="Tree-ensemble classifier exported to ONNX.")],
    data: Annotated[
        Path,
        typer.Option(
            "--data", help="Training CSV: header row, features in model order, target column."
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
    delta: Annotated[
        float,
        typer.Option(help="Plausibility region: share of training rows treated as outliers."),
    ] = 0.0,
    mode: Annotated[
        str,
        typer.Option(
            help="pace (generate learners, then prune), prune (prune only), "
            "generate (generation only)."
        ),
    ] = "pace",
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
    as_json: JsonOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress lines.")] = False,
    debug: DebugOpt = False,
) -> None:
    """Compress MODEL and write OUT/compressed.onnx + OUT/certificate.json."""

    def body() -> int:
        from pace_cert.guard import block_signals

        old_mask = block_signals()  # before the imports that start threads (see guard.py)
        try:
            return _compress()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)

    def _compress() -> int:
        from pace_cert.app import run_compress
        from pace_cert.budget import Budget, process_start
        from pace_cert.cert.certificate import bound_line
        from pace_cert.guard import ProcessGuard
        from pace_cert.outputs import Committed, OutputDir
        from pace_cert.settings import CompressConfig, SettingError

        try:  # every flag checked against the settings table (pace_cert/settings.py)
            cfg = CompressConfig(
                mode=mode,
                eta=eta,
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
            )
        except SettingError as e:
            raise InputError(None, str(e)) from None
        start = process_start()
        budget = Budget.seconds(time_limit, start=start)  # counted from process start
        hard = None if time_limit is None else start + HARD_LIMIT_FACTOR * time_limit + 2.0
        output = OutputDir(out)

        def last_words(committed: Committed | None, reason: str) -> None:
            wrote = (
                f"{out} holds {committed.summary}" if committed is not None else "nothing written"
            )
            typer.echo(f"{reason} ({time.perf_counter() - start:.0f} s); {wrote}", err=True)

        with ProcessGuard(output, hard, last_words):
            res = run_compress(
                model, data, out, cfg, target, _progress(quiet), budget, output=output
            )
        s = res.certificate.summary
        if as_json:
            _print_json(
                {
                    "status": res.status,
                    "exit_code": res.exit_code,
                    "out_dir": str(res.out_dir),
                    "compressed_model": str(res.out_dir / "compressed.onnx"),
                    "certificate": str(res.out_dir / "certificate.json"),
                    "summary": s.model_dump(),
                }
            )
        else:
            typer.echo(
                f"{res.status}: {s.trees_before} -> {s.trees_after} trees "
                f"({s.leaves_before} -> {s.leaves_after} leaves, {s.new_learner_share:.0%} new), "
                f"fidelity {s.fidelity:.4f} on the data, {s.seconds:.1f}s\n"
                + bound_line(s, res.certificate.original.max_depth)
                + f"domain: {_domain_line(res.certificate.region.domain, 'the training min/max')}\n"
                f"wrote {res.out_dir / 'compressed.onnx'} and {res.out_dir / 'certificate.json'}"
            )
        return res.exit_code

    _run(body, debug)


def _domain_line(dom: dict, box: str) -> str:
    """One line saying which inputs the certificate covers (``box``: what the bounds
    are, when there are any)."""
    n = len(dom.get("cells_per_feature", []))
    nb, ni = len(dom.get("binary_features", [])), len(dom.get("integer_features", []))
    parts = [f"{nb} binary ({{0,1}})"] if nb else []
    parts += [f"{ni} integer-valued"] if ni else []
    parts += [f"{n - nb - ni} any float32"] if n - nb - ni else []
    within = f" within {box}" if dom.get("bounds") else ""
    return f"{n} features: " + ", ".join(parts) + within + " (NaN excluded)"


def _region_line(reg: dict) -> str:
    """One line stating the region the proof covers, as verify rebuilt it."""
    eta = f"eta {reg['eta']:g}, {reg['eta_units']}"
    conf = f"original's margin > {reg['margin_threshold']:.6g} ({eta})"
    if reg["delta_abs"] is None:
        return conf + "; no plausibility bound (delta 0)"
    return conf + f"; plausibility A(x) >= {reg['delta_abs']:.6g} (delta {reg['delta']:g})"


@app.command()
def verify(
    original: Annotated[Path, typer.Argument(help="The original ONNX model.")],
    compressed: Annotated[Path, typer.Argument(help="The compressed ONNX model.")],
    certificate: Annotated[Path, typer.Argument(help="certificate.json written by compress.")],
    data: Annotated[
        Path | None, typer.Option(help="Also replay these rows (CSV as for compress).")
    ] = None,
    exhaustive: Annotated[
        bool,
        typer.Option(help="Second backend: enumerate every cell (small models only)."),
    ] = False,
    probe: Annotated[
        int,
        typer.Option(
            help="With --data: also replay N random points near the data rows (a row with "
            "1-4 features taken from other rows) through onnxruntime; one inside the region "
            "where the models disagree refutes. A solver-free check, not a proof."
        ),
    ] = 0,
    threads: ThreadsOpt = 2,
    time_limit: Annotated[float | None, typer.Option(help="Seconds for the proof.")] = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Re-prove CERTIFICATE independently from the two ONNX files."""

    def body() -> int:
        from pace_cert.cert.verify import run_verify

        rep = run_verify(
            original,
            compressed,
            certificate,
            threads=threads,
            time_limit=time_limit,
            exhaustive=exhaustive,
            data_path=data,
            probe=probe,
        )
        if as_json:
            _print_json(rep.to_json())
        else:
            typer.echo(f"{rep.status}: {rep.message}")
            if rep.domain is not None:
                box = "the bounds the certificate states (--data counts rows outside them)"
                typer.echo(f"domain: {_domain_line(rep.domain, box)}")
            if rep.region is not None:
                typer.echo(f"region: {_region_line(rep.region)}")
            if rep.data_rows is not None:
                typer.echo(
                    f"data: {rep.data_rows} rows replayed, {rep.data_inside} inside the region"
                    + (
                        f"; {rep.data_outside_domain} outside the certified domain, not covered"
                        if rep.data_outside_domain
                        else ""
                    )
                )
            if rep.probe_points is not None:
                typer.echo(
                    f"probe: {rep.probe_points} random points near the data replayed, "
                    f"{rep.probe_inside} inside the region"
                )
            if rep.witnesses_checked:
                typer.echo(
                    f"size lower bound: {rep.witnesses_checked} boundary witnesses re-checked "
                    f"with onnxruntime; no faithful model of fewer than {rep.witness_bound} "
                    "trees of the original's depth"
                )
            sb = rep.size_lower_bound
            if rep.exit_code == 0 and sb is not None and sb > (rep.witness_bound or 0):
                typer.echo(
                    f"size lower bound: the certificate states {sb} trees from compress's CP-SAT "
                    "synthesis proofs, which verify does not re-check"
                )
            if rep.merged_trees_checked:
                typer.echo(
                    f"learners: the {rep.merged_trees_checked} original trees the certificate "
                    "names share every split of the compressed tree naming them"
                )
            if rep.counterexample:
                ce = rep.counterexample
                typer.echo(
                    f"counterexample: x = {ce['point']}\n"
                    f"  original label {ce['original_label']!r}, "
                    f"compressed label {ce['compressed_label']!r}"
                )
        return rep.exit_code

    _run(body, debug)


@app.command()
def inspect(
    model: Annotated[Path, typer.Argument(help="An ONNX tree-ensemble classifier.")],
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Trees, depth, leaves, classes, features and the detected exporter pattern."""

    def body() -> int:
        from pace_cert.model.onnx_reader import read_ensemble

        ens, info = read_ensemble(model)
        d: dict[str, Any] = {
            "model": str(model),
            "pattern": ens.pattern,
            "trees": ens.n_trees,
            "max_depth": ens.max_depth,
            "leaves": ens.n_leaves,
            "classes": [c.item() if hasattr(c, "item") else c for c in ens.classes],
            "features": ens.n_features,
            "kind": ens.kind,
            "input": info.input_name,
            "label_output": info.label_name,
        }
        if as_json:
            _print_json(d)
        else:
            for k, v in d.items():
                typer.echo(f"{k:>13}: {v}")
        return 0

    _run(body, debug)


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="Where to write the demo files.")] = Path("demo-out"),
    dataset: Annotated[str, typer.Option(help="Bundled dataset.")] = "compas",
    trees: Annotated[int, typer.Option(help="Random-forest size.")] = 50,
    depth: Annotated[int, typer.Option(help="Tree depth.")] = 2,
    eta: Annotated[float, typer.Option(help="Confidence level.")] = 0.1,
    delta: Annotated[float, typer.Option(help="Plausibility level.")] = 0.1,
    mode: Annotated[str, typer.Option(help="pace, prune or generate.")] = "pace",
    debug: DebugOpt = False,
) -> None:
    """The whole job on a bundled dataset: train, export, compress, verify, summarise."""

    def body() -> int:
        from pace_cert.demo import run_demo

        return run_demo(out, dataset, trees, depth, eta, delta, mode, typer.echo)

    _run(body, debug)


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=1, default=str) + "\n")


if __name__ == "__main__":  # pragma: no cover
    app()
