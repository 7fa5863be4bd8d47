"""The library's result: a certified model you can predict with, save, verify and show.

:class:`CertifiedModel` holds the files a ``compress`` run commits (the compressed
model, the certificate, the plausibility artifact) as bytes, with the original's
bytes: ``predict`` runs the compressed model in onnxruntime, ``save`` writes the
directory ``pace-cert verify`` checks, ``report`` the HTML page, and in a notebook it
shows its :class:`ResultSummary` (sizes before and after, in every unit the
certificate's summary states).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pace_cert.errors import InputError

if TYPE_CHECKING:
    import onnx

    from pace_cert.cert.certificate import Certificate

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


@dataclass(frozen=True)
class ResultSummary:
    """A certificate's summary as a table. ``sizes``: unit -> (before, after), from
    every ``<unit>_before`` / ``<unit>_after`` pair of ``certificate.summary`` (trees,
    leaves, ... and any unit a later certificate adds), the deployment sizes of
    ``summary.deployment`` (internal nodes, maximum depth, mean comparisons, ONNX bytes,
    onnxruntime latency in microseconds), and the maximum depth of the two models;
    ``facts``: the summary's other plain values (fidelity, accuracy, lower bound,
    seconds, ...)."""

    status: str
    certified: bool
    sizes: dict[str, tuple[Any, Any]]
    facts: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, cert: Certificate) -> ResultSummary:
        s = cert.summary
        values = _flat(s.model_dump())
        sizes: dict[str, tuple[Any, Any]] = {}
        for key in values:
            if key.endswith("_before") and key[: -len("_before")] + "_after" in values:
                unit = key[: -len("_before")]
                sizes[unit] = (values[key], values[unit + "_after"])
        deployed = values.pop("before", None), values.pop("after", None)
        if all(isinstance(d, dict) for d in deployed):  # summary.deployment (schema 1.7)
            for unit in deployed[0]:
                if unit not in sizes and unit in deployed[1]:
                    sizes[unit] = (deployed[0][unit], deployed[1][unit])
        if not any("depth" in unit for unit in sizes):
            sizes["max_depth"] = (cert.original.max_depth, cert.compressed.max_depth)
        paired = {f"{u}_before" for u in sizes} | {f"{u}_after" for u in sizes}
        facts = {
            k: v
            for k, v in values.items()
            if k not in paired and k not in ("status", "certified") and _plain(v)
        }
        if facts.get("mode") == "tree":  # a bound on prunings, not on one deeper tree
            facts.pop("size_lower_bound", None)
        return cls(s.status, s.certified, sizes, facts)

    def __getitem__(self, unit: str) -> tuple[Any, Any]:
        return self.sizes[unit]

    def rows(self) -> list[tuple[str, str, str]]:
        """(unit, before, after) for each size."""
        return [(u.replace("_", " "), _fmt(b), _fmt(a)) for u, (b, a) in self.sizes.items()]

    def shown_facts(self) -> list[tuple[str, str]]:
        """(fact, value) for the facts shown, in :data:`SHOWN_FACTS` order."""
        return [
            (k.replace("_", " "), _fmt(self.facts[k]))
            for k in SHOWN_FACTS
            if self.facts.get(k) is not None
        ]

    def __repr__(self) -> str:
        rows = [("", "before", "after"), *self.rows()]
        w = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [self.status]
        lines += [f"  {a:<{w[0]}}  {b:>{w[1]}}  {c:>{w[2]}}".rstrip() for a, b, c in rows]
        lines += [f"  {k}: {v}" for k, v in self.shown_facts()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        e = html.escape
        head = "<tr><th></th><th>before</th><th>after</th></tr>"
        body = "".join(
            f"<tr><td>{e(a)}</td><td>{e(b)}</td><td>{e(c)}</td></tr>" for a, b, c in self.rows()
        )
        facts = "".join(f"<li>{e(k)}: {e(v)}</li>" for k, v in self.shown_facts())
        return f"<p><b>{e(self.status)}</b></p><table>{head}{body}</table><ul>{facts}</ul>"


def _flat(d: dict, prefix: str = "") -> dict[str, Any]:
    """Nested summary groups flattened one level (``{"deploy": {"bytes_before": 1}}``
    gives ``bytes_before``)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and not prefix:
            out.update(_flat(v, prefix=k))
        else:
            out[k] = v
    return out


def _plain(v: Any) -> bool:
    return v is None or isinstance(v, bool | int | float | str)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "-" if v is None else str(v)


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
    one-tree compressed model (for :meth:`to_sklearn`)."""

    files: dict[str, bytes]
    original: bytes
    exit_code: int
    original_in_memory: bool = True
    interrupted: bool = False
    node_rows: np.ndarray | None = None

    # ------------------------------------------------------------------ reading
    @classmethod
    def load(cls, path: str | Path, original: bytes | None = None) -> CertifiedModel:
        """The result saved in directory ``path`` (:meth:`save`, or ``compress --out``);
        the original's bytes are ``original``, else ``original.onnx`` there, else the
        file the certificate names."""
        d = Path(path)
        from pace_cert.cert.verify import load_certificate

        cert = load_certificate(d / CERTIFICATE)
        files = {CERTIFICATE: (d / CERTIFICATE).read_bytes(), COMPRESSED: _read(d / COMPRESSED)}
        if cert.region.plausibility is not None:
            name = Path(cert.region.plausibility.path).name
            files[name] = _read(d / name)
        if original is None:
            at = d / ORIGINAL if (d / ORIGINAL).is_file() else Path(cert.original.path)
            original = _read(at)
        return cls(files, original, 0 if cert.summary.certified else 2)

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
        return ResultSummary.of(self.certificate)

    @property
    def feature_names(self) -> list[str] | None:
        data = self.certificate.data
        return None if data is None else data.feature_names

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

        return labels(self._session, _features(X, self.feature_names))

    # ------------------------------------------------------------------ writing
    def save(self, path: str | Path, original: bool | None = None) -> Path:
        """Write what ``compress --out`` writes into directory ``path`` (created if
        missing): compressed.onnx, certificate.json, the plausibility artifact; and the
        original as original.onnx, the bytes certified, when it came in memory (or
        ``original=True``), so ``pace-cert verify DIR/original.onnx
        DIR/compressed.onnx DIR/certificate.json`` checks it. One atomic set, the
        certificate last. Returns ``path``."""
        from pace_cert.app import prepare_out_dir
        from pace_cert.outputs import Committed, OutputDir

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
        from pace_cert.outputs import write_atomic
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
        from pace_cert.sklearn_tree import decision_tree_of

        data = self.certificate.data
        named = data is not None and data.feature_names is not None and data.path != "<ndarray>"
        names = data.feature_names if named and data is not None else None
        return decision_tree_of(self.files[COMPRESSED], self.node_rows, names)

    # ---------------------------------------------------------------- showing
    def __repr__(self) -> str:
        note = " (interrupted: the best certified model so far)" if self.interrupted else ""
        return f"CertifiedModel{note}\n{self.summary!r}"

    def _repr_html_(self) -> str:
        note = "<p>interrupted: the best certified model so far</p>" if self.interrupted else ""
        return f"<div><b>CertifiedModel</b>{note}{self.summary._repr_html_()}</div>"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except OSError as e:
        raise InputError(path, f"cannot read file ({e.strerror})") from None


def _features(X: Any, names: list[str] | None) -> np.ndarray:
    """float32 [n, d] from a DataFrame (``names`` selected when it has them all) or an
    array."""
    if type(X).__module__.split(".")[0] == "pandas" and hasattr(X, "columns"):
        cols = [str(c) for c in X.columns]
        if names is not None and set(names) <= set(cols):
            X = X.iloc[:, [cols.index(c) for c in names]]
        X = X.to_numpy(dtype=np.float64, na_value=np.nan)
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    return arr.astype(np.float32)
