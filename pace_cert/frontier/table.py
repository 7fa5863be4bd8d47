"""The frontier table a user can ship from: per rung the share of rows asked, eta
(and delta), sizes (trees and leaves before -> after; the written model's internal
nodes, depth, comparisons per prediction, ONNX size and, where measured, latency, with
the original's in the legend), the proved bound and the estimate, coverage and
agreement as percentages (inside the region and on all rows, for --data and --test),
the time, the status and why the rung stopped; then what the columns mean and a
one-line recommendation. Columns that say nothing for this run are left out (delta when every
rung's is 0, the share asked without --rows, test columns without --test, a bound
column when no rung proved more than 1 tree)."""

from __future__ import annotations

from pace_cert.cert.words import file_size
from pace_cert.frontier.ladder import number
from pace_cert.frontier.record import FrontierRecord, RowCoverage, RungRecord

#: the recommendation's threshold: the share of test rows a region must hold
RECOMMEND_SHARE = 0.9


def proved_bound(r: RungRecord) -> int | None:
    """The largest lower bound the rung's certificate proves (None: none above 1 tree,
    which says nothing: every model has a tree)."""
    values = [v for v in r.bounds.values() if v is not None]
    best = max(values, default=None)
    return best if best is not None and best > 1 else None


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f} %"


def _inside(c: RowCoverage | None) -> str:
    return "-" if c is None or not c.rows else _pct(c.inside / c.rows)


def _status(r: RungRecord) -> str:
    return f"{r.status}, cut" if r.state == "cut" and r.status != "nothing written" else r.status


def columns(rec: FrontierRecord) -> list[tuple[str, list[str]]]:
    """(header, cells per rung) for every column this run has something to say in."""
    rs = rec.rungs
    sized = [r.status not in ("empty region", "not started", "nothing written") for r in rs]
    cols: list[tuple[str, list[str]]] = [("rung", [r.name for r in rs])]
    if any(r.share_asked is not None for r in rs):
        asked = ["-" if r.share_asked is None else _pct(r.share_asked) for r in rs]
        cols.append(("rows asked", asked))
    cols.append(("eta", [number(r.eta) for r in rs]))
    if any(r.delta for r in rs):
        cols.append(("delta", [number(r.delta) for r in rs]))
    cols.append(
        ("trees", [f"{r.trees_before} -> {r.trees_after}" if s else "-" for r, s in zip(rs, sized)])
    )
    cols.append(
        (
            "leaves",
            [f"{r.leaves_before} -> {r.leaves_after}" if s else "-" for r, s in zip(rs, sized)],
        )
    )
    cols += _deployment_columns(rs, sized)
    bounds = [proved_bound(r) for r in rs]
    if any(b is not None for b in bounds):
        cols.append(("bound", ["-" if b is None else f">= {b}" for b in bounds]))
    if any(r.estimate is not None for r in rs):
        cols.append(("estimate", ["-" if r.estimate is None else str(r.estimate) for r in rs]))
    for which in ("data", "test"):
        covs = [getattr(r, which) for r in rs]
        if which == "test" and all(c is None for c in covs):
            continue
        cols.append((f"{which} in", [_inside(c) for c in covs]))
        cols.append(
            (f"{which} agree in", [_pct(None if c is None else c.agreement_inside) for c in covs])
        )
        cols.append(
            (f"{which} agree all", [_pct(None if c is None else c.agreement) for c in covs])
        )
    cols.append(("seconds", [f"{r.seconds:.1f}" for r in rs]))
    cols.append(("status", [_status(r) for r in rs]))
    cols.append(("stopped because", [r.stop_reason or "-" for r in rs]))
    return cols


#: the deployment columns: header, what the legend calls it, the cell of a rung's written
#: model (None: nothing to show), and whether the column is shown only when some rung
#: has a value (the latency: measured at a rung's end only)
_DEPLOYMENT = (
    ("nodes", "internal nodes", lambda d: str(d.internal_nodes), False),
    ("depth", "maximum depth", lambda d: str(d.max_depth), False),
    (
        "cmp/row",
        "comparisons per prediction (mean over the --data rows)",
        lambda d: f"{d.mean_comparisons:.1f}",
        False,
    ),
    ("ONNX", "file size", lambda d: file_size(d.onnx_bytes), False),
    (
        "us/row",
        "onnxruntime latency per row over the data in one batch (measured by compress, 1 "
        "thread; '-': not measured)",
        lambda d: (
            None if d.latency_us_per_row_batch is None else f"{d.latency_us_per_row_batch:.3g}"
        ),
        True,
    ),
)


def _deployment_columns(rs: list[RungRecord], sized: list[bool]) -> list[tuple[str, list[str]]]:
    """The written model's internal nodes, depth, comparisons per prediction, ONNX size
    and (where measured) latency per rung: the rung's value only, the original's is in
    the legend (:func:`original_sizes`); none when no rung states them."""
    deps = [r.deployment if s else None for r, s in zip(rs, sized)]
    if all(d is None for d in deps):
        return []
    cols = []
    for head, _, cell, optional in _DEPLOYMENT:
        cells = [None if d is None else cell(d.after) for d in deps]
        if optional and all(c is None for c in cells):
            continue
        cols.append((head, ["-" if c is None else c for c in cells]))
    return cols


def original_sizes(rec: FrontierRecord) -> str | None:
    """The original's values of the deployment columns, in words (None: no rung states
    them)."""
    dep = next((r.deployment for r in rec.rungs if r.deployment is not None), None)
    if dep is None:
        return None
    b = dep.before
    words = [
        f"{b.internal_nodes} internal nodes",
        f"depth {b.max_depth}",
        f"{b.mean_comparisons:.1f} comparisons per prediction",
        f"{file_size(b.onnx_bytes)} ONNX",
    ]
    if b.latency_us_per_row_batch is not None:
        words.append(f"{b.latency_us_per_row_batch:.3g} us/row")
    return ", ".join(words)


def table_header(rec: FrontierRecord) -> list[str]:
    return [h for h, _ in columns(rec)]


def table_rows(rec: FrontierRecord) -> list[list[str]]:
    """The frontier table, one row of strings per rung (columns: :func:`table_header`)."""
    cols = columns(rec)
    return [[cells[i] for _, cells in cols] for i in range(len(rec.rungs))]


def format_table(rec: FrontierRecord) -> str:
    """The table as aligned text."""
    rows = [table_header(rec), *table_rows(rec)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def legend(rec: FrontierRecord) -> list[str]:
    """What the columns mean, one line each (only the columns shown)."""
    heads = set(table_header(rec))
    units = rec.eta_units
    lines = []
    if "rows asked" in heads:
        lines.append(
            "rows asked: the share of --data rows the rung's region was asked to hold; eta is "
            f"its translation for this model ({units} margin, rounded down)"
        )
    else:
        lines.append(f"eta: the region's margin threshold ({units})")
    if "delta" in heads:
        lines.append("delta: the share of training rows left out as least plausible")
    if "bound" in heads:
        lines.append(
            "bound: proved: no faithful model of the original's depth has fewer trees "
            "(shown when it says more than 1 tree)"
        )
    shown = [(h, words) for h, words, _, _ in _DEPLOYMENT if h in heads]
    if shown:
        lines.append(
            ", ".join(h for h, _ in shown)
            + ": the written model's "
            + ", ".join(words for _, words in shown)
            + "; the original: "
            + (original_sizes(rec) or "-")
        )
    if "estimate" in heads:
        lines.append(
            "estimate: trees a faithful pruning keeps if the leaves combined freely "
            "(an estimate, not a bound)"
        )
    lines.append(
        "in: share of the rows inside the rung's region (where the guarantee holds); "
        "agree in / all: share of rows where the written model gives the original's label, "
        "inside the region (100 % by the certificate) / on all rows"
    )
    lines.append(
        "status cut: the rung's time ran out (its best certified model so far is written; "
        "a longer --time-limit may find a smaller one)"
    )
    return lines


def recommendation(rec: FrontierRecord, share: float = RECOMMEND_SHARE) -> str:
    """One line: the smallest certified smaller model whose region holds at least
    ``share`` of the test rows (the data rows without --test)."""
    which = "test" if rec.test is not None else "data"
    best: RungRecord | None = None
    for r in rec.rungs:
        c = getattr(r, which)
        if r.status != "certified" or c is None or not c.rows or c.inside / c.rows < share:
            continue
        if best is None or (r.trees_after, r.leaves_after) < (best.trees_after, best.leaves_after):
            best = r
    if best is None:
        return (
            f"recommendation: none: no rung certified a smaller model whose region holds "
            f">= {100 * share:g} % of the {which} rows"
        )
    c = getattr(best, which)
    agree = "" if c.agreement_inside is None else f", agreement {_pct(c.agreement_inside)} inside"
    return (
        f"recommendation: {best.name}/compressed.onnx: {best.trees_after} trees (of "
        f"{best.trees_before}), {_pct(c.inside / c.rows)} of the {which} rows inside its "
        f"region{agree}, {_pct(c.agreement)} on all (the smallest certified model whose "
        f"region holds >= {100 * share:g} % of the {which} rows)"
    )


def render_text(rec: FrontierRecord) -> str:
    """The table, what its columns mean and the recommendation, as printed."""
    return "\n".join([format_table(rec), "", *legend(rec), "", recommendation(rec)])
