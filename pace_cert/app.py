"""Use cases behind the CLI: compress (read → PACE → write model + certificate).

Inputs are validated before any long computation, and bad input (an empty region
included) writes nothing; from the first commit on, the output directory always holds a
complete set of files (:mod:`pace_cert.plumbing.outputs`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pace_cert.data import read_csv
from pace_cert.errors import EmptyRegion, InputError
from pace_cert.model.onnx_reader import load_onnx, read_ensemble
from pace_cert.model.onnx_writer import ensemble_to_onnx
from pace_cert.model.runtime import loadable_session
from pace_cert.plumbing.budget import Budget
from pace_cert.plumbing.outputs import Committed, OutputDir
from pace_cert.region.margins import region_margin
from pace_cert.region.masks import margin_mask
from pace_cert.settings import CompressConfig, SettingError, check_for_model

if TYPE_CHECKING:  # the solvers and pydantic load when the work starts, after the checks
    from pace_cert.cert.certificate import Certificate, Coverage, Deployment
    from pace_cert.deploy_size import Structure
    from pace_cert.driver.result import CompressResult, StartModel, StopReason
    from pace_cert.estimate import Estimate
    from pace_cert.model.ensemble import Ensemble
    from pace_cert.region.plausibility import PlausibilityForest

Progress = Callable[[str], None]


@dataclass(frozen=True)
class AsGiven:
    """How the certificate names the inputs and the compressed model (its ``path``
    fields, "as given") when they are not files the caller named: the library's
    in-memory models and data (:mod:`pace_cert.api`). None: the path itself."""

    model: str | None = None
    data: str | None = None
    compressed: str | None = None
    test: str | None = None  # a frontier's test rows


@dataclass(frozen=True)
class CompressOutcome:
    """What a compress run wrote. ``exit_code`` 0: a smaller certified model; 2: the
    original unchanged (``status`` "inconclusive"). ``found``: trees of the smallest
    model certified by the run even when it was not smaller than the original (None:
    none was certified); ``timed_out``: the time limit ended the run (it did not end
    by itself); ``stop``: the step that decided the end and its reason; ``compressed``:
    the smaller certified model written (None when the original was written)."""

    exit_code: int
    status: str
    out_dir: Path
    certificate: Certificate
    found: int | None = None
    timed_out: bool = False
    stop: StopReason | None = None
    estimate: Estimate | None = None  # the free-pattern floor, said before the work
    compressed: Ensemble | None = None  # the smaller certified model (None: unchanged)

    @property
    def certified(self) -> bool:
        return self.exit_code == 0


def prepare_out_dir(out: Path) -> None:
    """Create OUT_DIR if needed and check that it is writable (before any work)."""
    if out.exists() and not out.is_dir():
        raise InputError(out, "output path exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".pace-cert-probe-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise InputError(out, f"output directory is not writable ({e.strerror})") from None


def run_compress(
    model_path: Path,
    data_path: Path,
    out_dir: Path,
    cfg: CompressConfig,
    target: str = "target",
    progress: Progress | None = None,
    budget: Budget | None = None,
    output: OutputDir | None = None,
    on_commit: Callable[[Certificate], None] | None = None,
    on_bound: Callable[[int], None] | None = None,
    plausibility: PlausibilityForest | None = None,
    start: StartModel | None = None,
    on_step: Callable[[str], None] | None = None,
    as_given: AsGiven | None = None,
    say_floor: bool = True,
) -> CompressOutcome:
    """Read the model and the training CSV, compress, write the compressed model and
    the certificate (and the plausibility artifact) to ``out_dir``.

    ``progress``: called with one-line messages; ``budget``: the run's time (default
    ``cfg.time_limit`` from now; the CLI counts it from process start); ``on_commit``:
    called with the certificate of each file set written (the original unchanged first,
    then each smaller certified model, then the final result); ``on_bound``: called with
    each higher proved size lower bound; ``plausibility``: a forest fitted on these
    rows already, its threshold set for ``cfg.delta`` (a frontier's one forest; None:
    fitted here); ``start``: a model certified on a region around this one, certified
    again here as the first candidate (a frontier's outer rung); ``on_step``: called with
    each plan step's name as it starts (what :func:`guard_outcome` names); ``as_given``:
    how the certificate names the model, the data and the compressed model (default:
    their paths); ``say_floor``: say the floor table before the work (a frontier says it
    once, not per rung). Inputs are checked before anything is written
    (:class:`~pace_cert.errors.InputError`, an empty region included); from then on
    ``out_dir`` always holds a complete set. Exit code 0 when the result is smaller
    than the original, else 2 (the original's bytes are written)."""
    model_path, data_path, out_dir = Path(model_path), Path(data_path), Path(out_dir)
    original_bytes = _read_bytes(model_path)
    ensemble, info = read_ensemble(model_path)
    loadable_session(original_bytes, model_path)  # the certificate is about its labels
    try:
        check_for_model(cfg, ensemble.kind)
    except SettingError as e:
        raise InputError(None, str(e)) from None
    data = read_csv(data_path, ensemble.classes, ensemble.n_features, target, info.feature_names)
    X_fit = data.X[data.complete]  # the region is built from the rows without NaN only
    if len(X_fit) < 2:
        raise InputError(data_path, _too_few_rows(len(data.X), len(X_fit)))
    cfg = with_coverage_eta(cfg, ensemble, X_fit)
    if cfg.coverage is not None and progress is not None:  # the eta, before any work
        progress(coverage_said(cfg, ensemble, X_fit))
    _check_region_not_empty(ensemble, X_fit, data_path, cfg)
    from pace_cert.estimate import floor_lines, floor_table, free_pattern_estimate

    estimate = free_pattern_estimate(ensemble, cfg.eta)  # milliseconds
    # what each coverage rung can buy at best: about prunings, nothing mode tree seeks
    floor = floor_table(ensemble, X_fit, cfg.eta) if cfg.mode != "tree" else None
    created = not out_dir.exists()
    prepare_out_dir(out_dir)
    from pace_cert.cert.coverage import coverage, coverage_line
    from pace_cert.driver.runner import compress

    if budget is None:
        budget = Budget.seconds(cfg.time_limit)
    search_budget = budget.less(latency_reserve(budget))

    output = OutputDir(out_dir) if output is None else output
    given = AsGiven() if as_given is None else as_given
    names = AsGiven(
        model=given.model or str(model_path),
        data=given.data or str(data_path),
        compressed=given.compressed or str(out_dir / "compressed.onnx"),
    )
    render = _Renderer(cfg, original_bytes, info, data, data_path, target, ensemble.classes, names)
    render.floor = floor

    said = []

    def commit(res: CompressResult) -> Certificate:
        if not said and progress is not None:  # the inputs are good: before any solving
            # the free-pattern floor is about prunings: nothing mode tree looks for
            said.append(progress(estimate.line()) if cfg.mode != "tree" else None)
            shown = floor is not None and say_floor  # a frontier says it once, not per rung
            for line in floor_lines(floor, estimate.units) if shown else []:
                progress(line)
        taken = time.perf_counter()
        final = res.stop is not None  # the run's end: its certificate says how it ended
        files, committed, cert = render.files(res, final_latency(budget) if final else None)
        committed = dataclasses.replace(
            committed, certificate=cert, estimate=estimate, final=final, at=taken
        )
        output.commit(files, committed)
        if on_commit is not None:
            on_commit(cert)
        return cert

    try:
        result = compress(
            ensemble,
            X_fit,
            cfg,
            progress,
            search_budget,
            on_improve=commit,
            on_bound=on_bound,
            plausibility=plausibility,
            start=start,
            on_step=on_step,
        )
    except EmptyRegion as e:  # the plausibility bound removed the last rows
        if created and output.committed is None:
            _remove_empty_dir(out_dir)
        r = e.region
        cov = coverage(ensemble, data.X, r["margin"], r["plausibility"], r["domain"])
        raise EmptyRegion(
            f"no training row lies in the region ({coverage_line(cov, cfg.eta, cfg.delta)})"
            "; lower --eta or --delta",
            path=data_path,
        ) from None
    except BaseException:
        if created and output.committed is None:  # nothing written: leave nothing behind
            _remove_empty_dir(out_dir)
        raise
    cert = commit(result)
    found = result.compressed.n_trees if result.certified else None
    return CompressOutcome(
        0 if result.smaller else 2,
        cert.summary.status,
        out_dir,
        cert,
        found=found,
        timed_out=result.stop is not None and result.stop.time_limit,
        stop=result.stop,
        estimate=estimate,
        compressed=result.compressed if result.smaller else None,
    )


def with_coverage_eta(cfg: CompressConfig, ensemble, X: np.ndarray) -> CompressConfig:
    """``cfg`` with eta derived from ``--coverage`` on the rows ``X`` (the complete
    training rows the region is built from): the largest eta, rounded down to two
    significant digits, whose region holds at least that share of them by margin
    (:func:`pace_cert.frontier.ladder.eta_for_share`; 0 for 100 %). The config keeps
    its coverage (the certificate records it) and is checked by the settings table
    again, and for this model. ``cfg`` itself without ``--coverage``; InputError when
    it comes with a nonzero eta."""
    from pace_cert.frontier.ladder import eta_for_share
    from pace_cert.settings import check_asked

    if cfg.coverage is None:
        return cfg
    try:
        check_asked(cfg)
        derived = dataclasses.replace(cfg, eta=eta_for_share(ensemble, X, cfg.coverage / 100))
        check_for_model(derived, ensemble.kind)
    except SettingError as e:
        raise InputError(None, str(e)) from None
    return derived


def rows_held(ensemble, X: np.ndarray, eta: float) -> int:
    """Rows of ``X`` whose original margin is above the region's threshold for ``eta``
    (c_o, :func:`pace_cert.region.masks.margin_mask`): the rows the confidence region
    holds before the plausibility bound."""
    return int(margin_mask(ensemble, X, region_margin(ensemble, eta)).sum())


def coverage_said(cfg: CompressConfig, ensemble, X: np.ndarray) -> str:
    """The line that tells what ``--coverage`` came to (``cfg``: its eta derived)."""
    from pace_cert.cert.words import asked_coverage_line
    from pace_cert.region.margins import eta_units

    held = rows_held(ensemble, X, cfg.eta)
    return asked_coverage_line(cfg.coverage, cfg.eta, eta_units(ensemble), held, len(X))


def guard_outcome(output: OutputDir, stop: StopReason) -> CompressOutcome | None:
    """The outcome of a run the process guard ends (``stop``: :meth:`StopReason.guard`),
    from the last set committed to ``output``, with no solver and no model read: its
    certificate, with ``summary.stop_reason`` and ``time_limit_reached`` saying how the
    run ended, is committed once more (certificate.json alone, atomically; the
    compressed model it names is unchanged), under ``output.lock`` (re-entrant: the
    guard holds it already, so no other commit comes between). A final commit (the run
    had ended by itself) is returned as it is; None when nothing was committed. For a
    frontier, call it on the running rung's output directory."""
    with output.lock:
        last = output.committed
        if last is None or last.certificate is None:
            return None
        cert = last.certificate
        if not last.final:
            seconds = cert.summary.seconds
            if last.at is not None:  # the run went on after that set was taken
                seconds += max(0.0, time.perf_counter() - last.at)
            summary = cert.summary.model_copy(
                update={
                    "stop_reason": str(stop),
                    "time_limit_reached": stop.time_limit,
                    "seconds": seconds,
                }
            )
            cert = cert.model_copy(update={"summary": summary})
            blob = (cert.model_dump_json(indent=1) + "\n").encode()
            output.commit(
                {"certificate.json": blob},
                dataclasses.replace(last, certificate=cert, final=True),
            )
        else:
            stop = _stop_of(cert) or stop
    s = cert.summary
    return CompressOutcome(
        last.exit_code,
        s.status,
        output.path,
        cert,
        found=s.trees_after if s.certified else None,
        timed_out=bool(s.time_limit_reached),
        stop=stop,
        estimate=last.estimate,
    )


def _stop_of(cert: Certificate) -> StopReason | None:
    """The stop a final certificate states (``step: reason``)."""
    from pace_cert.driver.result import StopReason

    said = cert.summary.stop_reason
    if not said:
        return None
    step, _, reason = said.partition(": ")
    return StopReason(step, reason, time_limit=bool(cert.summary.time_limit_reached))


#: seconds at most that the search leaves of the run's time for the latency measurement
LATENCY_RESERVE_CAP = 1.0
#: the share of the run's time it leaves at most
LATENCY_RESERVE_SHARE = 0.02


def latency_reserve(budget: Budget) -> float:
    """Seconds of ``budget`` the search leaves for measuring the latency at the end:
    :data:`LATENCY_RESERVE_SHARE` of the time left now, at most
    :data:`LATENCY_RESERVE_CAP` (0 for an unlimited budget)."""
    left = budget.left()
    if left is None:
        return 0.0
    return min(LATENCY_RESERVE_CAP, LATENCY_RESERVE_SHARE * max(left, 0.0))


def final_latency(budget: Budget) -> float:
    """Seconds the final commit may spend measuring the latency: at most
    :data:`pace_cert.deploy_size.LATENCY_SECONDS`, never more than the run has left."""
    from pace_cert.deploy_size import LATENCY_SECONDS

    left = budget.left()
    return LATENCY_SECONDS if left is None else max(0.0, min(LATENCY_SECONDS, left))


def _too_few_rows(n: int, complete: int) -> str:
    why = (
        "(the feature domain and the plausibility region are inferred from the training "
        "rows without missing values)"
    )
    if n == complete:
        return f"has {n} data row; compress needs at least 2 {why}"
    return (
        f"has {complete} data row{'s' if complete != 1 else ''} without missing values "
        f"(of {n}); compress needs at least 2 {why}"
    )


def _check_region_not_empty(ensemble, X: np.ndarray, data_path: Path, cfg: CompressConfig) -> None:
    """Bad input when no training row (``X``: those without missing values) has an
    original margin above the region's c_o (the plausibility bound can only remove more
    rows; the driver's first commit is checked for that). The training rows always lie
    in the domain inferred from them."""
    c_o = region_margin(ensemble, cfg.eta)
    if margin_mask(ensemble, X, c_o).any():
        return
    n = len(X)
    if not margin_mask(ensemble, X, ensemble.runtime_guard).any():
        why = (
            f"on all {n} rows the original's margin is within its float32 noise floor "
            f"({ensemble.runtime_guard:.3g}: the tie band), which no region covers"
        )
    else:
        why = (
            f"on all {n} rows the original's margin is at most eta {cfg.eta:g} "
            f"({c_o:.3g} in score units); lower --eta or --delta"
        )
    raise EmptyRegion(f"no training row lies in the region: {why}", path=data_path)


def _remove_empty_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not empty after all: someone else's files
        path.rmdir()


class _Renderer:
    """The files a result commits: the compressed model (the original's own bytes
    unless a smaller model was certified), the plausibility artifact, the certificate."""

    def __init__(
        self, cfg, original_bytes, info, data, data_path, target, classes, names: AsGiven
    ) -> None:
        from pace_cert.cert.certificate import DataSummary

        self.cfg, self.original_bytes, self.info, self.data = cfg, original_bytes, info, data
        self.data_classes = classes
        self.names = names  # every path as the certificate states it
        self.floor: list | None = None  # the floor table (estimate.FloorRow), if said
        self.original_sha = hashlib.sha256(original_bytes).hexdigest()
        self.data_summary = DataSummary(
            path=str(names.data),
            sha256=_sha256_file(data_path),
            rows=len(data.X),
            target=target,
            feature_names=list(data.feature_names),
            columns_matched_by="position" if info.feature_names is None else "name",
        )
        self._coverage: Coverage | None = None
        self._missing_original: np.ndarray | None = None
        self._original_size: Structure | None = None

    def missing_labels(self, comp_bytes: bytes) -> tuple[np.ndarray, np.ndarray] | None:
        """onnxruntime's labels (class indices) of the original and of the model
        ``comp_bytes`` on the rows with missing values (None when there are none): the
        IR has no NaN semantics, onnxruntime's labels are the ones that count."""
        if not self.data.n_missing:
            return None
        from pace_cert.model.runtime import class_indices, session

        Xm, classes = self.data.X[~self.data.complete], self.data_classes
        if self._missing_original is None:
            self._missing_original = class_indices(session(self.original_bytes), Xm, classes)
        if comp_bytes is self.original_bytes:
            return self._missing_original, self._missing_original
        return self._missing_original, class_indices(session(comp_bytes), Xm, classes)

    def coverage(self, result: CompressResult) -> Coverage:
        """Where the training rows lie (the region is the same in every result)."""
        from pace_cert.cert.coverage import coverage

        if self._coverage is None:
            self._coverage = coverage(
                result.original,
                self.data.X,
                result.region.margin,
                result.plausibility,
                result.domain,
            )
        return self._coverage

    def deployment(
        self, result: CompressResult, comp_bytes: bytes, latency_seconds: float | None
    ) -> Deployment:
        """Both models' size in what deployment pays for, on the data rows without
        missing values; the latency measured only when ``latency_seconds`` is given
        (the run's final commit), within that many seconds."""
        from pace_cert.cert.build import deployment_block
        from pace_cert.deploy_size import measure_latency, structure

        X = self.data.X[self.data.complete]
        if self._original_size is None:
            self._original_size = structure(result.original, X)
        before = self._original_size
        after = before if comp_bytes is self.original_bytes else structure(result.compressed, X)
        latency, note = None, None
        if latency_seconds is None:
            note = (
                "not measured: compress measures the latency once, at the run's end, and "
                "this certificate was written while the run went on"
            )
        else:
            latency = measure_latency(self.original_bytes, comp_bytes, X, latency_seconds)
            if latency is None:
                note = (
                    f"not measured: the run's time limit left {latency_seconds:.2f} s, too "
                    "little for the measurement"
                )
        sizes = (before, after)
        return deployment_block(sizes, (len(self.original_bytes), len(comp_bytes)), latency, note)

    def files(
        self, result: CompressResult, latency_seconds: float | None = None
    ) -> tuple[dict[str, bytes], Committed, Certificate]:
        """The file set of ``result``; ``latency_seconds``: measure the two models'
        latency within that many seconds (the final commit; None: not measured)."""
        from pace_cert.cert.build import build_certificate
        from pace_cert.cert.certificate import FloorRung, Plausibility

        cfg = self.cfg
        if result.smaller:
            comp_bytes = ensemble_to_onnx(result.compressed, self.info).SerializeToString()
        else:  # nothing smaller: the original, unchanged, is the answer
            result = result.unchanged()
            comp_bytes = self.original_bytes
        files: dict[str, bytes] = {}
        plaus = None
        if result.plausibility is not None:
            from pace_cert.region.plausibility import to_json_dict

            pbytes = (json.dumps(to_json_dict(result.plausibility), indent=1) + "\n").encode()
            files["plausibility.json"] = pbytes
            plaus = Plausibility(
                path="plausibility.json",
                sha256=hashlib.sha256(pbytes).hexdigest(),
                n_estimators=cfg.iforest_estimators,
                max_samples=int(result.plausibility.max_samples_used),
                seed=cfg.seed,
            )
        files["compressed.onnx"] = comp_bytes
        cert = build_certificate(
            result,
            cfg,
            str(self.names.model),
            self.original_sha,
            str(self.names.compressed),
            hashlib.sha256(comp_bytes).hexdigest(),
            plaus,
            self.data,
            self.data_summary,
            self.coverage(result),
            self.missing_labels(comp_bytes),
            self.deployment(result, comp_bytes, latency_seconds),
        )
        if self.floor is not None:  # the floor table said before the work
            rows = [
                FloorRung(coverage=r.coverage, eta=r.eta, trees_at_least=r.floor)
                for r in self.floor
            ]
            cert = cert.model_copy(
                update={"summary": cert.summary.model_copy(update={"floor": rows})}
            )
        files["certificate.json"] = (cert.model_dump_json(indent=1) + "\n").encode()  # last
        s = cert.summary
        if result.smaller:
            line = f"certified: {s.trees_before} -> {s.trees_after} trees"
        else:
            line = (
                f"the original unchanged: nothing smaller than its {s.trees_before} trees was "
                "certified (try a larger --eta or --delta, or a longer --time-limit)"
            )
        return files, Committed(0 if result.smaller else 2, line), cert


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _read_bytes(path: Path) -> bytes:
    load_onnx(path)  # raises InputError with a clear message for unreadable/non-ONNX
    return Path(path).read_bytes()
