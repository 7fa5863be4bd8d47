"""The library's entry points: ``pace_cert.compress``, ``pace_cert.verify`` and
``pace_cert.frontier``, for a fitted estimator and a DataFrame in a notebook.

Each is the CLI command of the same name on in-memory inputs: the model (a fitted
scikit-learn / LightGBM / XGBoost classifier, an ONNX ``ModelProto``, its bytes or a
path) and the data (a DataFrame, arrays, or a CSV path) are written into a private
temporary directory (:mod:`pace_cert.staging`), the use case runs on those files, and
the result comes back in memory; the directory is removed. Options are the CLI's flags
by the same names, checked by the same settings table (:mod:`pace_cert.settings`).
Bad input raises :class:`~pace_cert.errors.InputError` (``exit_code`` 3, the CLI's
one-line message) before anything is written.
"""

from __future__ import annotations

import dataclasses
import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pace_cert.certified import CERTIFICATE, COMPRESSED, ORIGINAL, CertifiedModel
from pace_cert.errors import InputError
from pace_cert.plumbing.budget import Budget
from pace_cert.plumbing.outputs import Committed, OutputDir
from pace_cert.staging import (
    ModelInput,
    Table,
    model_input,
    private_dir,
    renamed,
    table_input,
    write_table,
)

if TYPE_CHECKING:
    from pace_cert.cert.certificate import Certificate
    from pace_cert.cert.verify_report import VerifyReport
    from pace_cert.frontier.record import FrontierRecord

#: CLI flag names that differ from the settings' field names
FLAG_FIELDS = {"iforest_trees": "iforest_estimators", "iforest_samples": "iforest_max_samples"}


def config_of(options: dict[str, Any]) -> Any:
    """The :class:`~pace_cert.settings.CompressConfig` of keyword options named as the
    CLI's flags (``iforest_trees``, ``iforest_samples``: 0 means auto) or as settings
    fields (any tuning field too); InputError with the settings table's message."""
    from pace_cert.settings import CompressConfig, SettingError, UnknownSetting, setting_names

    fields = {FLAG_FIELDS.get(k, k): v for k, v in options.items()}
    if fields.get("iforest_max_samples") == 0:
        fields["iforest_max_samples"] = "auto"
    try:
        return CompressConfig.of(**fields)
    except UnknownSetting as e:  # suggested among the settings and compress's keywords
        known = setting_names() | _keywords(compress)
        raise InputError(None, str(UnknownSetting(e.flag, known))) from None
    except SettingError as e:
        raise InputError(None, str(e)) from None
    except TypeError as e:  # a value of a type the table's rules cannot compare
        raise InputError(None, f"invalid setting ({e})") from None


def _keywords(function: Callable[..., Any]) -> set[str]:
    """The keyword-only parameter names of ``function``."""
    import inspect

    params = inspect.signature(function).parameters.values()
    return {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def compress(
    model: Any,
    X: Any,
    y: Any = None,
    *,
    eta: float = 0.0,
    coverage: float | None = None,
    delta: float = 0.0,
    mode: str = "pace",
    objective: str = "trees",
    learner_depth: int | None = None,
    max_depth: int | None = None,
    max_leaves: int | None = None,
    time_limit: float | None = None,
    threads: int = 2,
    seed: int = 0,
    bounds: str = "none",
    binary: str = "infer",
    integer: str = "infer",
    milp: str = "auto",
    backend: str = "local",
    ray_address: str | None = None,
    target: str = "target",
    iforest_trees: int = 100,
    iforest_samples: int = 0,
    out: str | Path | None = None,
    quiet: bool = False,
    on_commit: Callable[[Certificate], None] | None = None,
    **settings: Any,
) -> CertifiedModel:
    """Compress ``model`` and certify the result on the region of ``X``: ``pace-cert
    compress`` in memory.

    ``model``: a fitted scikit-learn classifier (RandomForest, ExtraTrees,
    GradientBoosting, HistGradientBoosting, AdaBoost, DecisionTree, or a Pipeline of a
    supported scaler and one of them), LightGBM ``LGBMClassifier``, XGBoost
    ``XGBClassifier``, an ONNX ``ModelProto``, its bytes, or a path. ``X``: the training
    rows, a pandas DataFrame (the estimator's columns by name; labels in ``y`` or in its
    ``target`` column), a 2-D array with labels ``y``, or a CSV path (as ``--data``).

    ``coverage``: instead of ``eta``, the share of the training rows (in %, 99 for 99 %)
    the region must hold; eta is derived from the rows (``--coverage``).
    The other keywords are the CLI's flags, with the CLI's defaults (``mode="pace"``);
    any further setting of the settings table by name (``synth_size=0``, ...).
    ``time_limit``: seconds from this call on (conversion included), as the CLI counts
    from process start. ``out``: also write the files into this directory as ``compress
    --out`` does (default: a private temporary one, removed). ``quiet``: no progress
    (else in place in a notebook, lines on stderr elsewhere). ``on_commit``: called
    with the certificate of each file set committed. A KeyboardInterrupt returns the
    best certified model committed so far (``interrupted`` is set); before the first
    commit it propagates. Returns a :class:`~pace_cert.certified.CertifiedModel`."""
    t0 = time.perf_counter()
    flags = dict(eta=eta, delta=delta, mode=mode, time_limit=time_limit, threads=threads)
    flags.update(coverage=coverage)
    flags.update(objective=objective, learner_depth=learner_depth)
    flags.update(max_depth=max_depth, max_leaves=max_leaves)
    flags.update(seed=seed, bounds=bounds, binary=binary, integer=integer, milp=milp)
    flags.update(backend=backend, ray_address=ray_address)
    flags.update(iforest_trees=iforest_trees, iforest_samples=iforest_samples)
    cfg = config_of({**flags, **settings})
    budget = Budget.seconds(cfg.time_limit, start=t0)
    given = model_input(model)
    table = table_input(X, y, target, given.columns)
    with private_dir() as tmp:
        model_path, data_path, names = _stage(tmp, given, table, target)
        out_dir = tmp / "out" if out is None else Path(out)
        try:
            return _compress(
                given, table, model_path, data_path, out_dir, cfg, target, budget, t0,
                quiet, on_commit, out is None,
            )  # fmt: skip
        except InputError as e:
            raise renamed(e, names) from None


def _stage(
    tmp: Path, given: ModelInput, table: Table | Path, target: str
) -> tuple[Path, Path, dict[str, str]]:
    """The model and data files in ``tmp`` (a path given is used as it is) and the
    private names -> the caller's names."""
    names: dict[str, str] = {}
    model_path = given.path
    if model_path is None:
        model_path = tmp / ORIGINAL
        model_path.write_bytes(given.onnx_bytes)
        names[str(model_path)] = given.name
    if isinstance(table, Path):
        return model_path, table, names
    data_path = tmp / "train.csv"
    write_table(data_path, table, target)
    names[str(data_path)] = table.name
    return model_path, data_path, names


class _KeptOutput(OutputDir):
    """The output directory, with the bytes of the last complete file set kept in
    memory; a SIGINT during a commit waits until the set is complete (main thread).
    ``original``: bytes written as original.onnx in the first set (a model given in
    memory, so the directory is what :meth:`CertifiedModel.save` writes: ``pace-cert
    verify`` and :meth:`CertifiedModel.load` read it alone); kept out of ``files``."""

    def __init__(self, path: Path, original: bytes | None = None) -> None:
        super().__init__(path)
        self.files: dict[str, bytes] = {}
        self.original = original

    def commit(self, files: dict[str, bytes], committed: Committed) -> None:
        with _SigintDeferred():
            first = {ORIGINAL: self.original} if self.original is not None else {}
            super().commit({**first, **files}, committed)
            self.original = None  # the same bytes: once is enough
            self.files = {**self.files, **files}


class _SigintDeferred:
    """Within it, a SIGINT in the main thread is held back and raised at its end."""

    def __enter__(self) -> None:
        self.old: Any = None
        self.pending = False
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGINT, self._hold)

    def _hold(self, signum: int, frame: Any) -> None:
        self.pending = True

    def __exit__(self, *exc: object) -> None:
        if self.old is None:
            return
        signal.signal(signal.SIGINT, self.old)
        if self.pending and not any(exc):
            raise KeyboardInterrupt


def _compress(
    given: ModelInput,
    table: Table | Path,
    model_path: Path,
    data_path: Path,
    out_dir: Path,
    cfg: Any,
    target: str,
    budget: Budget,
    t0: float,
    quiet: bool,
    on_commit: Callable[[Certificate], None] | None,
    private_out: bool,
) -> CertifiedModel:
    from pace_cert.app import AsGiven, guard_outcome, run_compress
    from pace_cert.driver.result import STEP_BEFORE_PLAN, StopReason
    from pace_cert.plumbing.progress import progress_for

    as_given = AsGiven(
        model=ORIGINAL if given.in_memory else None,
        data=None if isinstance(table, Path) else table.name,
        compressed=COMPRESSED if private_out else None,
    )
    output = _KeptOutput(out_dir, given.onnx_bytes if given.in_memory and not private_out else None)
    progress = progress_for(quiet, t0, budget)
    running: list[str | None] = [None]

    def committed(cert: Certificate) -> None:
        progress.committed(cert)
        if on_commit is not None:
            on_commit(cert)

    interrupted = False
    progress.begin()
    try:
        res = run_compress(
            model_path,
            data_path,
            out_dir,
            cfg,
            target,
            progress,
            budget,
            output=output,
            on_commit=committed,
            on_bound=progress.bound_raised,
            on_step=lambda name: running.__setitem__(0, name),
            as_given=as_given,
        )
        exit_code, estimate, found = res.exit_code, res.estimate, res.found
    except KeyboardInterrupt:
        stop = StopReason(
            running[0] or STEP_BEFORE_PLAN,
            "a KeyboardInterrupt ended the run during this step",
            signal="KeyboardInterrupt",
        )
        last = guard_outcome(output, stop)
        if last is None:  # nothing certified yet: nothing to return
            raise
        exit_code, interrupted = last.exit_code, True
        estimate, found = last.estimate, last.found
        progress("interrupted: the result is the best certified model committed so far")
    finally:
        progress.close()
    files = {k: v for k, v in output.files.items()}
    return CertifiedModel(
        files,
        given.onnx_bytes,
        exit_code,
        original_in_memory=given.in_memory,
        interrupted=interrupted,
        node_rows=_node_rows(files, table, data_path, target),
        estimate=None if cfg.mode == "tree" else estimate,  # about prunings (as the CLI)
        time_limit=cfg.time_limit,
        found=found,
    )


def _node_rows(files: dict[str, bytes], table: Table | Path, data_path: Path, target: str) -> Any:
    """Training rows per node when the compressed model is one tree (else None)."""
    import numpy as np
    import onnx

    from pace_cert.model.onnx_graph import UnsupportedModel
    from pace_cert.model.onnx_reader import ensemble_from_model
    from pace_cert.model.sklearn_tree import node_counts

    try:
        ens, _ = ensemble_from_model(onnx.load_from_string(files[COMPRESSED]))
    except (UnsupportedModel, KeyError):
        return None
    if ens.n_trees != 1:
        return None
    if isinstance(table, Table):
        X = table.X.astype(np.float32)
    else:
        from pace_cert.data import read_csv

        X = read_csv(data_path, ens.classes, ens.n_features, target).X
    return node_counts(ens.trees[0], X[~np.isnan(X).any(axis=1)])


# ------------------------------------------------------------------------ verify


def verify(
    original: Any,
    compressed: str | Path | None = None,
    certificate: str | Path | None = None,
    *,
    X: Any = None,
    y: Any = None,
    exhaustive: bool = False,
    probe: int = 0,
    threads: int = 2,
    time_limit: float | None = None,
    backend: str = "local",
    ray_address: str | None = None,
) -> VerifyReport:
    """Re-prove a certificate independently (``pace-cert verify``): of a
    :class:`~pace_cert.certified.CertifiedModel` (``verify(result)``), of a directory
    :meth:`CertifiedModel.save` or ``compress --out`` wrote (``verify(dir)``), or of the
    three files (``verify(original, compressed, certificate)``; the original may also be
    the certified ``ModelProto`` or bytes). ``X`` (with ``y``): also replay these rows
    (``--data``); the same DataFrame or arrays ``compress`` was given make the same CSV,
    so the certificate's coverage of them is re-counted. Returns the
    :class:`~pace_cert.cert.verify_report.VerifyReport` (``verified``, ``exit_code``,
    ``status``, ``message``, ``claims``)."""
    from pace_cert.cert.certificate_file import check_json
    from pace_cert.cert.verify import run_verify

    t0 = time.perf_counter()
    with private_dir() as tmp:
        orig, comp, cert, names = _verify_files(tmp, original, compressed, certificate)
        check_json(cert)
        data_path = None
        if X is not None:
            from pace_cert.cert.verify import load_certificate

            c = load_certificate(cert)
            target = c.data.target if c.data is not None else "target"
            by_name = c.data is not None and c.data.columns_matched_by == "name"
            table = table_input(X, y, target, c.data.feature_names if by_name else None)
            data_path, more = _verify_data(tmp, table, target)
            names.update(more)
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        try:
            return run_verify(
                orig,
                comp,
                cert,
                threads=threads,
                time_limit=None if left is None else max(left, 0.01),
                exhaustive=exhaustive,
                data_path=data_path,
                probe=probe,
                backend=backend,
                ray_address=ray_address,
            )
        except InputError as e:
            raise renamed(e, names) from None


def _verify_files(
    tmp: Path, original: Any, compressed: Any, certificate: Any
) -> tuple[Path, Path, Path, dict[str, str]]:
    """The three files verify reads, and the private names -> the caller's names."""
    if isinstance(original, CertifiedModel) or (
        isinstance(original, str | Path) and Path(original).is_dir() and compressed is None
    ):
        if compressed is not None or certificate is not None:
            raise InputError(None, "verify: a result or a directory comes alone")
        if isinstance(original, CertifiedModel):
            d = original.save(tmp / "result", original=True)
            names = {str(d / ORIGINAL): ORIGINAL}
        else:
            d = Path(original)
            names = {}
            if not (d / ORIGINAL).is_file():
                result = CertifiedModel.load(d)
                (tmp / ORIGINAL).write_bytes(result.original)
                return tmp / ORIGINAL, d / COMPRESSED, d / CERTIFICATE, names
        return d / ORIGINAL, d / COMPRESSED, d / CERTIFICATE, names
    if compressed is None or certificate is None:
        raise InputError(
            None, "verify: give a result, a saved directory, or original, compressed, certificate"
        )
    if isinstance(original, str | Path):
        return Path(original), Path(compressed), Path(certificate), {}
    import onnx

    if isinstance(original, onnx.ModelProto):
        blob = original.SerializeToString()
    elif isinstance(original, bytes | bytearray):
        blob = bytes(original)
    else:
        raise InputError(
            None,
            "verify: the original must be the certified ONNX (a path, ModelProto or bytes); "
            f"got {type(original).__name__} (an estimator exported again may differ byte "
            "for byte from the one certified)",
        )
    (tmp / ORIGINAL).write_bytes(blob)
    return tmp / ORIGINAL, Path(compressed), Path(certificate), {str(tmp / ORIGINAL): ORIGINAL}


def _verify_data(tmp: Path, table: Table | Path, target: str) -> tuple[Path, dict[str, str]]:
    if isinstance(table, Path):
        return table, {}
    path = tmp / "data.csv"
    write_table(path, table, target)
    return path, {str(path): table.name}


# ---------------------------------------------------------------------- frontier


@dataclasses.dataclass(frozen=True, eq=False)
class FrontierResult:
    """A frontier run: ``record`` (frontier.json), ``exit_code`` (0: some rung
    certified a smaller model), ``rungs``: each rung with a certificate as a
    :class:`~pace_cert.certified.CertifiedModel`, by rung name; ``interrupted``: a
    KeyboardInterrupt ended the run (the rungs committed before it are kept)."""

    record: FrontierRecord
    exit_code: int
    rungs: dict[str, CertifiedModel]
    frontier_json: bytes
    original: bytes
    original_in_memory: bool = True
    interrupted: bool = False

    @property
    def table(self) -> str:
        """The frontier table, what its columns mean and the recommendation."""
        from pace_cert.frontier.table import render_text

        return render_text(self.record)

    def save(self, path: str | Path) -> Path:
        """Write frontier.json, one directory per rung (each checked by ``pace-cert
        verify`` alone) and, when the model came in memory, original.onnx."""
        from pace_cert.app import prepare_out_dir
        from pace_cert.plumbing.outputs import write_atomic

        d = Path(path)
        prepare_out_dir(d)
        if self.original_in_memory:
            write_atomic(d / ORIGINAL, self.original)
        for name, rung in self.rungs.items():
            rung.save(d / name, original=False)
        write_atomic(d / "frontier.json", self.frontier_json)
        return d

    def __repr__(self) -> str:
        return f"FrontierResult\n{self.table}"

    def _repr_html_(self) -> str:
        import html

        return f"<div><b>FrontierResult</b><pre>{html.escape(self.table)}</pre></div>"


def frontier(
    model: Any,
    X: Any,
    y: Any = None,
    *,
    test: Any = None,
    y_test: Any = None,
    rows: Sequence[float] | str | None = None,
    eta: Sequence[float] | str | None = None,
    delta: Sequence[float] | str | None = None,
    mode: str = "pace",
    time_limit: float | None = None,
    threads: int = 2,
    seed: int = 0,
    backend: str = "local",
    ray_address: str | None = None,
    target: str = "target",
    out: str | Path | None = None,
    quiet: bool = False,
    refine: bool = True,
) -> FrontierResult:
    """Certify a ladder of nested regions in one time budget (``pace-cert frontier``).
    ``model``, ``X``, ``y``, ``target`` as for :func:`compress`; ``test`` (with
    ``y_test``): held-out rows measured per rung; ``rows``: shares of the rows in % the
    rungs' regions hold (default 100, 99, 95, 90, 80, 70), or ``eta`` / ``delta``
    values; as lists or the CLI's comma-separated strings. ``out``: also write the
    rung directories there (default: a private temporary directory, removed).
    ``refine``: add rungs where the size falls by more than half (``--refine``). Returns
    a :class:`FrontierResult`."""
    from pace_cert.app import AsGiven
    from pace_cert.frontier.ladder import LadderError, ladder
    from pace_cert.frontier.record import FrontierRecord
    from pace_cert.frontier.run import run_frontier
    from pace_cert.plumbing.progress import progress_for

    t0 = time.perf_counter()
    if mode not in ("pace", "prune", "tree"):
        raise InputError(None, f"--mode: expected pace, prune or tree, got {mode!r}")
    if backend not in ("local", "ray"):
        raise InputError(None, f"--backend: expected local or ray, got {backend!r}")
    try:
        rungs = ladder(_listed(eta), _listed(delta), _listed(rows))
    except LadderError as e:
        raise InputError(None, str(e)) from None
    settings = {"mode": mode, "time_limit": time_limit, "threads": threads, "seed": seed}
    config_of(settings)  # the settings table's messages before any work
    budget = Budget.seconds(time_limit, start=t0)
    given = model_input(model)
    table = table_input(X, y, target, given.columns)
    with private_dir() as tmp:
        model_path, data_path, names = _stage(tmp, given, table, target)
        test_path = None
        if test is not None:
            cols = given.columns if isinstance(table, Path) else table.names
            test_table = table_input(test, y_test, target, cols)
            test_path, more = _verify_data(tmp, test_table, target)
            names.update(more)
        out_dir = tmp / "out" if out is None else Path(out)
        as_given = AsGiven(
            model=ORIGINAL if given.in_memory else None,
            data=None if isinstance(table, Path) else table.name,
            compressed=COMPRESSED if out is None else None,
            test=names.get(str(test_path)),
        )
        progress = progress_for(quiet, t0, budget)
        interrupted = False
        try:
            res = run_frontier(
                model_path,
                data_path,
                out_dir,
                rungs,
                settings,
                test=test_path,
                target=target,
                budget=budget,
                backend=backend,
                ray_address=ray_address,
                progress=progress,
                as_given=as_given,
                refine=refine,
            )
            exit_code = res.exit_code
        except InputError as e:
            raise renamed(e, names) from None
        except KeyboardInterrupt:
            if not (out_dir / "frontier.json").is_file():
                raise
            interrupted, exit_code = True, -1
        finally:
            progress.close()
        blob = (out_dir / "frontier.json").read_bytes()
        record = FrontierRecord.model_validate_json(blob)
        if interrupted:
            exit_code = record.exit_code
        results = {}
        for r in record.rungs:
            if (out_dir / r.name / CERTIFICATE).is_file():
                rung = CertifiedModel.load(out_dir / r.name, given.onnx_bytes)
                results[r.name] = dataclasses.replace(rung, original_in_memory=given.in_memory)
    return FrontierResult(
        record, exit_code, results, blob, given.onnx_bytes, given.in_memory, interrupted
    )


def _listed(values: Sequence[float] | str | None) -> str | None:
    """A ladder option as the CLI's comma-separated text."""
    if values is None or isinstance(values, str):
        return values
    return ",".join(repr(float(v)) for v in values)
