"""Plain-words lines about a certificate's domain and region, shared by compress's
summary, verify's report and the HTML report."""

from __future__ import annotations

import math


def narrowing_lines(dom: dict, names: list[str] | None = None) -> list[str]:
    """What ``--binary infer`` and ``--integer infer`` took out of the domain, naming
    the columns and the flag that puts it back (no line when they took nothing)."""
    lines = []
    if integer := dom.get("integer_features", []):
        lines.append(
            f"integer: {feature_list(integer, names)} took only whole numbers in the "
            "training data, so --integer infer certifies them over the integers only "
            "(other values are outside the proof); --integer none certifies every float32"
        )
    if binary := dom.get("binary_features", []):
        lines.append(
            f"binary: {feature_list(binary, names)} took only 0 and 1 in the training "
            "data, so --binary infer certifies them at 0 and 1 only; --binary none "
            "certifies every float32"
        )
    return lines


#: at most this many feature names are listed on one line
NAMES_SHOWN = 8


def feature_list(features: list[int], names: list[str] | None, limit: int = NAMES_SHOWN) -> str:
    """The features by name (by index when the certificate has no names), the first
    ``limit`` of them and how many more."""
    shown = [names[i] if names else f"feature {i}" for i in features[:limit]]
    more = len(features) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def plausibility_words(delta_abs: float, delta: float) -> str:
    """What ``A(x) >= delta_abs`` means, in words."""
    return (
        f"A(x) >= {delta_abs:.6g}: A(x) is the isolation-forest path-length score (how "
        "deep the plausibility forest's trees isolate x, summed over them); higher is more "
        f"typical, and the region keeps the inputs at least as typical as the "
        f"{1 - delta:.0%} (1 - delta) most typical training rows"
    )


def file_size(n: int) -> str:
    """Bytes in decimal units: ``870 B``, ``14.2 kB``, ``7.3 MB``."""
    if n < 1000:
        return f"{n} B"
    if n < 1_000_000:
        return f"{n / 1000:.1f} kB"
    return f"{n / 1_000_000:.1f} MB"


def deployment_lines(dep, micro: str = "us") -> list[str]:
    """Both models' size in what deployment pays for (``summary.deployment``), before
    -> after, in two lines: the structure and ONNX bytes, then the latency (measured)
    or why it was not measured. ``micro``: the microsecond unit (ASCII on a terminal)."""
    if dep is None:
        return []
    b, a = dep.before, dep.after
    lines = [
        f"size: {b.trees} -> {a.trees} trees, {b.leaves} -> {a.leaves} leaves, "
        f"{b.internal_nodes} -> {a.internal_nodes} internal nodes, depth {b.max_depth} -> "
        f"{a.max_depth}, {b.mean_comparisons:.1f} -> {a.mean_comparisons:.1f} "
        f"comparisons/row, {file_size(b.onnx_bytes)} -> {file_size(a.onnx_bytes)} ONNX"
    ]
    ls = dep.latency_setup
    if ls is None or b.latency_us_per_row_batch is None or a.latency_us_per_row_batch is None:
        lines.append(f"latency: {dep.latency_note or 'not measured'}")
        return lines
    threads = f"{ls.intra_op_threads} thread{'s' if ls.intra_op_threads != 1 else ''}"
    lines.append(
        f"latency (onnxruntime {ls.onnxruntime}, {threads}, measured): "
        f"{b.latency_us_per_row_batch:.3g} -> {a.latency_us_per_row_batch:.3g} {micro}/row "
        f"over {ls.batch_rows} rows, {b.latency_us_batch1:.3g} -> {a.latency_us_batch1:.3g} "
        f"{micro} at a batch of 1"
    )
    return lines


def asked_coverage_line(asked: float, eta: float, units: str, held: int, rows: int) -> str:
    """What ``--coverage`` came to: ``coverage 99 %: eta 0.4 (vote share) holds 99.1 % of
    the training rows by margin (455 of 459)``. ``held``: of the ``rows`` (the training
    rows the region is built from, those without missing values), those whose original
    margin is above the region's threshold (the plausibility bound, ``--delta``, may
    remove more); the share is rounded down, never shown above what it is. Below the
    share asked only at eta 0, the largest region: the rest lie in the tie band."""
    share = held / rows if rows else 0.0
    line = (
        f"coverage {asked:g} %: eta {eta:g} ({units}) holds {_percent_down(share)} % of the "
        f"training rows by margin ({held} of {rows})"
    )
    if share < asked / 100:
        line += (
            "; no region holds more: the other rows lie in the original's float32 tie band, "
            "which no region covers"
        )
    return line


def _percent_down(share: float) -> str:
    """``share`` in %, one decimal, rounded down (99.96 % is 99.9, never 100)."""
    return f"{math.floor(share * 1000 + 1e-9) / 10:.1f}"
