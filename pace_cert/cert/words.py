"""Plain-words lines about a certificate (its domain, region, size bounds, single tree
and deployment size), shared by compress's summary, verify's report and the HTML report;
the certificate's models are in ``certificate.py``."""

from __future__ import annotations

import math

from pace_cert.cert.certificate import Certificate, Summary


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


def bound_lines(summary: Summary, depth: int, compressed_depth: int | None = None) -> list[str]:
    """What a run proved about the size of faithful models of depth <= ``depth`` (the
    original's), one line per lower bound (today: ``summary.size_lower_bound``); said
    plainly when nothing useful was proved (no bound, or a bound of 1 tree). The
    compressed model (of depth ``compressed_depth``, default ``depth``) is called minimal
    only when it belongs to that family."""
    b = summary.size_lower_bound
    if b is None or b <= 1:
        return [
            "lower bound: 1 tree (nothing useful proved for models of depth <= "
            f"{depth} in this region)"
        ]
    how = (
        f" ({len(summary.boundary_witnesses)} boundary witnesses)"
        if summary.witness_bound is not None and summary.witness_bound >= b
        else ""
    )
    in_family = (depth if compressed_depth is None else compressed_depth) <= depth
    what = "minimal" if b >= summary.trees_after and in_family else "lower bound"
    return [
        f"{what}: no faithful model of fewer than {b} trees of depth <= {depth} in the region{how}"
    ]


def tree_lines(cert: Certificate) -> list[str]:
    """Mode tree's result in words: the tree's size against the original's, whether its
    leaf count is proved the fewest, and why no tree within the caps was certified."""
    t, s = cert.summary.single_tree, cert.summary
    if t is None:
        return []
    caps = ", ".join(
        f"{flag} {v}" for flag, v in (("--max-depth", t.max_depth), ("--max-leaves", t.max_leaves))
        if v is not None
    )  # fmt: skip
    within = f" within {caps}" if caps else ""
    out = []
    if t.leaf_witnesses is not None:
        k = t.leaf_witnesses.bound
        out.append(
            f"every faithful decision tree has at least {k} leaves ({k} region points no "
            "tree can put two of in one leaf; verify re-checks them)"
            + (
                f": one tree cannot beat the {cert.compressed.leaves} leaves of this model"
                if s.certified and cert.compressed.trees > 1 and k >= cert.compressed.leaves
                else ""
            )
        )
    if t.fallback == "prune":
        out.append(
            "no single tree was certified in the time; "
            + (
                f"the compressed model is the best certified pruning: {cert.compressed.trees} "
                f"of {cert.original.trees} trees (the fallback)"
                if s.certified
                else "the pruning fallback certified nothing smaller either"
            )
        )
    if s.certified and cert.compressed.trees == 1:
        out.append(
            f"one tree: {cert.compressed.leaves} leaves, depth {cert.compressed.max_depth} "
            f"(the original: {cert.original.trees} trees, {cert.original.leaves} leaves, "
            f"depth {cert.original.max_depth})"
        )
    b = t.leaves_lower_bound
    if b is not None and s.certified and b >= cert.compressed.leaves:
        out.append(f"minimal: no faithful decision tree{within} has fewer leaves in the region")
    elif b is not None:
        out.append(f"lower bound: no faithful decision tree{within} has fewer than {b} leaves")
    if t.none_within_caps:
        out.append(f"no tree{within}: {t.none_within_caps}")
    how = "every region cell" if t.complete else "the known region points and separating samples"
    out.append(f"tree fit on {t.cells} cells of the original's grid ({how}), {t.rounds} rounds")
    return out


def pruning_of(cert: Certificate) -> list[int] | None:
    """The original trees a pruning keeps, as the learners name them (None: the
    learners state a new or merged tree, or an original one without naming it)."""
    lrs = cert.learners
    if not all(
        lr.origin == "original" and lr.merged == 1 and len(lr.original_trees) == 1 for lr in lrs
    ):
        return None
    return [lr.original_trees[0] for lr in lrs]


def minimal_pruning(cert: Certificate, kept: list[int] | None) -> bool:
    """Whether "minimal among prunings" may be said: the model is certified, it is a
    pruning (``kept``: the original trees it keeps) and it keeps exactly as many trees
    as the pruning bound (fewer contradicts the bound: a refutation, never a claim)."""
    s, pb = cert.summary, cert.summary.pruning_bound
    return (
        pb is not None
        and s.certified
        and kept is not None
        and s.trees_after == len(kept) == pb.value
    )


def pruning_bound_lines(cert: Certificate) -> list[str]:
    """The pruning lower bound (``summary.pruning_bound``) in one line; none when the
    run did not compute it. "minimal among prunings" only for a certified pruning (every
    learner one original tree) of exactly the bound's size."""
    summary = cert.summary
    pb = summary.pruning_bound
    if pb is None:
        return []
    minimal = minimal_pruning(cert, pruning_of(cert))
    what = "minimal among prunings" if minimal else "pruning lower bound"
    exact = " (the minimum on them)" if pb.meets_points == pb.value else ""
    return [
        f"{what}: no faithful pruning keeps fewer than {pb.value} of the "
        f"{summary.trees_before} original trees ({len(pb.points)} region points, "
        f"{len(pb.cuts)} cuts{exact}; verify re-checks it)"
    ]
