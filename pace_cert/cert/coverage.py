"""Where data rows lie with respect to a certificate's region (``region.coverage``).

compress counts its training rows when it writes the certificate; ``verify --data`` counts
them again from the two ONNX files and the plausibility artifact when it is given the
same file (same SHA-256). Each row is counted once, in the first class that applies:

0. missing values: a feature is NaN (an empty cell of the CSV); NaN is excluded from
   every region, so these rows are outside every proof;
1. outside the stated feature domain;
2. the tie band: the original's own margin is at most its runtime guard (the float32
   noise floor of its scores), where onnxruntime's label of the original is not
   determined by the exact scores; no region covers these rows, eta = 0 included;
3. low confidence: margin above the guard but at most the region's margin threshold c_o;
4. implausible: margin above c_o, plausibility score below delta_abs;
5. inside the region.
"""

from __future__ import annotations

import numpy as np

from pace_cert.cert.certificate import Coverage
from pace_cert.model.ensemble import Ensemble
from pace_cert.region.masks import margin_mask, plausibility_mask


def coverage(original: Ensemble, X: np.ndarray, c_o: float, forest, domain) -> Coverage:
    """The coverage of rows ``X`` (float32) by the region of ``original`` with margin
    threshold ``c_o``, plausibility forest ``forest`` (None: delta = 0) and ``domain``."""
    m = region_masks(original, X, c_o, forest, domain)
    return Coverage(
        rows=len(m["inside"]),
        inside=int(m["inside"].sum()),
        missing=int(m["missing"].sum()),
        outside_domain=int((~m["in_domain"] & ~m["missing"]).sum()),
        tie_band=int(m["tie"].sum()),
        low_confidence=int(m["low"].sum()),
        implausible=int(m["implausible"].sum()),
    )


def region_masks(
    original: Ensemble, X: np.ndarray, c_o: float, forest, domain
) -> dict[str, np.ndarray]:
    """Per row of ``X``, boolean masks (as :func:`coverage` counts them): ``inside`` the
    region, ``missing`` (a NaN), ``in_domain``, ``tie`` (float32 tie band), ``low``
    (margin within c_o), ``implausible``."""
    X = np.asarray(X, np.float32)
    n = len(X)
    missing = np.isnan(X).any(axis=1)
    Xc = X[~missing]  # the masks only on complete rows: NaN is in no region
    in_domain, above_guard, confident, plausible = (np.zeros(n, bool) for _ in range(4))
    if len(Xc):
        in_domain[~missing] = domain.contains(Xc)
        above_guard[~missing] = margin_mask(original, Xc, original.runtime_guard)
        confident[~missing] = margin_mask(original, Xc, c_o)
        plausible[~missing] = plausibility_mask(forest, Xc) if forest is not None else True
    confident &= above_guard
    return {
        "inside": in_domain & confident & plausible,
        "missing": missing,
        "in_domain": in_domain,
        "tie": in_domain & ~above_guard,
        "low": in_domain & above_guard & ~confident,
        "implausible": in_domain & confident & ~plausible,
    }


def coverage_line(cov: Coverage, eta: float, delta: float) -> str:
    """One line: how many rows the region covers and why the others lie outside it."""
    outside = []
    if cov.low_confidence:
        outside.append(f"{cov.low_confidence} low confidence (margin within eta {eta:g})")
    if cov.implausible:
        outside.append(f"{cov.implausible} implausible (delta {delta:g})")
    if cov.tie_band:
        outside.append(f"{cov.tie_band} in the float32 tie band")
    if cov.outside_domain:
        outside.append(f"{cov.outside_domain} outside the domain")
    if cov.missing:
        outside.append(f"{cov.missing} with missing values")
    share = cov.inside / cov.rows if cov.rows else 0.0
    line = f"{cov.inside} of {cov.rows} data rows inside ({share:.0%})"
    return line + ("; outside: " + ", ".join(outside) if outside else "; none outside")


def tie_band_line(cov: Coverage, runtime_guard: float) -> str:
    """One line on the rows in the tie band (empty string when there are none)."""
    if not cov.tie_band:
        return ""
    return (
        f"tie band: {cov.tie_band} data rows where the original's own margin is within its "
        f"float32 noise floor ({runtime_guard:.3g}): onnxruntime's label there is not fixed "
        "by the exact scores, so no region covers them and the compressed model may differ"
    )


def missing_line(cov: Coverage) -> str:
    """One line on the rows with missing values (empty string when there are none)."""
    if not cov.missing:
        return ""
    return f"{cov.missing} rows with missing values: outside every proof (NaN is in no region)"


def missing_changes_line(changed: int | None, missing: int) -> str:
    """One line: how many rows with missing values onnxruntime labels differently with
    the compressed model (empty string when there are no such rows or no count)."""
    if changed is None or not missing:
        return ""
    return (
        f"{changed} of {missing} rows with missing values get a different label from the "
        "compressed model (NaN is outside the proof)"
    )


def drops_imputer(input_transform) -> bool:
    """Whether the original's folded input transform (``ModelSummary.input_transform``)
    has an Imputer: the compressed model reads the raw input without it, so its labels
    of inputs with NaN follow its own trees, not the imputed values."""
    return input_transform is not None and any(
        op.startswith("Imputer") for op in input_transform.ops
    )


IMPUTER_NOTE = (
    "the original replaces NaN with imputed values (an Imputer before its trees); the "
    "compressed model reads the raw input without it, so its behaviour on inputs with "
    "missing values differs from the original's (NaN is outside the proof)"
)


def missing_lines(cert) -> list[str]:
    """What a certificate says about inputs with missing values: the data rows with NaN
    (outside every proof), how many of them the compressed model labels differently,
    and, when the compressed model dropped the original's Imputer, that its NaN
    behaviour differs."""
    cov, s = cert.region.coverage, cert.summary
    lines = []
    if cov is not None and cov.missing:
        lines.append(missing_line(cov))
        if changes := missing_changes_line(s.missing_label_changes, cov.missing):
            lines.append(changes)
    if drops_imputer(cert.original.input_transform) and (
        cert.compressed.sha256 != cert.original.sha256
    ):
        lines.append("missing values: " + IMPUTER_NOTE)
    return lines
