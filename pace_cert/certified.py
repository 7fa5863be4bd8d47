"""The library's result: a certified model you can predict with, save, verify and show.

:class:`CertifiedModel` holds the files a ``compress`` run commits (the compressed
model, the certificate, the plausibility artifact) as bytes, with the original's
bytes: ``predict`` runs the compressed model in onnxruntime, ``save`` writes the
directory ``pace-cert verify`` checks, ``report`` the HTML page, and in a notebook it
shows its :class:`ResultSummary` (sizes before and after, in every unit the
certificate's summary states).
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from pace_cert.errors import InputError

if TYPE_CHECKING:
    import onnx

    from pace_cert.app import CompressOutcome
    from pace_cert.cert.certificate import Certificate
    from pace_cert.estimate import Estimate

ORIGINAL = "original.onnx"
COMPRESSED = "compressed.onnx"
CERTIFICATE = "certificate.json"
#: the summary facts shown after the sizes, in this order (the rest stay in ``facts``)
SHOWN_FACTS = (
    "fidelity",
    "accuracy_original",
    "accuracy_compressed",
    "new_learner_share",
    "size_lower_bound",
    "leaves_lower_bound",
    "phase",
    "seconds",
    "stop_reason",
)


@dataclass(frozen=True, eq=False)
class ResultSummary(Mapping[str, Any]):
    """A certificate's summary as a read-only mapping (``summary["trees"] == (8, 2)``,
    ``keys()``, ``items()``, ``get``, ``in``, ``len``): ``status``, ``certified``, each
    size by its unit, then each fact. ``sizes``: unit -> (before, after), from every
    ``<unit>_before`` / ``<unit>_after`` pair of ``certificate.summary`` (trees, leaves,
    ... and any unit a later certificate adds), the deployment sizes of
    ``summary.deployment`` (internal nodes, maximum depth, mean comparisons, ONNX bytes,
    onnxruntime latency in microseconds), and the maximum depth of the two models;
    ``facts``: the summary's other values (fidelity, accuracy, lower bound, seconds,
    ...), a group of the summary (``pruning_bound``, ``single_tree``, ``deployment``'s
    other fields) as a nested mapping of its own, and ``estimate`` (the free-pattern
    floor, when known). Lists (points, cuts, witnesses, L1 values) stay in the
    certificate. Nothing in it is writable."""

    status: str
    certified: bool
    sizes: Mapping[str, tuple[Any, Any]]
    facts: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", MappingProxyType(dict(self.sizes)))
        object.__setattr__(self, "facts", _frozen(dict(self.facts)))

    @classmethod
    def of(cls, cert: Certificate, estimate: Estimate | None = None) -> ResultSummary:
        values = cert.summary.model_dump()
        sizes: dict[str, tuple[Any, Any]] = {}
        for key in values:
            if key.endswith("_before") and key[: -len("_before")] + "_after" in values:
                unit = key[: -len("_before")]
                sizes[unit] = (values[key], values[unit + "_after"])
        deployment = values.get("deployment")
        if isinstance(deployment, dict):  # summary.deployment (schema 1.7)
            before, after = deployment.pop("before", {}), deployment.pop("after", {})
            for unit in before:
                if unit not in sizes and unit in after:
                    sizes[unit] = (before[unit], after[unit])
        if not any("depth" in unit for unit in sizes):
            sizes["max_depth"] = (cert.original.max_depth, cert.compressed.max_depth)
        paired = {f"{u}_before" for u in sizes} | {f"{u}_after" for u in sizes}
        facts = {
            k: v
            for k, v in values.items()
            if k not in paired and k not in ("status", "certified") and _kept(v)
        }
        if facts.get("mode") == "tree":  # a bound on prunings, not on one deeper tree
            facts.pop("size_lower_bound", None)
        if estimate is not None:
            facts["estimate"] = dataclasses.asdict(estimate)
        return cls(cert.summary.status, cert.summary.certified, sizes, facts)

    # the mapping
    @cached_property
    def _all(self) -> Mapping[str, Any]:
        head = {"status": self.status, "certified": self.certified}
        return MappingProxyType({**head, **self.sizes, **self.facts})

    def __getitem__(self, key: str) -> Any:
        return self._all[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    # as text
    def rows(self) -> list[tuple[str, str, str]]:
        """(unit, before, after) for each size."""
        return [(u.replace("_", " "), _fmt(b), _fmt(a)) for u, (b, a) in self.sizes.items()]

    def shown_facts(self, leave_out: tuple[str, ...] = ()) -> list[tuple[str, str]]:
        """(fact, value) for the facts shown, in :data:`SHOWN_FACTS` order; a fact with
        no value (None, an empty text) is not shown."""
        return [
            (k.replace("_", " "), _fmt(self.facts[k]))
            for k in SHOWN_FACTS
            if k not in leave_out and self.facts.get(k) not in (None, "")
        ]

    def table(self, leave_out: tuple[str, ...] = ()) -> list[str]:
        """The sizes before and after as a table, then the facts shown, one a line."""
        rows = [("", "before", "after"), *self.rows()]
        w = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [f"  {a:<{w[0]}}  {b:>{w[1]}}  {c:>{w[2]}}".rstrip() for a, b, c in rows]
        return lines + [f"  {k}: {v}" for k, v in self.shown_facts(leave_out)]

    def __repr__(self) -> str:
        """The mapping view: the status, each size by its key (before, after), then
        every fact with a value by its key, groups nested."""
        rows = [("", "before", "after")]
        rows += [(u, _fmt(b), _fmt(a)) for u, (b, a) in self.sizes.items()]
        w = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [
            f"ResultSummary: a read-only mapping of {len(self)} keys "
            f"(status: {self.status}, certified: {self.certified})"
        ]
        lines += [f"  {a:<{w[0]}}  {b:>{w[1]}}  {c:>{w[2]}}".rstrip() for a, b, c in rows]
        lines += [f"  {k}: {_shown(v)}" for k, v in self.facts.items() if v not in (None, "")]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return f"<p><b>{html.escape(self.status)}</b></p>{self.table_html()}"

    def table_html(self, leave_out: tuple[str, ...] = ()) -> str:
        e = html.escape
        head = "<tr><th></th><th>before</th><th>after</th></tr>"
        body = "".join(
            f"<tr><td>{e(a)}</td><td>{e(b)}</td><td>{e(c)}</td></tr>" for a, b, c in self.rows()
        )
        facts = "".join(f"<li>{e(k)}: {e(v)}</li>" for k, v in self.shown_facts(leave_out))
        return f"<table>{head}{body}</table><ul>{facts}</ul>"


def _kept(v: Any) -> bool:
    """Whether a summary value goes into the facts: a plain value, or a group."""
    return _plain(v) or isinstance(v, dict)


def _frozen(d: dict[str, Any]) -> Mapping[str, Any]:
    """``d`` read-only, its groups nested read-only mappings of their plain values."""
    return MappingProxyType(
        {k: _frozen(v) if isinstance(v, dict) else v for k, v in d.items() if _kept(v)}
    )


def _plain(v: Any) -> bool:
    return v is None or isinstance(v, bool | int | float | str)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "-" if v is None else str(v)


def _shown(v: Any) -> str:
    """A mapping value as text: a group as ``{key: value, ...}``, values formatted."""
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{k}: {_shown(x)}" for k, x in v.items()) + "}"
    if isinstance(v, tuple):
        return "(" + ", ".join(_shown(x) for x in v) + ")"
    return _fmt(v)


@dataclass(frozen=True, eq=False)
class CertifiedModel:
    """A compressed model and its certificate, as ``compress`` wrote them.

    ``exit_code``: 0 a smaller model was certified; 2 nothing smaller was (the
    compressed model is the original's bytes, the certificate inconclusive), as the
    CLI's exit codes. ``interrupted``: a KeyboardInterrupt ended the run (the result is
    the best certified model committed before it). ``files``: the file set by name
    (``compressed.onnx``, ``certificate.json``, the plausibility artifact);
    ``original``: the original model's bytes, exactly those certified;
    ``original_in_memory``: it came as an estimator, ModelProto or bytes (``save``
    writes it as ``original.onnx`` then); ``node_rows``: training rows per node of a
    one-tree compressed model (for :meth:`to_sklearn`); ``estimate``: the free-pattern
    floor the run computed before the work (:mod:`pace_cert.estimate`; None in mode
    tree, whose single tree it says nothing about); ``time_limit``: the run's, in
    seconds (None: none, or not known); ``found``: trees of the smallest model the run
    certified even when not smaller than the original (None: none, or not known)."""

    files: dict[str, bytes]
    original: bytes
    exit_code: int
    original_in_memory: bool = True
    interrupted: bool = False
    node_rows: np.ndarray | None = None
    estimate: Estimate | None = None
    time_limit: float | None = None
    found: int | None = None

    # ------------------------------------------------------------------ reading
    @classmethod
    def load(cls, path: str | Path, original: bytes | None = None) -> CertifiedModel:
        """The result saved in directory ``path`` (:meth:`save`, or ``compress --out``);
        the original's bytes are ``original``, else ``original.onnx`` there, else the
        file the certificate names."""
        d = Path(path)
        from pace_cert.cert.certificate_file import check_json
        from pace_cert.cert.verify import load_certificate

        if not d.is_dir():
            raise InputError(d, "not a directory: give the folder compress --out or save() wrote")
        for name in (CERTIFICATE, COMPRESSED):
            if not (d / name).is_file():
                raise InputError(d, f"holds no {name}: not a folder compress --out or save() wrote")
        check_json(d / CERTIFICATE)
        cert = load_certificate(d / CERTIFICATE)
        files = {CERTIFICATE: (d / CERTIFICATE).read_bytes(), COMPRESSED: _read(d / COMPRESSED)}
        if cert.region.plausibility is not None:
            name = Path(cert.region.plausibility.path).name
            files[name] = _read(d / name)
        if original is None:
            original = _original_of(d, cert.original.path)
        estimate = _estimate_of(original, cert)
        return cls(files, original, 0 if cert.summary.certified else 2, estimate=estimate)

    @cached_property
    def certificate(self) -> Certificate:
        """The certificate (pydantic), as written to ``certificate.json``."""
        from pace_cert.cert.certificate import Certificate

        return Certificate.model_validate_json(self.files[CERTIFICATE])

    @cached_property
    def onnx(self) -> onnx.ModelProto:
        """The compressed model."""
        import onnx

        return onnx.load_from_string(self.files[COMPRESSED])

    @property
    def onnx_bytes(self) -> bytes:
        return self.files[COMPRESSED]

    @property
    def certified(self) -> bool:
        """A smaller model was certified faithful in the region (exit code 0)."""
        return self.certificate.summary.certified

    @property
    def summary(self) -> ResultSummary:
        """The certificate's summary as a read-only mapping (:class:`ResultSummary`)."""
        return ResultSummary.of(self.certificate, self.estimate)

    @property
    def outcome(self) -> CompressOutcome:
        """How the run ended, as the CLI reads it (:func:`pace_cert.outcome_words.outcome_of`)."""
        from pace_cert.outcome_words import outcome_of

        return outcome_of(self.certificate, self.found, self.estimate)

    @property
    def feature_names(self) -> list[str] | None:
        data = self.certificate.data
        return None if data is None else data.feature_names

    @property
    def _matched_names(self) -> list[str] | None:
        """The names data is matched to (by name, exactly), when the run matched its
        columns by name; None: by position."""
        data = self.certificate.data
        by_name = data is not None and data.columns_matched_by == "name"
        return data.feature_names if by_name and data is not None else None

    # --------------------------------------------------------------- predicting
    @cached_property
    def _session(self) -> Any:
        from pace_cert.model.runtime import session

        return session(self.files[COMPRESSED])

    def predict(self, X: Any) -> np.ndarray:
        """The compressed model's labels (onnxruntime) for the rows of ``X``: a
        DataFrame (its columns named as the training data's are taken in that order,
        else all in order) or an array; values as float32, as the model reads them."""
        from pace_cert.model.runtime import labels

        return labels(self._session, _features(X, self._matched_names))

    # ------------------------------------------------------------------ writing
    def save(self, path: str | Path, original: bool | None = None) -> Path:
        """Write what ``compress --out`` writes into directory ``path`` (created if
        missing): compressed.onnx, certificate.json, the plausibility artifact; and the
        original as original.onnx, the bytes certified, when it came in memory (or
        ``original=True``), so ``pace-cert verify DIR/original.onnx
        DIR/compressed.onnx DIR/certificate.json`` checks it. One atomic set, the
        certificate last. Returns ``path``."""
        from pace_cert.app import prepare_out_dir
        from pace_cert.plumbing.outputs import Committed, OutputDir

        d = Path(path)
        prepare_out_dir(d)
        keep = self.original_in_memory if original is None else original
        files = {ORIGINAL: self.original} if keep else {}
        files.update({k: v for k, v in self.files.items() if k != CERTIFICATE})
        files[CERTIFICATE] = self.files[CERTIFICATE]
        try:
            OutputDir(d).commit(files, Committed(self.exit_code, "saved"))
        except OSError as e:
            raise InputError(d, f"cannot write ({e.strerror or e})") from None
        return d

    def report(self, path: str | Path) -> Path:
        """Write the HTML report of the certificate (``pace-cert report``) to ``path``."""
        from pace_cert.plumbing.outputs import write_atomic
        from pace_cert.report import render

        out = Path(path)
        if out.is_dir():
            raise InputError(out, "is a directory, expected an HTML file name")
        try:
            write_atomic(out, render(self.certificate, CERTIFICATE).encode())
        except OSError as e:
            raise InputError(out, f"cannot write the report ({e.strerror or e})") from None
        return out

    # --------------------------------------------------------------- one tree
    def to_sklearn(self) -> Any:
        """The compressed model as an equivalent fitted scikit-learn
        ``DecisionTreeClassifier`` (same label as onnxruntime on every non-NaN
        input), when it is one tree: for ``sklearn.tree.export_text`` and
        ``plot_tree``. Leaf values are one-hot; samples count the training rows."""
        from pace_cert.model.sklearn_tree import decision_tree_of

        data = self.certificate.data
        named = data is not None and data.feature_names is not None and data.path != "<ndarray>"
        names = data.feature_names if named and data is not None else None
        return decision_tree_of(self.files[COMPRESSED], self.node_rows, names)

    # ---------------------------------------------------------------- showing
    def headline(self) -> list[str]:
        """The lines the result opens with: the verdict and the sizes, the region (eta,
        delta, mode) and the share of the data rows inside it, what ``coverage`` came to
        when it was asked; for a run that certified
        nothing smaller, the CLI's ``why:`` and ``try:``; the free-pattern estimate and
        where the result lies against it; how the run stopped."""
        from pace_cert.cert.words import tree_lines
        from pace_cert.estimate import placement, recorded_room_line
        from pace_cert.outcome_words import (
            Asked,
            asked_coverage_lines,
            stop_lines,
            unchanged_lines,
        )

        cert, res = self.certificate, self.outcome
        s, reg = cert.summary, cert.region
        verdict = "certified" if s.certified else "inconclusive, nothing smaller certified"
        if self.interrupted:
            verdict += " (interrupted: the best certified model so far)" if s.certified else ""
            verdict += "" if s.certified else " (interrupted)"
        lines = [
            f"{verdict}: trees {s.trees_before} -> {s.trees_after}, "
            f"leaves {s.leaves_before} -> {s.leaves_after}",
            f"region: eta {reg.eta:g} ({reg.eta_units}), delta {reg.delta:g}, mode {s.mode}; "
            + _inside(reg.coverage),
            *asked_coverage_lines(cert),
        ]
        lines += unchanged_lines(res, Asked.of(cert, self.time_limit))
        lines += tree_lines(cert)  # mode tree: the tree, its bound, or the fallback
        if self.estimate is not None:
            pb = s.pruning_bound.value if s.pruning_bound is not None else None
            lines.append(self.estimate.line())
            lines.append(placement(s.trees_after if s.certified else None, pb, self.estimate))
        if room := recorded_room_line(cert):  # the floor table: the asked region's room
            lines.append(room)
        return lines + stop_lines(res)

    def __repr__(self) -> str:
        head = self.headline()
        table = self.summary.table(leave_out=("stop_reason",))
        return "\n".join([f"CertifiedModel: {head[0]}", *head[1:], *table])

    __str__ = __repr__

    def _repr_html_(self) -> str:
        head = self.headline()
        first = html.escape(head[0])
        rest = "".join(f"<li>{html.escape(line)}</li>" for line in head[1:])
        table = self.summary.table_html(leave_out=("stop_reason",))
        return f"<div><p><b>CertifiedModel: {first}</b></p><ul>{rest}</ul>{table}</div>"


def _inside(cov: Any) -> str:
    """The share of the data rows inside the region, in words."""
    if cov is None:
        return "data rows inside the region not recorded (an older certificate)"
    share = cov.inside / cov.rows if cov.rows else 0.0
    return f"{cov.inside} of {cov.rows} data rows inside the region ({share:.1%})"


def _estimate_of(original: bytes, cert: Certificate) -> Estimate | None:
    """The free-pattern floor of the original at the certificate's eta, as compress
    computes it (None in mode tree, or when the bytes are not a model it reads)."""
    if cert.summary.mode == "tree":
        return None
    import onnx

    from pace_cert.estimate import free_pattern_estimate
    from pace_cert.model.onnx_graph import UnsupportedModel
    from pace_cert.model.onnx_reader import ensemble_from_model

    try:
        ens, _ = ensemble_from_model(onnx.load_from_string(original))
    except (UnsupportedModel, onnx.onnx_cpp2py_export.checker.ValidationError, ValueError):
        return None
    return free_pattern_estimate(ens, cert.region.eta)


def _original_of(d: Path, named: str) -> bytes:
    """The original's bytes for a folder ``d``: its original.onnx, else the file the
    certificate names (``named``, as given to compress); InputError naming the folder
    and what to do when neither is there."""
    for at in (d / ORIGINAL, Path(named)):
        if at.is_file():
            return _read(at)
    raise InputError(
        d,
        f"holds no {ORIGINAL} and the original the certificate names ({named}) is not a "
        "file: pass its bytes, CertifiedModel.load(folder, original=...), or copy it there "
        f"as {ORIGINAL}",
    )


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except OSError as e:
        raise InputError(path, f"cannot read file ({e.strerror})") from None


def _features(X: Any, names: list[str] | None) -> np.ndarray:
    """float32 [n, d] from a DataFrame (its columns matched to ``names`` by name,
    exactly, when given: InputError naming the columns otherwise; else in order) or an
    array (by position)."""
    if type(X).__module__.split(".")[0] == "pandas" and hasattr(X, "columns"):
        from pace_cert.data import ColumnMismatch, column_order

        if names is not None:
            try:
                X = X.iloc[:, column_order([str(c) for c in X.columns], names)]
            except ColumnMismatch as e:
                raise InputError("<DataFrame>", str(e)) from None
        X = X.to_numpy(dtype=np.float64, na_value=np.nan)
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    return arr.astype(np.float32)
