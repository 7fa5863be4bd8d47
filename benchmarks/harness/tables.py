"""Benchmark harness: reproduce the PACE paper's tables with pace-cert.

    python benchmarks/harness.py quick|full [--out benchmarks/results] [--only PATTERN]

Each configuration follows ``shared/paper/REPRODUCTION.md``: bundled dataset → 10 ordinal
bins → stratified 80/20 split with the seed → scikit-learn ensemble → skl2onnx → read
back with pace-cert's ONNX reader (so we measure what onnxruntime runs) → ``compress``
on the float32 training rows. Results go to ``<out>/<profile>.csv`` (one row per
configuration, appended as soon as it finishes) and ``<out>/<profile>.md`` (tables with
the paper's numbers alongside). See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import csv
import functools
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import resource
import shlex
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import paper_values as pv

from pace_cert import zoo
from pace_cert.model.ensemble import Ensemble
from pace_cert.model.onnx_reader import OnnxModelInfo, ensemble_from_model
from pace_cert.model.onnx_writer import ensemble_to_onnx
from pace_cert.driver.result import CompressResult
from pace_cert.driver.runner import compress
from pace_cert.settings import CompressConfig
from pace_cert.region.masks import probe_points, region_mask

MODES = ("prune", "generate", "pace")
DONE_STATUSES = ("certified", "inconclusive")  # a resumed run skips these, reruns the rest
DEFAULT_OUT = Path(__file__).resolve().parent / "results"


class MismatchError(AssertionError):
    """onnxruntime and the IR disagree: a bug in pace-cert, never a benchmark outcome."""


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Config:
    """One benchmark run: what to train and how to compress it."""

    dataset: str
    family: str  # rf | ada
    n_estimators: int
    depth: int
    mode: str  # prune | generate | pace
    eta: float
    delta: float
    seed: int

    @property
    def key(self) -> str:
        return (
            f"{self.family}-{self.dataset}-n{self.n_estimators}-d{self.depth}-{self.mode}"
            f"-eta{self.eta:g}-delta{self.delta:g}-s{self.seed}"
        )

    @property
    def group(self) -> tuple:
        """Everything but the seed: the unit over which the tables average."""
        return (
            self.dataset,
            self.family,
            self.n_estimators,
            self.depth,
            self.mode,
            self.eta,
            self.delta,
        )


@dataclass
class Result:
    """One CSV row. Sizes are those of the returned ensemble (the original if uncertified)."""

    key: str
    dataset: str
    family: str
    n_estimators: int
    depth: int
    mode: str
    eta: float
    delta: float
    seed: int
    status: str  # certified | inconclusive | not-implemented | error
    S: int | None = None  # trees in the returned ensemble
    P: float | None = None  # % of those trees with origin "new"
    T: float | None = None  # wall seconds of compress()
    trees_before: int | None = None
    leaves_before: int | None = None
    leaves_after: int | None = None
    fidelity: float | None = None  # test rows: compressed IR == original (onnxruntime)
    accuracy: float | None = None  # test rows: compressed IR == label
    original_accuracy: float | None = None  # test rows: original (onnxruntime) == label
    samples_kept: int | None = None  # training rows inside the region
    samples_dropped: int | None = None
    separating_samples: int | None = None
    phase: str = ""  # l1 | l0: which phase produced the returned ensemble
    l0_optimal: bool | None = None
    size_bound: int | None = None  # pace, depth <= 2: no faithful model of fewer trees (synth)
    pricing: str = ""  # none | exact | heuristic
    pricing_rounds: int | None = None
    generation_stop: str = ""
    hit_time_limit: bool | None = None
    time_limit: float | None = None
    onnx_checks: str = ""  # which onnxruntime agreement checks ran (all passed)
    error: str = ""
    finished: str = ""

    @classmethod
    def for_config(cls, cfg: Config, status: str, **values) -> Result:
        return cls(key=cfg.key, **asdict(cfg), status=status, finished=_now(), **values)

    @property
    def config(self) -> Config:
        return Config(
            self.dataset,
            self.family,
            self.n_estimators,
            self.depth,
            self.mode,
            self.eta,
            self.delta,
            self.seed,
        )

    def to_row(self) -> dict[str, str]:
        return {k: "" if v is None else str(v) for k, v in asdict(self).items()}

    @classmethod
    def from_row(cls, row: dict[str, str]) -> Result:
        return cls(**{f.name: _parse(row.get(f.name, ""), str(f.type)) for f in fields(cls)})


def _parse(text: str, type_name: str) -> object:
    """Inverse of ``str()`` for the field types used in :class:`Result`."""
    base = type_name.replace(" | None", "")
    if text == "":
        return "" if base == "str" else None
    if base == "int":
        return int(text)
    if base == "float":
        return float(text)
    if base == "bool":
        return text == "True"
    return text


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def report_head(title: str, script: str, facts: list[str], doc: str | None) -> list[str]:
    """Header lines of a side-by-side results file: title, the command that made it
    (``script`` with this process's arguments), the date, ``facts`` (one bullet each)
    and the script docstring's second paragraph on one line."""
    return [
        f"# {title}",
        "",
        f"- command: `python benchmarks/{script} {' '.join(sys.argv[1:])}`",
        f"- date (UTC): {_now()}",
        *(f"- {f}" for f in facts),
        "",
        (doc or "").split("\n\n")[1].replace("\n", " "),
        "",
    ]


# ----------------------------------------------------------------------- the pipeline


@dataclass
class Prepared:
    """A trained, exported and re-read model with its data split."""

    original: Ensemble
    info: OnnxModelInfo
    onnx_bytes: bytes
    X_train: np.ndarray  # float32
    X_test: np.ndarray  # float32
    y_test: np.ndarray
    ort_train: np.ndarray  # onnxruntime labels of the original ONNX
    ort_test: np.ndarray


def ort_labels(onnx_bytes: bytes, X: np.ndarray) -> np.ndarray:
    """Labels that onnxruntime returns for float32 rows ``X`` (first output)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(onnx_bytes, opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return np.asarray(sess.run(None, {name: X})[0]).reshape(-1)


def check_agree(what: str, cfg: Config, expected: np.ndarray, got: np.ndarray) -> None:
    """Raise :class:`MismatchError` naming the first disagreeing rows."""
    bad = np.flatnonzero(np.asarray(expected) != np.asarray(got))
    if len(bad):
        raise MismatchError(
            f"{cfg.key}: {what} disagree on {len(bad)}/{len(expected)} rows "
            f"(first rows {bad[:5].tolist()}: expected {np.asarray(expected)[bad[:5]].tolist()}, "
            f"got {np.asarray(got)[bad[:5]].tolist()})"
        )


def decided_rows(model: Ensemble, X: np.ndarray) -> np.ndarray:
    """Rows whose IR margin exceeds the model's runtime guard: there onnxruntime's label
    provably equals the IR's. Rows inside the guard (e.g. an exact 0.5/0.5 vote whose
    float32 leaf values differ in the last bit) lie outside every faithfulness region
    (c_o >= the guard), so they are left out of the agreement check."""
    S = model.scores(X)
    top = np.sort(S, axis=1)
    margin = top[:, -1] - top[:, -2] if S.shape[1] > 1 else np.full(len(X), np.inf)
    return margin > model.runtime_guard


def prepare(cfg: Config) -> Prepared:
    """Data → bins → split → train → ONNX → IR, with the IR checked against onnxruntime."""
    X, y, _ = zoo.load_dataset(cfg.dataset)
    X_train, X_test, y_train, y_test = zoo.split(zoo.bin_features(X), y, cfg.seed)
    model = zoo.make_model(cfg.family, cfg.n_estimators, cfg.depth, cfg.seed)
    model.fit(X_train, y_train)
    onnx_bytes = zoo.export_onnx(model, X.shape[1]).SerializeToString()
    import onnx

    original, info = ensemble_from_model(onnx.load_from_string(onnx_bytes))
    X_train32, X_test32 = X_train.astype(np.float32), X_test.astype(np.float32)
    ort_train, ort_test = ort_labels(onnx_bytes, X_train32), ort_labels(onnx_bytes, X_test32)
    for what, X32, ort in (("test", X_test32, ort_test), ("training", X_train32, ort_train)):
        decided = decided_rows(original, X32)  # near-ties: float32 rounding decides them
        check_agree(
            f"original ONNX (onnxruntime) and its IR on {what} rows (margin > runtime guard)",
            cfg,
            ort[decided],
            original.predict(X32[decided]),
        )
    return Prepared(original, info, onnx_bytes, X_train32, X_test32, y_test, ort_train, ort_test)


PROBE_POINTS = 20_000  # random points near the data per certified result (region check)


def check_compressed(cfg: Config, prep: Prepared, res: CompressResult) -> list[str]:
    """onnxruntime checks on a certified result; returns the names of the checks run.

    The certificate's claim is checked where it can be without a solver: on every test
    and training row inside its region (the declared domain, the original's margin above
    c_o, the plausibility threshold) and on the in-region share of ``PROBE_POINTS``
    random points near the training rows (:func:`pace_cert.region.probe_points`),
    onnxruntime's labels of the original and of the written compressed model must be
    equal. Near-ties inside the runtime guard are outside every region (c_o >= the
    guard), so onnxruntime's float32 sums may decide them either way."""
    comp = res.compressed
    written = ensemble_to_onnx(comp, prep.info).SerializeToString()
    for name, X in (("test", prep.X_test), ("training", prep.X_train)):
        check_agree(
            f"written compressed ONNX (onnxruntime) and compressed IR on {name} rows",
            cfg,
            comp.predict(X),
            ort_labels(written, X),
        )
    done = ["original", "compressed-writer"]
    scope = "global" if cfg.eta == 0 and cfg.delta == 0 else "regional"

    def inside(X: np.ndarray) -> np.ndarray:
        return region_mask(prep.original, res.region.margin, res.plausibility, X, res.domain)

    for name, X, ref in (
        ("test", prep.X_test, prep.ort_test),
        ("training", prep.X_train, prep.ort_train),
    ):
        keep = inside(X)
        check_agree(
            f"certified {scope} compression: original (onnxruntime) and "
            f"compressed IR on {name} rows in the region",
            cfg,
            ref[keep],
            comp.predict(X[keep]),
        )
    done.append(f"{scope}-faithful")
    P = probe_points(prep.X_train, PROBE_POINTS, cfg.seed)
    P = P[inside(P)]
    if len(P):
        check_agree(
            f"certified {scope} compression: original and compressed ONNX (onnxruntime) on "
            f"{len(P)} random points in the region",
            cfg,
            ort_labels(prep.onnx_bytes, P),
            ort_labels(written, P),
        )
        done.append("region-probe")
    return done


def pricing_available() -> bool:
    """``generate`` / ``pace`` need the pricing module, which may not exist yet."""
    return importlib.util.find_spec("pace_cert.pricing") is not None


def is_not_implemented(exc: BaseException) -> bool:
    if isinstance(exc, NotImplementedError):
        return True
    return isinstance(exc, ModuleNotFoundError) and (exc.name or "").startswith("pace_cert")


def reached_time_limit(r: Result) -> bool:
    """Did the run stop because of its time limit (rather than by converging)?"""
    if r.time_limit is None or r.T is None:
        return False
    return (
        0.95 * r.time_limit <= r.T
        or r.status == "inconclusive"
        or "time limit" in r.generation_stop
    )


def measure(
    cfg: Config, prep: Prepared, res: CompressResult, seconds: float, time_limit: float | None
) -> Result:
    comp = res.compressed
    pred = comp.predict(prep.X_test)
    checks = check_compressed(cfg, prep, res) if res.certified else ["original"]
    result = Result.for_config(
        cfg,
        res.status,
        S=comp.n_trees,
        P=100.0 * sum(o == "new" for o in comp.origin) / comp.n_trees if comp.n_trees else 0.0,
        T=round(seconds, 3),
        trees_before=prep.original.n_trees,
        leaves_before=prep.original.n_leaves,
        leaves_after=comp.n_leaves,
        fidelity=float(np.mean(pred == prep.ort_test)),
        accuracy=float(np.mean(pred == prep.y_test)),
        original_accuracy=float(np.mean(prep.ort_test == prep.y_test)),
        samples_kept=res.samples_kept,
        samples_dropped=res.samples_dropped,
        separating_samples=len(res.history),
        phase=res.phase,
        l0_optimal=res.l0_optimal,
        size_bound=getattr(res, "size_bound", None),
        pricing=res.pricing,
        pricing_rounds=len(res.reduced_costs),
        generation_stop=res.generation_stop,
        time_limit=time_limit,
        onnx_checks="+".join(checks),
    )
    result.hit_time_limit = reached_time_limit(result)
    return result


def run_config(
    cfg: Config,
    time_limit: float | None,
    threads: int,
    progress: Callable[[str], None] | None = None,
) -> Result:
    """Run one configuration; only an onnxruntime/IR mismatch escapes as an exception."""
    if cfg.mode != "prune" and not pricing_available():
        return Result.for_config(
            cfg, "not-implemented", time_limit=time_limit, error="pace_cert.pricing is missing"
        )
    try:
        prep = prepare(cfg)
        comp_cfg = CompressConfig.of(
            mode=cfg.mode,
            eta=cfg.eta,
            delta=cfg.delta,
            seed=cfg.seed,
            threads=threads,
            time_limit=time_limit,
        )
        t0 = time.perf_counter()
        res = compress(prep.original, prep.X_train, comp_cfg, progress)
        seconds = time.perf_counter() - t0
        return measure(cfg, prep, res, seconds, time_limit)
    except MismatchError:
        raise
    except Exception as exc:
        status = "not-implemented" if is_not_implemented(exc) else "error"
        if status == "error":
            traceback.print_exc()
        return Result.for_config(
            cfg, status, time_limit=time_limit, error=f"{type(exc).__name__}: {exc}"[:300]
        )


# -------------------------------------------------------------------------- tables


@dataclass
class Agg:
    """Mean over seeds of one configuration group."""

    runs: int = 0
    certified: int = 0
    hit_limit: int = 0
    statuses: tuple[str, ...] = ()
    S: float | None = None  # over certified runs
    S_seed0: int | None = None
    bound: float | None = None  # size_bound over certified runs (None unless all have one)
    P: float | None = None
    T: float | None = None  # over all runs that ran compress
    fidelity: float | None = None
    accuracy: float | None = None
    original_accuracy: float | None = None
    samples_kept: float | None = None
    samples_dropped: float | None = None

    @property
    def status(self) -> str:
        if not self.runs:
            return "not run"
        if self.certified == self.runs:
            text = "cert" if self.runs == 1 else f"{self.runs}/{self.runs} cert"
        elif self.runs == 1:
            text = self.statuses[0]
        else:
            others = sorted(set(self.statuses) - {"certified"})
            text = f"{self.certified}/{self.runs} cert, " + ", ".join(others)
        if self.hit_limit:
            text += " (time limit)" if self.runs == 1 else f" ({self.hit_limit} hit time limit)"
        return text


def _mean(values: Iterable[float | int | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def aggregate(rows: Sequence[Result]) -> Agg:
    cert = [r for r in rows if r.status == "certified"]
    ran = [r for r in rows if r.status in DONE_STATUSES]
    seed0 = [r.S for r in cert if r.seed == 0]
    return Agg(
        runs=len(rows),
        certified=len(cert),
        hit_limit=sum(reached_time_limit(r) for r in rows),
        statuses=tuple(r.status for r in rows),
        S=_mean(r.S for r in cert),
        S_seed0=seed0[0] if seed0 else None,
        bound=_mean(r.size_bound for r in cert) if all(r.size_bound for r in cert) else None,
        P=_mean(r.P for r in cert),
        T=_mean(r.T for r in ran),
        fidelity=_mean(r.fidelity for r in cert),
        accuracy=_mean(r.accuracy for r in cert),
        original_accuracy=_mean(r.original_accuracy for r in ran),
        samples_kept=_mean(r.samples_kept for r in ran),
        samples_dropped=_mean(r.samples_dropped for r in ran),
    )


def fmt(x: float | int | None, digits: int = 1, suffix: str = "") -> str:
    if x is None:
        return "—"
    if float(x).is_integer():
        return f"{int(x)}{suffix}"
    return f"{x:.{digits}f}{suffix}"


def fmt_pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def paper_cell(stat: pv.PaperStat | None, attr: str, suffix: str = "") -> str:
    if stat is None:
        return ""
    if stat.tlim:
        return "tlim"
    value = getattr(stat, attr)
    return "--" if value is None else f"{value:,}{suffix}"


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


class Index:
    """Results grouped by configuration (minus seed), restricted to a table's seeds."""

    def __init__(self, results: Iterable[Result]) -> None:
        self.by_group: dict[tuple, list[Result]] = {}
        for r in results:
            self.by_group.setdefault(r.config.group, []).append(r)

    def agg(self, cfg: Config, seeds: Sequence[int]) -> Agg:
        rows = [r for r in self.by_group.get(cfg.group, []) if r.seed in seeds]
        return aggregate(rows)


# --------------------------------------------------------------------- table specs


@dataclass(frozen=True)
class FipeTable:
    """Table (a): prune-only vs FIPE, n=50, depth 1, global region; with ``pace`` in
    ``modes`` also PACE beside the paper's PACE column (the paper's table reports PACE)."""

    datasets: tuple[str, ...]
    families: tuple[str, ...] = ("rf", "ada")
    seeds: tuple[int, ...] = (0,)
    modes: tuple[str, ...] = ("prune",)
    title: str = "Comparison with FIPE (n=50, depth 1, eta=delta=0)"

    def cells(self) -> list[Config]:
        return [
            Config(ds, fam, 50, 1, m, 0.0, 0.0, 0)
            for fam in self.families
            for ds in self.datasets
            for m in self.modes
        ]

    def configs(self) -> list[Config]:
        return [replace(c, seed=s) for c in self.cells() for s in self.seeds]

    def render(self, index: Index) -> str:
        pace_cols = "pace" in self.modes
        header = [
            "dataset",
            "family",
            "status",
            "ours S (mean)",
            "min. here",
            "ours S (seed 0)",
            "FIPE here (seed 0)",
            "Δ seed 0",
            "ours T (s)",
            "fid.",
            "acc. (orig.)",
        ]
        if pace_cols:
            header += ["PACE status", "PACE S", "PACE P", "PACE T (s)"]
        header += ["paper FIPE S (T)", "paper PACE S (P, T)"]
        rows = []
        for c in self.cells():
            if c.mode != "prune":
                continue
            a = index.agg(c, self.seeds)
            here = pv.FIPE_HERE.get((c.dataset, c.family))
            fipe = pv.d1_table(c.dataset, c.family, "fipe")
            pace = pv.d1_table(c.dataset, c.family, "pace")
            delta = "—" if a.S_seed0 is None or here is None else f"{a.S_seed0 - here:+d}"
            b = index.agg(replace(c, mode="pace"), self.seeds) if pace_cols else None
            bounds = [x.bound for x in (a, b) if x is not None and x.bound is not None]
            row = [
                c.dataset,
                c.family,
                a.status,
                fmt(a.S),
                "--" if not bounds else fmt(max(bounds)),
                fmt(a.S_seed0),
                fmt(here),
                delta,
                fmt(a.T, 2),
                fmt_pct(a.fidelity),
                f"{fmt_pct(a.accuracy)} ({fmt_pct(a.original_accuracy)})",
            ]
            if b is not None:
                row += [
                    b.status,
                    fmt(b.S),
                    fmt(b.P, 0, "%"),
                    fmt(b.T, 2),
                ]
            row += [
                f"{paper_cell(fipe, 'S')} ({paper_cell(fipe, 'T')} s)" if fipe else "",
                f"{paper_cell(pace, 'S')} ({paper_cell(pace, 'P', '%')}, {paper_cell(pace, 'T')} s)"
                if pace
                else "",
            ]
            rows.append(row)
        return md_table(header, rows)


@dataclass(frozen=True)
class PruningTable:
    """Table (b): generate / prune / PACE on depth-2 ensembles at eta = delta = 0.1."""

    datasets: tuple[str, ...]
    n_estimators: tuple[int, ...]
    family: str = "rf"
    modes: tuple[str, ...] = ("generate", "prune", "pace")
    seeds: tuple[int, ...] = (0,)
    eta: float = 0.1
    delta: float = 0.1
    title: str = "Table 2 (random forests, depth 2, eta=delta=0.1)"

    def cells(self) -> list[Config]:
        return [
            Config(ds, self.family, n, 2, m, self.eta, self.delta, 0)
            for ds in self.datasets
            for n in self.n_estimators
            for m in self.modes
        ]

    def configs(self) -> list[Config]:
        return [replace(c, seed=s) for c in self.cells() for s in self.seeds]

    def render(self, index: Index) -> str:
        header = [
            "dataset",
            "n",
            "mode",
            "status",
            "S",
            "min. here",
            "P",
            "T (s)",
            "fid.",
            "acc. (orig.)",
            "rows kept/dropped",
            "paper S",
            "paper P",
            "paper T (s)",
        ]
        rows = []
        for c in self.cells():
            a = index.agg(c, self.seeds)
            paper = pv.pruning_table(c.family, c.dataset, c.n_estimators, c.mode)
            rows.append(
                [
                    c.dataset,
                    str(c.n_estimators),
                    c.mode,
                    a.status,
                    fmt(a.S),
                    "--" if a.bound is None else fmt(a.bound),
                    "--" if c.mode == "prune" else fmt(a.P, 0, "%"),
                    fmt(a.T, 2),
                    fmt_pct(a.fidelity),
                    f"{fmt_pct(a.accuracy)} ({fmt_pct(a.original_accuracy)})",
                    f"{fmt(a.samples_kept, 0)}/{fmt(a.samples_dropped, 0)}",
                    paper_cell(paper, "S"),
                    paper_cell(paper, "P", "%"),
                    paper_cell(paper, "T"),
                ]
            )
        return md_table(header, rows)


@dataclass(frozen=True)
class RegionsTable:
    """Table (c): size against eta (delta = 0) and delta (eta = 0), RF n=100 depth 2."""

    datasets: tuple[str, ...]
    etas: tuple[float, ...]
    deltas: tuple[float, ...]
    modes: tuple[str, ...] = ("prune", "pace")
    seeds: tuple[int, ...] = (0,)
    title: str = "Regions sweep (random forests, n=100, depth 2)"

    def points(self) -> list[tuple[str, float, float]]:
        return [("eta", e, 0.0) for e in self.etas] + [("delta", 0.0, d) for d in self.deltas]

    def cells(self) -> list[Config]:
        return [
            Config(ds, "rf", 100, 2, m, eta, delta, 0)
            for ds in self.datasets
            for _, eta, delta in self.points()
            for m in self.modes
        ]

    def configs(self) -> list[Config]:
        seen: dict[str, Config] = {}  # eta=delta=0 belongs to both sweeps: run it once
        for c in self.cells():
            for s in self.seeds:
                seen.setdefault(replace(c, seed=s).key, replace(c, seed=s))
        return list(seen.values())

    def render(self, index: Index) -> str:
        header = ["dataset", "sweep", "eta", "delta"]
        for m in self.modes:
            header += [f"{m} status", f"{m} S", f"{m} T (s)", f"{m} fid.", f"paper {m} S"]
        header.append("rows kept/dropped")
        rows = []
        for ds in self.datasets:
            for sweep, eta, delta in self.points():
                row = [ds, sweep, f"{eta:g}", f"{delta:g}"]
                kept = ""
                for m in self.modes:
                    a = index.agg(Config(ds, "rf", 100, 2, m, eta, delta, 0), self.seeds)
                    ref = pv.region_reference(ds, m, eta, delta)
                    row += [
                        a.status,
                        fmt(a.S),
                        fmt(a.T, 2),
                        fmt_pct(a.fidelity),
                        str(ref.S) if ref else "",
                    ]
                    kept = kept or (
                        f"{fmt(a.samples_kept, 0)}/{fmt(a.samples_dropped, 0)}"
                        if a.runs and a.samples_kept is not None
                        else ""
                    )
                rows.append([*row, kept])
        notes = "\n".join(
            f"- {r.dataset} {r.mode} eta={r.eta:g} delta={r.delta:g}: paper {r.S} ({r.note})"
            for r in pv.REGIONS_RF
        )
        notes += "\n" + "\n".join(f"- {n}" for n in pv.REGIONS_NOTES)
        return md_table(header, rows) + "\n\nPaper references (from the text, no table):\n" + notes


TableSpec = FipeTable | PruningTable | RegionsTable


# ------------------------------------------------------------------------- profiles


@dataclass(frozen=True)
class Profile:
    name: str
    tables: tuple[TableSpec, ...]
    time_limit: float | None  # per configuration, seconds
    budget: float | None  # whole run, seconds: later configurations get less (quick only)
    resume: bool  # skip configurations whose row already exists
    description: str = ""

    def configs(self) -> list[Config]:
        """Every configuration once, cheap modes first (prune, then generate, then pace)."""
        unique: dict[str, Config] = {}
        for t in self.tables:
            for c in t.configs():
                unique.setdefault(c.key, c)
        order = {m: i for i, m in enumerate(MODES)}
        return sorted(unique.values(), key=lambda c: order[c.mode])


def make_profile(name: str) -> Profile:
    if name == "quick":
        return Profile(
            "quick",
            (
                FipeTable(("cancer", "compas", "seeds")),
                PruningTable(("compas", "cancer"), (25,)),
                RegionsTable(("compas",), (0.0, 0.1), (0.0, 0.1)),
            ),
            time_limit=300.0,
            budget=630.0,
            resume=False,
            description="seed 0; slices of tables (a), (b), (c); at most 300 s per "
            "configuration and 630 s of wall time in all, shared evenly "
            "by the configurations still to run (prune first); then one oracle "
            f"comparison (oracle_compare.py --quick, {ORACLE_BUDGET:.0f} s budget)",
        )
    if name == "fipe":
        return Profile(
            "fipe",
            (FipeTable(zoo.DATASETS, modes=("prune", "pace")),),
            time_limit=900.0,
            budget=None,
            resume=True,
            description="seed 0; table (a) on all six datasets: prune-only vs FIPE, PACE vs the "
            "paper's PACE column; "
            "900 s per configuration; resumable",
        )
    if name == "table2":
        return Profile(
            "table2",
            (PruningTable(zoo.DATASETS, (25, 50, 100)),),
            time_limit=600.0,
            budget=None,
            resume=True,
            description="seed 0; table (b): RF depth 2, eta=delta=0.1, n in {25, 50, 100}, "
            "generate / prune / pace on all six datasets; 600 s per configuration; resumable",
        )
    if name == "regions":
        return Profile(
            "regions",
            (RegionsTable(("compas", "fico"), (0.0, 0.05, 0.1, 0.2), (0.0, 0.1, 0.2, 0.4)),),
            time_limit=900.0,
            budget=None,
            resume=True,
            description="seed 0; table (c): RF n=100 d=2 on compas and fico, eta and delta "
            "sweeps, prune and pace; 900 s per configuration; resumable",
        )
    if name == "full":
        seeds = tuple(range(5))
        return Profile(
            "full",
            (
                FipeTable(zoo.DATASETS, seeds=seeds, modes=("prune", "pace")),
                PruningTable(zoo.DATASETS, (25, 50, 100), seeds=seeds),
                RegionsTable(
                    ("compas", "fico"), (0.0, 0.05, 0.1, 0.2), (0.0, 0.1, 0.2, 0.4), seeds=seeds
                ),
            ),
            time_limit=3600.0,
            budget=None,
            resume=True,
            description="seeds 0-4 (means over seeds); all of tables (a), (b), (c); "
            "3600 s per configuration; resumable",
        )
    raise ValueError(f"unknown profile {name!r} (quick, fipe, table2, regions, full)")


# ------------------------------------------------------------------------ csv / md io


def read_results(path: Path) -> dict[str, Result]:
    """Rows of an existing CSV by key; a later row for the same key wins."""
    if not path.exists():
        return {}
    with open(path, newline="") as f:
        return {row["key"]: Result.from_row(row) for row in csv.DictReader(f)}


def append_result(path: Path, result: Result) -> None:
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[fl.name for fl in fields(Result)])
        if new:
            writer.writeheader()
        writer.writerow(result.to_row())
        f.flush()
        os.fsync(f.fileno())


# ---------------------------------------------- lower-bound benchmarks (*_bound.py)


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
        write_atomic(out, text)
    print(text)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_results(path: Path, results: Iterable[Result]) -> None:
    """Rewrite the CSV with one row per key (compacts rows replaced by reruns)."""
    header = [fl.name for fl in fields(Result)]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        for r in results:
            writer.writerow(r.to_row())
    os.replace(tmp, path)


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
        ("pace_cert git", git_revision(Path(__file__).resolve().parents[1])),
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
        f"- date (UTC): started {stats.started}, written {_now()}"
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
        "`not-implemented`: this pace_cert build lacks the mode (no pace_cert.pricing, or "
        'NotImplementedError). "(time limit)": the run stopped at its time limit, so S is '
        "the best fully certified ensemble found by then, not a converged result. "
        "`min. here` = the certificate's size_lower_bound (in table (a) the larger of the "
        "prune and PACE rows'): no faithful model of fewer trees of the original's depth "
        "exists in our region (boundary witnesses, any mode, re-checked by verify; for "
        "depth <= 2, pace's synthesis phase, a CP-SAT proof; -- when neither gave a "
        "bound); S equal to it is minimal.",
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


# ------------------------------------------------------------------------- the driver


def select(configs: list[Config], only: str | None) -> list[Config]:
    if not only:
        return configs
    pattern = re.compile(only)
    return [c for c in configs if pattern.search(c.key)]


def config_time_limit(
    profile: Profile, override: float | None, budget_left: float | None, remaining: int
) -> float | None:
    """Per-configuration limit; under a budget, a fair share of what is left.

    Configurations run cheap modes first, so the fast prune runs leave most of the budget
    to the slower generate / pace runs, which then split it evenly.
    """
    limit = profile.time_limit if override is None else (override or None)
    if budget_left is None:
        return limit
    share = budget_left / max(remaining, 1)
    return share if limit is None else min(limit, share)


def run_profile(
    profile: Profile,
    out_dir: Path,
    only: str | None,
    time_limit: float | None,
    threads: int,
    verbose: bool,
    stats: RunStats,
) -> dict[str, Result]:
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / f"{profile.name}.csv"
    results = read_results(csv_path)
    todo = select(profile.configs(), only)
    stats.filtered = len(profile.configs()) - len(todo)
    t0 = time.perf_counter()
    for i, cfg in enumerate(todo, 1):
        old = results.get(cfg.key)
        if profile.resume and old is not None and old.status in DONE_STATUSES:
            stats.reused += 1
            continue
        budget_left = (
            None if profile.budget is None else profile.budget - (time.perf_counter() - t0)
        )
        if budget_left is not None and budget_left < 5:
            stats.over_budget.append(cfg.key)
            continue
        limit = config_time_limit(profile, time_limit, budget_left, len(todo) - i + 1)
        limit = None if limit is None else round(limit, 1)
        progress = (lambda m: print(f"    {m}", flush=True)) if verbose else None
        result = run_config(cfg, limit, threads, progress)
        append_result(csv_path, result)
        results[cfg.key] = result
        stats.ran += 1
        print(
            f"[{i}/{len(todo)}] {cfg.key}: {result.status} S={fmt(result.S)} "
            f"T={fmt(result.T, 2)} fid={fmt_pct(result.fidelity)} {result.error}",
            flush=True,
        )
    write_results(csv_path, results.values())
    return results


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("profile", choices=("quick", "fipe", "table2", "regions", "full"))
    p.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="results directory (default: benchmarks/results)",
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
    return p.parse_args(argv)


def run_and_report(profile: Profile, args: argparse.Namespace, command: str) -> int:
    """Run the profile, then write the CSV, the run record and the md."""
    stats = RunStats(command=command, started=_now(), machine=machine_info())
    if args.fresh:
        (args.out / f"{profile.name}.csv").unlink(missing_ok=True)
    t0 = time.perf_counter()
    results = run_profile(
        profile, args.out, args.only, args.time_limit, args.threads, args.verbose, stats
    )
    stats.wall_seconds = time.perf_counter() - t0
    stats.peak_rss_mb = peak_rss_mb()
    save_stats(args.out / f"{profile.name}.run.json", stats)
    md_path = args.out / f"{profile.name}.md"
    report = render_report(profile, results, stats)
    if profile.name == "quick" and not args.only:  # one oracle comparison, last
        import oracle_compare

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


# seconds for the quick profile's oracle comparison; with the 630 s harness budget and
# the install, make bench-quick takes about 17 min of its 20 (benchmarks/README.md)
ORACLE_BUDGET = 300.0


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
    command = shlex.join(
        ["python", "benchmarks/harness.py", *(sys.argv[1:] if argv is None else argv)]
    )
    if args.report_only:
        return report_only(profile, args, command)
    return run_and_report(profile, args, command)


if __name__ == "__main__":
    sys.exit(main())
