"""The ``pace-cert`` command line: a thin shell over :mod:`pace_cert`.

Commands parse arguments, call one library function, format its result and map the
exception family to exit codes: 0 certified/verified, 1 refuted, 2 inconclusive,
3 bad input.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer

from pace_cert.errors import InputError, PaceError

if TYPE_CHECKING:
    from pace_cert.app import CompressOutcome
    from pace_cert.budget import Budget
    from pace_cert.cert.certificate import Certificate

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Certified pruning and compression of tree ensembles (PACE). "
    "Exit codes: 0 certified/verified/written, 1 refuted, 2 inconclusive, 3 bad input.",
)

DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON object.")]
#: the process ends at the latest this factor times --time-limit (+ 2 s) after it started
HARD_LIMIT_FACTOR = 1.04
ThreadsOpt = Annotated[
    int,
    typer.Option(
        help="Threads for the separation oracle: one single-worker CP-SAT search per "
        "label pair at a time; idle threads race other seeds on undecided pairs. With "
        "--backend ray: the pair solves in flight at once (set it to the cluster's CPUs)."
    ),
]
BackendOpt = Annotated[
    str,
    typer.Option(
        help="Where the label pairs' CP-SAT solves run: local (threads of this process) or "
        "ray (Ray tasks; pip install 'pace-cert[ray]'). The verdict does not depend on it."
    ),
]
RayAddressOpt = Annotated[
    str | None,
    typer.Option(
        help="With --backend ray: the cluster (host:port or ray://host:port); default the "
        "RAY_ADDRESS environment variable, else a local Ray instance with --threads + 1 CPUs."
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


class ProgressDisplay:
    """Progress of a compress run on ``stream`` (stderr).

    Every message is one line, prefixed by the seconds since ``start``. On a terminal a
    status line stays below them, redrawn in place every second: the best certified size
    so far, the proved lower bound and the time left. Elsewhere (a file, a pipe, CI)
    plain lines only, one more each time the best certified model changes. ``quiet``:
    nothing at all. Called with strings (the driver's progress callback); told of each
    commit by :meth:`committed` and of each proved bound by :meth:`bound_raised`."""

    def __init__(
        self,
        quiet: bool,
        start: float,
        budget: Budget | None = None,
        stream: IO[str] | None = None,
        tty: bool | None = None,
    ) -> None:
        self.quiet, self.start, self.budget = quiet, start, budget
        self.stream = sys.stderr if stream is None else stream
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)()) if tty is None else tty
        self.best: int | None = None  # trees of the best certified model so far
        self.original: int | None = None
        self.bound: int | None = None
        self._lock = threading.Lock()
        self._status_shown = False
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # ------------------------------------------------------------------ input
    def __call__(self, msg: str) -> None:
        self._line(msg)

    def bound_raised(self, k: int) -> None:
        """A higher size lower bound was proved."""
        self.bound = max(self.bound or 0, k)
        if self.tty:
            self._redraw()

    def committed(self, cert: Certificate) -> None:
        """A file set was written: its certificate (the best certified model so far,
        or the original unchanged)."""
        s = cert.summary
        self.original = s.trees_before
        if s.size_lower_bound is not None:
            self.bound = max(self.bound or 0, s.size_lower_bound)
        best = s.trees_after if s.certified else None
        if best is not None and best != self.best:
            self.best = best
            if not self.tty:
                self._line("best so far: " + self.status())
        if self.tty:
            self._redraw()

    def status(self) -> str:
        """best certified size, lower bound, time left."""
        if self.best is None:
            best = "nothing smaller certified yet"
        else:
            best = f"{self.best} trees certified"
        if self.original is not None:
            best += f" (original {self.original})"
        bound = "lower bound " + ("-" if self.bound is None else str(self.bound))
        left = None if self.budget is None else self.budget.left()
        when = "no time limit" if left is None else f"{max(left, 0.0):.0f} s left"
        return f"{best} | {bound} | {when}"

    # ---------------------------------------------------------------- output
    def begin(self) -> None:
        """Start redrawing the status line every second (terminals only)."""
        if self.quiet or not self.tty or self._ticker is not None:
            return
        self._ticker = threading.Thread(target=self._tick, name="pace-cert-progress", daemon=True)
        self._ticker.start()

    def close(self) -> None:
        """Stop the ticker and clear the status line (before the summary is printed)."""
        self._stop.set()
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join(timeout=2)
        with self._lock:
            self._clear()
            self._flush()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            self._redraw()

    def _line(self, msg: str) -> None:
        if self.quiet:
            return
        with self._lock:
            self._clear()
            self.stream.write(f"[{time.perf_counter() - self.start:7.1f}s] {msg}\n")
            if self.tty and not self._stop.is_set():
                self._draw()
            self._flush()

    def _redraw(self) -> None:
        if self.quiet or not self.tty or self._stop.is_set():
            return
        with self._lock:
            self._clear()
            self._draw()
            self._flush()

    def _draw(self) -> None:
        self.stream.write("  best: " + self.status())
        self._status_shown = True

    def _clear(self) -> None:
        if self._status_shown:
            self.stream.write("\r\x1b[K")
            self._status_shown = False

    def _flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # a closed stream: nothing to do
            self.stream.flush()


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
    backend: BackendOpt = "local",
    ray_address: RayAddressOpt = None,
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
        from pace_cert.guard import ProcessGuard
        from pace_cert.outputs import Committed, OutputDir
        from pace_cert.settings import CompressConfig, SettingError

        try:  # every flag checked against the settings table (pace_cert/settings.py)
            cfg = CompressConfig.of(
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
                backend=backend,
                ray_address=ray_address,
            )
        except SettingError as e:
            raise InputError(None, str(e)) from None
        start = process_start()
        budget = Budget.seconds(time_limit, start=start)  # counted from process start
        hard = None if time_limit is None else start + HARD_LIMIT_FACTOR * time_limit + 2.0
        output = OutputDir(out)
        progress = ProgressDisplay(quiet, start, budget)

        def last_words(committed: Committed | None, reason: str) -> None:
            progress.close()
            wrote = (
                f"{out} holds {committed.summary}" if committed is not None else "nothing written"
            )
            typer.echo(f"{reason} ({time.perf_counter() - start:.0f} s); {wrote}", err=True)

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
                )
        finally:
            progress.close()
        cert = res.certificate
        s = cert.summary
        if as_json:
            _print_json(
                {
                    "status": res.status,
                    "exit_code": res.exit_code,
                    "out_dir": str(res.out_dir),
                    "compressed_model": str(res.out_dir / "compressed.onnx"),
                    "certificate": str(res.out_dir / "certificate.json"),
                    "original_unchanged": res.exit_code == 2,
                    "summary": s.model_dump(),
                    "coverage": None
                    if cert.region.coverage is None
                    else cert.region.coverage.model_dump(),
                }
            )
        else:
            typer.echo(_compress_summary(res, cfg, model))
        return res.exit_code

    _run(body, debug)


def _compress_summary(res: CompressOutcome, cfg: Any, model: Path) -> str:
    """What compress prints on stdout: the result, the region's coverage of the data,
    and for an unchanged original (exit 2) what that means and what to try."""
    from pace_cert.cert.certificate import bound_line
    from pace_cert.cert.coverage import coverage_line, tie_band_line

    cert = res.certificate
    s, reg = cert.summary, cert.region
    comp, cert_path = res.out_dir / "compressed.onnx", res.out_dir / "certificate.json"
    if res.exit_code == 0:
        lines = [
            f"certified: {s.trees_before} -> {s.trees_after} trees "
            f"({s.leaves_before} -> {s.leaves_after} leaves, {s.new_learner_share:.0%} new), "
            f"fidelity {s.fidelity:.4f} on the data, {s.seconds:.1f}s"
        ]
        if line := bound_line(s, cert.original.max_depth).rstrip():
            lines.append(line)
    else:
        lines = [
            f"inconclusive: nothing smaller than the original's {s.trees_before} trees was "
            f"certified ({s.seconds:.1f}s)",
            f"the original was written unchanged: {comp} is {model}, byte for byte, with an "
            "inconclusive certificate",
            "why: " + _why_unchanged(res, cfg),
            "try: " + _what_to_try(res, cfg),
        ]
    if reg.coverage is not None:
        lines.append("region: " + coverage_line(reg.coverage, reg.eta, reg.delta))
        if tie := tie_band_line(reg.coverage, reg.runtime_guard):
            lines.append(tie)
    lines.append(f"domain: {_domain_line(reg.domain, 'the training min/max')}")
    lines.append(f"wrote {comp} and {cert_path}")
    return "\n".join(lines)


def _why_unchanged(res: CompressOutcome, cfg: Any) -> str:
    s = res.certificate.summary
    if s.size_lower_bound is not None and s.size_lower_bound >= s.trees_before:
        return (
            f"no faithful model of fewer than {s.size_lower_bound} trees exists in this "
            "region (proved): only a smaller region can give a smaller model"
        )
    if res.found is not None:
        return (
            f"the smallest model certified has {res.found} trees, not fewer than the "
            f"original's {s.trees_before}"
        )
    if res.timed_out:
        return (
            f"the time limit ({cfg.time_limit:g} s) ended the run before a smaller model "
            "was certified"
        )
    return "the run ended without certifying a smaller model in this region"


def _what_to_try(res: CompressOutcome, cfg: Any) -> str:
    """Concrete flags: a larger eta or delta (a smaller region), a longer limit."""
    s, reg = res.certificate.summary, res.certificate.region
    tips = []
    proved = s.size_lower_bound is not None and s.size_lower_bound >= s.trees_before
    if res.timed_out and not proved:
        tips.append(f"--time-limit {4 * cfg.time_limit:g} (a longer run)")
    units = "vote share" if reg.eta_units == "vote share" else "raw score"
    eta = 0.1 if cfg.eta == 0 else cfg.eta * 2
    if units == "vote share" and eta >= 1:
        eta = (1 + cfg.eta) / 2
    tips.append(
        f"--eta {eta:.3g} (certify only inputs where the original wins by a {units} margin "
        f"above {eta:.3g})"
    )
    if cfg.delta < 0.5:
        delta = 0.05 if cfg.delta == 0 else min(0.5, cfg.delta * 2)
        tips.append(f"--delta {delta:.3g} (leave out the {delta:.0%} least plausible inputs)")
    if cfg.mode == "generate":
        tips.append("--mode pace (prunes first; never larger than prune)")
    return "; ".join(tips)


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
    backend: BackendOpt = "local",
    ray_address: RayAddressOpt = None,
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
            backend=backend,
            ray_address=ray_address,
        )
        if as_json:
            _print_json(rep.to_json())
        else:
            typer.echo(_verify_text(rep))
        return rep.exit_code

    _run(body, debug)


#: how verify's text output names a claim (else its key, spelled out)
_TOPICS = {
    "size_lower_bound.witnesses": "size lower bound",
    "size_lower_bound.synthesis": "size lower bound",
    "history.points": "history",
    "history.completeness": "history",
    "history.compressed_labels": "history",
    "certificate": "certificate",
}


def _verify_text(rep: Any) -> str:
    """verify's report for people: the verdict, the certificate's own status, what was
    proved over, then every claim of the certificate, ``checked:`` or ``stated:``."""
    lines = [f"{rep.status}: {rep.message}"]
    if rep.certificate_status is not None:
        what = {
            "certified": "certified (it claims the compressed model is faithful in the region)",
            "inconclusive": "inconclusive (it claims no compression: compress certified "
            "nothing smaller and wrote the original unchanged)",
        }[rep.certificate_status]
        same = "; the two files are identical" if rep.identical else ""
        lines.append(f"certificate: {what}{same}")
    if rep.domain is not None:
        box = "the bounds the certificate states (--data counts rows outside them)"
        lines.append(f"domain: {_domain_line(rep.domain, box)}")
    if rep.region is not None:
        lines.append(f"region: {_region_line(rep.region)}")
    if rep.data_rows is not None:
        lines.append(
            f"data: {rep.data_rows} rows replayed, {rep.data_inside} inside the region"
            + (
                f"; {rep.data_outside_domain} outside the certified domain, not covered"
                if rep.data_outside_domain
                else ""
            )
            + (
                f"; onnxruntime labels of the two models agree on {rep.data_agreement:.2%}"
                if rep.data_agreement is not None
                else ""
            )
        )
    if rep.probe_points is not None:
        lines.append(
            f"probe: {rep.probe_points} random points near the data replayed, "
            f"{rep.probe_inside} inside the region"
        )
    for c in rep.claims:
        topic = _TOPICS.get(c["key"], c["key"].replace("_", " ").replace(".", " "))
        text = c["text"].removeprefix(f"{topic}: ")
        lines.append(f"{c['status']}: {topic}: {text}")
    if rep.counterexample:
        ce = rep.counterexample
        lines.append(
            f"counterexample: x = {ce['point']}\n"
            f"  original label {ce['original_label']!r}, "
            f"compressed label {ce['compressed_label']!r}"
        )
    return "\n".join(lines)


@app.command()
def report(
    certificate: Annotated[Path, typer.Argument(help="certificate.json written by compress.")],
    out: Annotated[
        Path, typer.Option("--out", help="The HTML file to write (one self-contained file).")
    ] = Path("report.html"),
    debug: DebugOpt = False,
) -> None:
    """Write a self-contained HTML report of CERTIFICATE for an auditor: models and
    hashes, region and coverage, sizes and bound, proofs, history, what verify checks."""

    def body() -> int:
        from pace_cert.report import write_report

        write_report(certificate, out)
        typer.echo(f"wrote {out}")
        return 0

    _run(body, debug)


@app.command()
def inspect(
    model: Annotated[Path, typer.Argument(help="An ONNX tree-ensemble classifier.")],
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Family, estimators and trees, depth, leaves, classes, features, the detected
    exporter pattern and any input transform folded into the splits."""

    def body() -> int:
        from pace_cert.model.ensemble import family_of
        from pace_cert.model.onnx_reader import read_ensemble

        ens, info = read_ensemble(model)
        fold = ens.input_folding
        d: dict[str, Any] = {
            "model": str(model),
            "family": family_of(ens),
            "pattern": ens.pattern,
            "estimators": ens.n_estimators,
            "trees": ens.n_trees,
            "max_depth": ens.max_depth,
            "leaves": ens.n_leaves,
            "classes": [c.item() if hasattr(c, "item") else c for c in ens.classes],
            "features": ens.n_features,
            "kind": ens.kind,
            "input": info.input_name,
            "label_output": info.label_name,
            "input_transform": None
            if fold is None
            else {"ops": list(fold.ops), "folded_thresholds": len(fold.splits)},
        }
        if as_json:
            _print_json(d)
            return 0
        for k, v in d.items():
            if k == "estimators" and ens.n_estimators != ens.n_trees:
                per = ens.n_trees // ens.n_estimators
                v = f"{v} (x {per} classes: one tree per class and round = {ens.n_trees} trees)"
            if k == "input_transform":
                if fold is None:
                    continue
                v = (
                    f"{' -> '.join(fold.ops)}, folded into {len(fold.splits)} split "
                    "thresholds: the trees read the raw input"
                )
            typer.echo(f"{k:>15}: {v}")
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
