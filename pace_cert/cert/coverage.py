"""Where data rows lie with respect to a certificate's region (``region.coverage``).

compress counts its training rows when it writes the certificate; ``verify --data`` counts
them again from the two ONNX files and the plausibility artifact when it is given the
same file (same SHA-256). Each row is counted once, in the first class that applies:

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
    X = np.asarray(X, np.float32)
    n = len(X)
    in_domain = domain.contains(X) if n else np.zeros(0, bool)
    above_guard = margin_mask(original, X, original.runtime_guard)
    confident = margin_mask(original, X, c_o) & above_guard
    plausible = plausibility_mask(forest, X) if forest is not None else np.ones(n, bool)
    tie = in_domain & ~above_guard
    low = in_domain & above_guard & ~confident
    implausible = in_domain & confident & ~plausible
    inside = in_domain & confident & plausible
    return Coverage(
        rows=n,
        inside=int(inside.sum()),
        outside_domain=int((~in_domain).sum()),
        tie_band=int(tie.sum()),
        low_confidence=int(low.sum()),
        implausible=int(implausible.sum()),
    )


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
