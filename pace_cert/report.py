"""``pace-cert report``: one self-contained HTML page an auditor reads.

Built from the certificate alone (no model is loaded, no solver runs): the models and
their hashes, the region and where the training rows lie with respect to it, sizes and
the size lower bound, the per-pair proof table, the separating-sample history as a
plot, agreement on the data, and, claim by claim, what ``pace-cert verify`` re-checks
and what it takes as stated (:func:`pace_cert.cert.claims.claim_catalog`). Plots are
inline SVG written here; the page has no script and loads nothing from anywhere.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from pathlib import Path

from pace_cert.cert.certificate import Certificate, Coverage
from pace_cert.cert.claims import claim_catalog, synthesis_part
from pace_cert.errors import InputError

#: at most this many rows of the long tables (learners, witnesses) are shown
TABLE_ROWS = 200
PALETTE = (
    "#4477aa",
    "#ee6677",
    "#228833",
    "#ccbb44",
    "#66ccee",
    "#aa3377",
    "#bbbbbb",
    "#000000",
    "#ee8866",
    "#44bb99",
    "#99ddff",
    "#ffaabb",
)
COVERAGE_COLOURS = {
    "inside": "#228833",
    "low_confidence": "#ccbb44",
    "implausible": "#ee8866",
    "tie_band": "#aa3377",
    "outside_domain": "#bbbbbb",
}
COVERAGE_NAMES = {
    "inside": "inside the region",
    "low_confidence": "low confidence (margin within eta)",
    "implausible": "implausible (A(x) < delta_abs)",
    "tie_band": "float32 tie band (margin within the runtime guard)",
    "outside_domain": "outside the feature domain",
}
PHASES = ("merge", "l1", "l0", "boost", "refit")

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;
background:#fafafa}
main{max-width:1100px;margin:0 auto;padding:24px 32px 64px;background:#fff}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px;border-bottom:2px solid
#ddd;padding-bottom:4px}h3{font-size:15px;margin:20px 0 6px}
table{border-collapse:collapse;margin:8px 0 12px;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;word-break:break-all}
.verdict{padding:12px 16px;border-radius:6px;margin:12px 0;font-size:15px}
.ok{background:#e6f4ea;border:1px solid #228833}.warn{background:#fff4e0;border:1px solid
#cc8800}.tag{display:inline-block;padding:0 6px;border-radius:3px;font-size:12px;color:#fff}
.checked{background:#228833}.stated{background:#777}.note{color:#555;font-size:13px}
svg{display:block;margin:8px 0}svg text{font:12px system-ui,sans-serif;fill:#222}
"""


def write_report(cert_path: Path, out: Path) -> None:
    """Read ``cert_path`` and write the report to ``out`` (atomically); InputError for
    an unreadable or invalid certificate or an output path that cannot be written."""
    from pace_cert.cert.verify import load_certificate
    from pace_cert.outputs import write_atomic

    cert = load_certificate(Path(cert_path))
    page = render(cert, str(cert_path))
    out = Path(out)
    if out.is_dir():
        raise InputError(out, "is a directory, expected an HTML file name")
    try:
        write_atomic(out, page.encode())
    except OSError as e:
        raise InputError(out, f"cannot write the report ({e.strerror or e})") from None


# ---------------------------------------------------------------------------- page


def render(cert: Certificate, source: str = "certificate.json") -> str:
    """The report of ``cert`` as one HTML document."""
    s = cert.summary
    sections = [
        _verdict(cert),
        _models(cert),
        _region(cert),
        _sizes(cert),
        _proofs(cert),
        _history(cert),
        _agreement(cert),
        _claims(cert),
        _learners(cert),
        _run_record(cert),
    ]
    title = f"pace-cert report: {s.status}, {s.trees_before} -> {s.trees_after} trees"
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body><main>"
        f"<h1>{_e(title)}</h1><p class='note'>Certificate <code>{_e(source)}</code>, schema "
        f"{_e(cert.schema_version)}, written by {_e(cert.tool)} {_e(cert.tool_version)} on "
        f"{_e(cert.created)}. Everything below is read from the certificate; "
        "<code>pace-cert verify ORIGINAL COMPRESSED CERTIFICATE</code> re-checks what the "
        "table <a href='#claims'>What verify re-checks</a> marks <em>checked</em>.</p>"
        + "".join(sections)
        + "</main></body></html>\n"
    )


def _verdict(cert: Certificate) -> str:
    s, r = cert.summary, cert.region
    identical = cert.compressed.sha256 == cert.original.sha256
    where = _region_words(cert)
    if s.certified:
        text = (
            f"<b>Certified.</b> The compressed model ({s.trees_after} trees, {s.leaves_after} "
            f"leaves) returns the original's label ({s.trees_before} trees, {s.leaves_before} "
            f"leaves) at every float32 input {where}, as onnxruntime computes both: each of "
            f"the {len(cert.pairs)} ordered label pairs was proved INFEASIBLE by CP-SAT."
        )
        cls = "ok"
    else:
        text = (
            "<b>Inconclusive.</b> compress certified no model smaller than the original, "
            "and wrote the original unchanged"
            + (" (the two files are identical)" if identical else "")
            + ". The certificate claims no compression."
        )
        cls = "warn"
    if r.coverage is not None and r.coverage.rows:
        c = r.coverage
        text += (
            f" Of the {c.rows} training rows, {c.inside} ({c.inside / c.rows:.0%}) lie inside "
            "the region."
        )
    return f"<div class='verdict {cls}'>{text}</div>"


def _region_words(cert: Certificate) -> str:
    r = cert.region
    parts = [
        f"where the original's margin exceeds {r.margin_threshold:.6g} (eta {r.eta:g}, "
        f"{r.eta_units})"
    ]
    if r.delta_abs is not None:
        parts.append(f"whose plausibility A(x) is at least {r.delta_abs:.6g} (delta {r.delta:g})")
    return "in the domain " + " and ".join(parts)


def _models(cert: Certificate) -> str:
    o, c = cert.original, cert.compressed
    rows = [
        ("path", _code(o.path), _code(c.path)),
        ("SHA-256", _code(o.sha256), _code(c.sha256)),
        ("exporter pattern", _code(o.pattern), _code(c.pattern)),
        ("trees", o.trees, c.trees),
        ("max depth", o.max_depth, c.max_depth),
        ("leaves", o.leaves, c.leaves),
        ("classes", _e(", ".join(map(str, o.classes))), _e(", ".join(map(str, c.classes)))),
        ("features", o.features, c.features),
    ]
    body = _table(("", "original", "compressed"), rows, raw=True)
    same = (
        "<p class='note'>The two files are identical (same SHA-256).</p>"
        if o.sha256 == c.sha256
        else ""
    )
    data = ""
    if cert.data is not None:
        d = cert.data
        data = "<h3>Training data</h3>" + _table(
            ("path", "SHA-256", "rows", "label column"),
            [(_code(d.path), _code(d.sha256), d.rows, _code(d.target))],
            raw=True,
        )
    return "<h2 id='models'>Models and hashes</h2>" + body + same + data


def _region(cert: Certificate) -> str:
    r = cert.region
    dom = r.domain
    n = len(dom.get("cells_per_feature", []))
    rows = [
        ("input semantics", _e(cert.input_semantics)),
        ("eta", f"{r.eta:g} ({_e(r.eta_units)}; margin scale sigma {r.margin_scale:.6g})"),
        ("runtime guard", f"{r.runtime_guard:.6g} (onnxruntime's float32 error bound)"),
        ("margin threshold c_o", f"{r.margin_threshold:.6g} = max(eta * sigma, runtime guard)"),
        ("delta", f"{r.delta:g}"),
        ("delta_abs", "none" if r.delta_abs is None else f"{r.delta_abs:.6g}"),
    ]
    if r.plausibility is not None:
        p = r.plausibility
        rows.append(
            (
                "plausibility artifact",
                f"{_code(p.path)} SHA-256 {_code(p.sha256)}; {p.n_estimators} isolation trees, "
                f"{p.max_samples} rows each, seed {p.seed}",
            )
        )
    rows += [
        (
            "domain",
            f"{n} features; binary: {_e(_ints(dom.get('binary_features', [])) or 'none')}; "
            f"integer: {_e(_ints(dom.get('integer_features', [])) or 'none')}; bounds: "
            + ("training min/max box" if dom.get("bounds") else "none (every float32)")
            + "; NaN excluded",
        ),
        ("E_req (compressed margin)", f"{cert.scaling.compressed_margin:.6g}"),
    ]
    out = "<h2 id='region'>Region</h2>" + _table(("parameter", "value"), rows, raw=True)
    out += "<h3>Coverage of the training data</h3>"
    if r.coverage is None:
        out += (
            f"<p>{r.samples_kept} training rows inside the region, {r.samples_dropped} "
            "outside (this certificate predates the per-cause counts).</p>"
        )
        return out
    out += _coverage_svg(r.coverage)
    c = r.coverage
    rows = [
        (
            _swatch(COVERAGE_COLOURS[k]) + _e(COVERAGE_NAMES[k]),
            f"<td class='num'>{getattr(c, k)}</td>",
            f"<td class='num'>{getattr(c, k) / c.rows:.1%}</td>" if c.rows else "<td></td>",
        )
        for k in COVERAGE_COLOURS
    ]
    out += _table(("where", "rows", "share"), rows, raw=True, cells=True)
    if c.tie_band:
        out += (
            f"<p class='note'>{c.tie_band} rows lie in the float32 tie band: the original's "
            "own margin there is within the noise floor of its float32 scores, so "
            "onnxruntime's label is not fixed by the exact scores. No region covers them "
            "(eta = 0 included) and the compressed model may label them differently.</p>"
        )
    return out


def _sizes(cert: Certificate) -> str:
    s = cert.summary
    depth = cert.original.max_depth
    bars = [("original", s.trees_before, "#4477aa"), ("compressed", s.trees_after, "#228833")]
    if s.size_lower_bound is not None:
        bars.append(("lower bound", s.size_lower_bound, "#aa3377"))
    rows = [
        ("trees", s.trees_before, s.trees_after),
        ("leaves", s.leaves_before, s.leaves_after),
    ]
    out = "<h2 id='sizes'>Sizes and lower bound</h2>" + _bars_svg(bars, "trees")
    out += _table(("", "original", "compressed"), rows)
    synth = synthesis_part(cert)
    notes = []
    if s.witness_bound is not None:
        notes.append(
            f"Boundary witnesses: {len(s.boundary_witnesses)} pairs of region points one "
            f"float32 step apart in one feature that the original labels differently; a tree "
            f"of depth &le; {depth} splits at most {2**depth - 1} of their gaps, so no "
            f"faithful model has fewer than <b>{s.witness_bound}</b> trees "
            "<span class='tag checked'>checked by verify</span>."
        )
    if synth is not None:
        notes.append(
            f"Synthesis proofs: CP-SAT proved that no {synth - 1} trees of depth &le; {depth} "
            f"split the run's samples into label-pure cells: no faithful model has fewer "
            f"than <b>{synth}</b> trees <span class='tag stated'>stated: verify does not "
            "re-check it</span>."
        )
    if s.size_lower_bound is None:
        notes.append("No size lower bound was established.")
    elif s.certified and s.size_lower_bound >= s.trees_after:
        tag = (
            "<span class='tag checked'>checked</span>"
            if (s.witness_bound or 0) >= s.trees_after
            else "<span class='tag stated'>stated</span>"
        )
        notes.append(
            f"The compressed model is <b>minimal</b>: no faithful model of fewer than "
            f"{s.size_lower_bound} trees of depth &le; {depth} exists in the region {tag}."
        )
    out += "".join(f"<p>{n}</p>" for n in notes)
    if s.boundary_witnesses:
        shown = s.boundary_witnesses[:TABLE_ROWS]
        out += "<h3>Boundary witnesses</h3>" + _table(
            ("feature", "x[feature]", "next float32 value", "label", "label next"),
            [(w.feature, f"{w.x[w.feature]:.9g}", f"{w.value_next:.9g}", w.label, w.label_next)
             for w in shown],
        )  # fmt: skip
        out += _more(len(s.boundary_witnesses), len(shown))
    return out


def _proofs(cert: Certificate) -> str:
    rows = [
        (
            p.y0,
            p.y,
            p.status,
            f"{p.seconds:.3f}",
            p.conflicts,
            p.branches,
            p.scale_exp,
            f"{p.rounding_bound:.3g}",
            f"{p.region_rounding_bound:.3g}",
            p.spurious_excluded,
            len(p.history),
        )
        for p in cert.pairs
    ]
    head = (
        "y0 (original)",
        "y",
        "CP-SAT status",
        "seconds",
        "conflicts",
        "branches",
        "scale 2^p",
        "rounding bound",
        "region rounding",
        "spurious excluded",
        "history points",
    )
    intro = (
        "<p>For each ordered pair (y0, y): is there an input in the region where the "
        "original predicts y0 and the compressed model's y score comes within E_req of its "
        "y0 score? INFEASIBLE is a proof that there is none.</p>"
    )
    if not cert.summary.certified:
        intro += "<p class='note'>Inconclusive: no proof is kept (every pair UNKNOWN).</p>"
    return "<h2 id='proofs'>Per-pair proofs</h2>" + intro + _table(head, rows)


def _history(cert: Certificate) -> str:
    hist = [(pi, h) for pi, p in enumerate(cert.pairs) for h in p.history]
    out = "<h2 id='history'>Separating-sample history</h2>"
    if not hist:
        return out + "<p>No separating sample was added: the training rows sufficed.</p>"
    out += (
        f"<p>{len(hist)} separating samples: points CP-SAT (or the screen) found where a "
        "candidate of the run disagreed with the original, added to the master problem "
        "until every pair was proved. Bars: samples found per round of each loop, "
        "coloured by label pair.</p>"
    )
    out += _history_svg(cert)
    counts: dict[str, list[int]] = {}
    for _, h in hist:
        counts.setdefault(h.phase, []).append(h.iteration)
    rows = [
        (ph, len(its), max(its)) for ph in PHASES if (its := counts.get(ph))
    ]  # fmt: skip
    out += _table(("loop", "samples", "rounds"), rows)
    if cert.summary.l1_values and len(cert.summary.l1_values) > 1:
        out += "<h3>L1 objective at the end of each L1 loop</h3>" + _line_svg(
            cert.summary.l1_values, "L1 loop", "objective"
        )
    return out


def _agreement(cert: Certificate) -> str:
    s = cert.summary
    rows = [
        ("fidelity (labels equal on all training rows, inside the region or not)", s.fidelity),
        ("accuracy of the original", s.accuracy_original),
        ("accuracy of the compressed model", s.accuracy_compressed),
    ]
    body = _table(("on the training data", "share"), [(a, f"{b:.4f}") for a, b in rows])
    note = (
        "<p class='note'>Inside the region agreement is proved, not measured; rows outside "
        "it (low confidence, implausible, tie band) may differ. <code>pace-cert verify "
        "--data TRAIN.csv</code> replays every row through onnxruntime and reports its own "
        "agreement; <code>--probe N</code> replays N random points near the rows.</p>"
    )
    return "<h2 id='agreement'>Agreement on the data</h2>" + body + note


def _claims(cert: Certificate) -> str:
    rows = [
        (
            f"<span class='tag {c.handling}'>{c.handling}</span>",
            _e(c.key),
            _e(c.text),
        )
        for c in claim_catalog(cert)
    ]
    intro = (
        "<p><b>checked</b>: <code>pace-cert verify</code> recomputes it from the two ONNX "
        "files (and the plausibility artifact, and for the data the same CSV) and refutes "
        "the certificate when they contradict it; the proof itself is redone with fresh "
        "CP-SAT models. <b>stated</b>: a parameter the claim is made under, or a record of "
        "the run; verify reports it as stated.</p>"
    )
    return (
        "<h2 id='claims'>What verify re-checks</h2>"
        + intro
        + _table(("verify", "claim", "what the certificate states"), rows, raw=True)
    )


def _learners(cert: Certificate) -> str:
    shown = cert.learners[:TABLE_ROWS]
    rows = [
        (lr.index, lr.origin, f"{lr.weight:.6g}", lr.merged, _ints(lr.original_trees) or "-")
        for lr in shown
    ]
    return (
        "<h2 id='learners'>Compressed trees</h2>"
        + _table(("tree", "origin", "weight", "learners merged", "original trees"), rows)
        + _more(len(cert.learners), len(shown))
    )


def _run_record(cert: Certificate) -> str:
    s = cert.summary
    rows = [
        ("mode / phase kept", f"{s.mode} / {s.phase or '-'}"),
        ("seconds", f"{s.seconds:.1f}"),
        ("pricing / generation stop", f"{s.pricing} / {s.generation_stop}"),
        ("new learners", f"{s.new_learner_share:.0%}"),
        ("l0_optimal / big-M", f"{s.l0_optimal} / {s.l0_big_m}"),
        ("seed / threads", f"{cert.seed} / {cert.threads}"),
        ("CP-SAT", f"{cert.cpsat.schedule}: {cert.cpsat.num_workers_per_pair}"),
        ("time limit", f"{cert.cpsat.time_limit_seconds}"),
        (
            "solvers",
            f"ortools {cert.solvers.ortools}, highspy {cert.solvers.highspy}"
            + (f", gurobipy {cert.solvers.gurobipy}" if cert.solvers.gurobipy else ""),
        ),
        ("scaling", f"{cert.scaling.method} ({cert.scaling.bits} bits)"),
    ]
    return "<h2 id='run'>Run record (stated)</h2>" + _table(("", ""), rows)


# ---------------------------------------------------------------------------- plots


def _coverage_svg(c: Coverage) -> str:
    width, height = 760, 46
    total = max(c.rows, 1)
    x, parts = 0.0, []
    for k, colour in COVERAGE_COLOURS.items():
        n = getattr(c, k)
        if not n:
            continue
        w = width * n / total
        parts.append(
            f"<rect x='{x:.2f}' y='4' width='{w:.2f}' height='26' fill='{colour}'>"
            f"<title>{_e(COVERAGE_NAMES[k])}: {n}</title></rect>"
        )
        if w > 40:
            parts.append(
                f"<text x='{x + w / 2:.2f}' y='22' text-anchor='middle' "
                f"style='fill:#fff;font-weight:600'>{n}</text>"
            )
        x += w
    return _svg(
        width,
        height,
        "coverage of the training rows",
        "".join(parts) + f"<text x='0' y='44'>0</text><text x='{width}' y='44' "
        f"text-anchor='end'>{c.rows} rows</text>",
    )


def _bars_svg(bars: Sequence[tuple[str, int, str]], unit: str) -> str:
    width, row = 760, 30
    label_w = 110
    top = max([v for _, v, _ in bars] + [1])
    parts = []
    for i, (name, v, colour) in enumerate(bars):
        y = 6 + i * row
        w = (width - label_w - 60) * v / top
        parts.append(
            f"<text x='0' y='{y + 16}'>{_e(name)}</text>"
            f"<rect x='{label_w}' y='{y}' width='{max(w, 1):.2f}' height='{row - 8}' "
            f"fill='{colour}'><title>{_e(name)}: {v} {unit}</title></rect>"
            f"<text x='{label_w + w + 6:.2f}' y='{y + 16}'>{v} {unit}</text>"
        )
    return _svg(width, 10 + row * len(bars), f"sizes in {unit}", "".join(parts))


def _history_svg(cert: Certificate) -> str:
    """Samples found per round, one block of rounds per loop (phase), stacked by pair."""
    pair_names = [f"({p.y0}, {p.y})" for p in cert.pairs]
    by_round: dict[tuple[str, int], list[int]] = {}
    for pi, p in enumerate(cert.pairs):
        for h in p.history:
            by_round.setdefault((h.phase, h.iteration), [0] * len(cert.pairs))[pi] += 1
    phases = [ph for ph in PHASES if any(k[0] == ph for k in by_round)]
    blocks = [(ph, sorted(it for (q, it) in by_round if q == ph)) for ph in phases]
    n_bars = sum(len(its) for _, its in blocks)
    width, plot_h, left, top, gap, min_block = 900, 220, 44, 10, 16, 140
    room = width - left - 10 - gap * len(blocks)
    # each loop gets room in proportion to its rounds, and at least enough for its label
    widths = [max(min_block, room * len(its) / n_bars) for _, its in blocks]
    scale = min(1.0, room / sum(widths)) if sum(widths) > room else 1.0
    widths = [max(w * scale, min(min_block, room / len(blocks))) for w in widths]
    peak = max(sum(v) for v in by_round.values())
    parts = [_axis(left, top, plot_h, peak, width)]
    x = left + 6.0
    for (ph, its), block_w in zip(blocks, widths):
        bar_w = min(40.0, block_w / len(its))
        x0 = x + (block_w - bar_w * len(its)) / 2
        for k, it in enumerate(its):
            counts = by_round[(ph, it)]
            y = top + plot_h
            for pi, n in enumerate(counts):
                if not n:
                    continue
                h = plot_h * n / peak
                y -= h
                parts.append(
                    f"<rect x='{x0 + k * bar_w:.2f}' y='{y:.2f}' width='{bar_w * 0.85:.2f}' "
                    f"height='{h:.2f}' fill='{PALETTE[pi % len(PALETTE)]}'><title>{ph} round "
                    f"{it}, pair {_e(pair_names[pi])}: {n}</title></rect>"
                )
        rounds = f"round {its[0]}" if len(its) == 1 else f"rounds {its[0]}-{its[-1]}"
        parts.append(
            f"<text x='{x + block_w / 2:.2f}' y='{top + plot_h + 16}' "
            f"text-anchor='middle'>{ph} ({rounds})</text>"
        )
        x += block_w + gap
        parts.append(
            f"<line x1='{x - gap / 2:.2f}' y1='{top}' x2='{x - gap / 2:.2f}' "
            f"y2='{top + plot_h}' stroke='#ddd'/>"
        )
    legend = []
    if len(pair_names) <= len(PALETTE):
        for pi, name in enumerate(pair_names):
            lx = left + (pi % 6) * 140
            ly = top + plot_h + 36 + (pi // 6) * 18
            legend.append(
                f"<rect x='{lx}' y='{ly - 10}' width='12' height='12' "
                f"fill='{PALETTE[pi]}'/><text x='{lx + 16}' y='{ly}'>pair {_e(name)}</text>"
            )
    else:
        legend.append(
            f"<text x='{left}' y='{top + plot_h + 36}'>{len(pair_names)} pairs; colours "
            "repeat (hover a bar for its pair)</text>"
        )
    height = top + plot_h + 44 + 18 * ((len(pair_names) - 1) // 6 if len(legend) > 1 else 0)
    return _svg(
        width,
        height,
        "separating samples per round",
        "".join(parts + legend),
    )


def _line_svg(values: Sequence[float], xlabel: str, ylabel: str) -> str:
    width, plot_h, left, top = 760, 160, 70, 10
    lo, hi = min(values), max(values)
    span = (hi - lo) or abs(hi) or 1.0
    n = len(values)
    pts = [
        (left + (width - left - 20) * i / max(n - 1, 1), top + plot_h * (1 - (v - lo) / span))
        for i, v in enumerate(values)
    ]
    path = " ".join(f"{x:.2f},{y:.2f}" for x, y in pts)
    dots = "".join(
        f"<circle cx='{x:.2f}' cy='{y:.2f}' r='3' fill='#4477aa'><title>{i + 1}: "
        f"{values[i]:.6g}</title></circle>"
        for i, (x, y) in enumerate(pts)
    )
    body = (
        f"<line x1='{left}' y1='{top}' x2='{left}' y2='{top + plot_h}' stroke='#888'/>"
        f"<line x1='{left}' y1='{top + plot_h}' x2='{width - 10}' y2='{top + plot_h}' "
        f"stroke='#888'/><text x='{left - 6}' y='{top + 10}' text-anchor='end'>{hi:.4g}</text>"
        f"<text x='{left - 6}' y='{top + plot_h}' text-anchor='end'>{lo:.4g}</text>"
        f"<polyline points='{path}' fill='none' stroke='#4477aa' stroke-width='2'/>{dots}"
        f"<text x='{(left + width) / 2}' y='{top + plot_h + 18}' text-anchor='middle'>"
        f"{_e(xlabel)} (1-{n})</text>"
    )
    return _svg(width, top + plot_h + 26, f"{ylabel} by {xlabel}", body)


def _axis(left: float, top: float, plot_h: float, peak: int, width: float = 900) -> str:
    return (
        f"<line x1='{left}' y1='{top}' x2='{left}' y2='{top + plot_h}' stroke='#888'/>"
        f"<line x1='{left}' y1='{top + plot_h}' x2='{width - 10}' y2='{top + plot_h}' "
        "stroke='#888'/>"
        f"<text x='{left - 30}' y='{top + plot_h / 2}' transform='rotate(-90 {left - 30} "
        f"{top + plot_h / 2})' text-anchor='middle'>samples</text>"
        f"<text x='{left - 6}' y='{top + 10}' text-anchor='end'>{peak}</text>"
        f"<text x='{left - 6}' y='{top + plot_h}' text-anchor='end'>0</text>"
    )


def _svg(width: float, height: float, title: str, body: str) -> str:
    return (
        f"<svg width='{width:.0f}' height='{height:.0f}' "
        f"viewBox='0 0 {width:.0f} {height:.0f}' role='img' aria-label='{_e(title)}'>"
        f"<title>{_e(title)}</title>{body}</svg>"
    )


# ---------------------------------------------------------------------------- helpers


def _e(v: object) -> str:
    return html.escape(str(v), quote=True)


def _code(v: object) -> str:
    return f"<code>{_e(v)}</code>"


def _ints(v: Iterable[int]) -> str:
    return ", ".join(str(i) for i in v)


def _swatch(colour: str) -> str:
    return (
        f"<svg width='12' height='12' style='display:inline;margin:0 6px 0 0'>"
        f"<rect width='12' height='12' fill='{colour}'/></svg>"
    )


def _more(total: int, shown: int) -> str:
    if total <= shown:
        return ""
    return f"<p class='note'>First {shown} of {total} shown; the certificate lists all.</p>"


def _table(
    head: Sequence[str], rows: Iterable[Sequence[object]], raw: bool = False, cells: bool = False
) -> str:
    """An HTML table. ``raw``: cells are HTML already (else escaped; numbers right
    aligned); ``cells``: the cells after the first are whole ``<td>`` elements."""

    def cell(v: object) -> str:
        if cells and isinstance(v, str) and v.startswith("<td"):
            return v
        if isinstance(v, int | float) and not isinstance(v, bool):
            return f"<td class='num'>{v}</td>"
        return f"<td>{v if raw else _e(v)}</td>"

    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(cell(v) for v in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"
