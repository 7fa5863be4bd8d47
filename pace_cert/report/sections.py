"""The report's sections, one function each, from the first paragraph to the run
record; :func:`sections` lists them in page order for ``page.render``."""

from __future__ import annotations

from pace_cert.cert.catalog import claim_catalog
from pace_cert.cert.certificate import Certificate
from pace_cert.cert.claims import synthesis_part
from pace_cert.cert.coverage import missing_lines
from pace_cert.cert.words import file_size, narrowing_lines, plausibility_words
from pace_cert.report.html import TABLE_ROWS, code, ints, more, swatch, table
from pace_cert.report.plots import (
    COVERAGE_COLOURS,
    COVERAGE_NAMES,
    PHASES,
    bars_svg,
    coverage_svg,
    esc,
    history_svg,
    line_svg,
)
from pace_cert.report.summary import summary_paragraph


def sections(cert: Certificate, tree=None) -> list[str]:
    """The page's sections in order, as HTML (``tree``: the compressed model when it is
    one tree, drawn with its rules; None: not shown)."""
    return [
        summary_paragraph(cert),
        _verdict(cert),
        _models(cert),
        _region(cert),
        _technical(cert),
        _sizes(cert),
        _tree(cert, tree),
        _proofs(cert),
        _history(cert),
        _agreement(cert),
        _claims(cert),
        _learners(cert),
        _run_record(cert),
    ]


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
        parts.append(
            f"whose plausibility (delta {r.delta:g}) is {plausibility_words(r.delta_abs, r.delta)}"
        )
    return "in the domain " + " and ".join(parts)


def _models(cert: Certificate) -> str:
    o, c = cert.original, cert.compressed
    rows = [
        ("path", code(o.path), code(c.path)),
        ("SHA-256", code(o.sha256), code(c.sha256)),
        ("exporter pattern", code(o.pattern), code(c.pattern)),
        ("trees", o.trees, c.trees),
        ("max depth", o.max_depth, c.max_depth),
        ("leaves", o.leaves, c.leaves),
        ("classes", esc(", ".join(map(str, o.classes))), esc(", ".join(map(str, c.classes)))),
        ("features", o.features, c.features),
    ]
    body = table(("", "original", "compressed"), rows, raw=True)
    same = (
        "<p class='note'>The two files are identical (same SHA-256).</p>"
        if o.sha256 == c.sha256
        else ""
    )
    data = ""
    if cert.data is not None:
        d = cert.data
        data = "<h3>Training data</h3>" + table(
            ("path", "SHA-256", "rows", "label column"),
            [(code(d.path), code(d.sha256), d.rows, code(d.target))],
            raw=True,
        )
    return "<h2 id='models'>Models and hashes</h2>" + body + same + data


def _region(cert: Certificate) -> str:
    r = cert.region
    dom = r.domain
    names = _feature_names(cert)
    n = len(dom.get("cells_per_feature", []))
    rows = [
        ("input semantics", esc(cert.input_semantics)),
        ("eta", f"{r.eta:g} ({esc(r.eta_units)}; margin scale sigma {r.margin_scale:.6g})"),
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
                f"{code(p.path)} SHA-256 {code(p.sha256)}; {p.n_estimators} isolation trees, "
                f"{p.max_samples} rows each, seed {p.seed}",
            )
        )
    rows += [
        (
            "domain",
            f"{n} features; binary: {esc(_named(dom.get('binary_features', []), names))}; "
            f"integer: {esc(_named(dom.get('integer_features', []), names))}; bounds: "
            + ("training min/max box" if dom.get("bounds") else "none (every float32)")
            + "; NaN excluded",
        ),
        ("E_req (compressed margin)", f"{cert.scaling.compressed_margin:.6g}"),
    ]
    out = "<h2 id='region'>Region</h2>" + table(("parameter", "value"), rows, raw=True)
    out += _narrowing_notes(dom, names)
    out += "<h3>Coverage of the training data</h3>"
    if r.coverage is None:
        out += (
            f"<p>{r.samples_kept} training rows inside the region, {r.samples_dropped} "
            "outside (this certificate predates the per-cause counts).</p>"
        )
        return out
    out += coverage_svg(r.coverage)
    c = r.coverage
    rows = [
        (
            swatch(COVERAGE_COLOURS[k]) + esc(COVERAGE_NAMES[k]),
            f"<td class='num'>{getattr(c, k)}</td>",
            f"<td class='num'>{getattr(c, k) / c.rows:.1%}</td>" if c.rows else "<td></td>",
        )
        for k in COVERAGE_COLOURS
    ]
    out += table(("where", "rows", "share"), rows, raw=True, cells=True)
    if c.tie_band:
        out += (
            f"<p class='note'>{c.tie_band} rows lie in the float32 tie band: the original's "
            "own margin there is within the noise floor of its float32 scores, so "
            "onnxruntime's label is not fixed by the exact scores. No region covers them "
            "(eta = 0 included) and the compressed model may label them differently.</p>"
        )
    return out + _missing_notes(cert)


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
    out = "<h2 id='sizes'>Sizes and lower bound</h2>" + bars_svg(bars, "trees")
    out += table(("", "original", "compressed"), rows)
    out += _deployment(cert)
    if s.time_limit_reached:
        out += (
            "<p><b>Time limit reached</b>: the run did not end by itself; a longer run may "
            "certify a smaller model.</p>"
        )
    if s.stop_reason:
        out += f"<p>The run ended at step {esc(s.stop_reason)}.</p>"
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
    elif (
        s.certified
        and s.size_lower_bound >= s.trees_after
        and cert.compressed.max_depth <= depth  # the bound is about trees of depth <= depth
    ):
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
        out += "<h3>Boundary witnesses</h3>" + table(
            ("feature", "x[feature]", "next float32 value", "label", "label next"),
            [(w.feature, f"{w.x[w.feature]:.9g}", f"{w.value_next:.9g}", w.label, w.label_next)
             for w in shown],
        )  # fmt: skip
        out += more(len(s.boundary_witnesses), len(shown))
    return out


def _tree(cert: Certificate, ens) -> str:
    """The certified tree for an auditor: a drawing (small trees) and its rules, the
    features by the training data's column names."""
    if ens is None:
        return ""
    from pace_cert.model.tree_text import tree_rules, tree_svg

    names = cert.data.feature_names if cert.data is not None else None
    tree = ens.trees[0]
    svg = tree_svg(tree, ens.classes, names)
    rules = "\n".join(tree_rules(tree, ens.classes, names))
    n = cert.compressed.leaves
    out = (
        "<h3 id='tree'>The certified tree</h3><p>The compressed model is one decision tree "
        f"of {n} leaves and depth {cert.compressed.max_depth} (read from "
        "<code>compressed.onnx</code> beside this certificate, its SHA-256 the certified "
        "one). A row goes left (<em>yes</em>) when its feature is at most the threshold, "
        "as onnxruntime compares float32 values; every leaf predicts one class.</p>"
    )
    if svg is not None:
        out += f"<div class='plot' style='overflow-x:auto'>{svg}</div>"
    return out + (
        f"<details{' open' if svg is None and n <= 200 else ''}><summary>Rules "
        f"({n} leaves)</summary><pre>{esc(rules)}</pre></details>"
    )


def _deployment(cert: Certificate) -> str:
    """Both models' size in what deployment pays for (``summary.deployment``, schema
    1.7), before and after, each row tagged with what verify does with it; the latency
    labelled a measurement, with how it was measured (nothing for older certificates)."""
    dep = cert.summary.deployment
    if dep is None:
        return ""
    b, a = dep.before, dep.after
    checked = "<span class='tag checked'>checked</span>"
    with_data = "<span class='tag checked'>checked with --data</span>"
    measured = "<span class='tag stated'>measured, not re-checked</span>"

    def us(v: float | None) -> str:
        return "-" if v is None else f"{v:.3g} µs"

    def size(n: int) -> str:
        return f"{file_size(n)} ({n} bytes)"

    rows = [
        ("trees", b.trees, a.trees, checked),
        ("leaves", b.leaves, a.leaves, checked),
        ("internal nodes (splits)", b.internal_nodes, a.internal_nodes, checked),
        ("maximum depth", b.max_depth, a.max_depth, checked),
        (
            f"comparisons per prediction (mean over {dep.rows} data rows)",
            f"{b.mean_comparisons:.2f}",
            f"{a.mean_comparisons:.2f}",
            with_data,
        ),
        ("ONNX file size", size(b.onnx_bytes), size(a.onnx_bytes), checked),
        (
            "latency per row, the data in one batch",
            us(b.latency_us_per_row_batch),
            us(a.latency_us_per_row_batch),
            measured,
        ),
        ("latency at a batch of 1", us(b.latency_us_batch1), us(a.latency_us_batch1), measured),
    ]
    ls = dep.latency_setup
    if ls is None:
        note = f"Latency: {esc(dep.latency_note or 'not measured')}."
    else:
        note = (
            f"Latency is measured by compress on this machine, not re-checked by verify: "
            f"onnxruntime {esc(ls.onnxruntime)} ({esc(ls.provider)}, {ls.intra_op_threads} "
            f"intra-op and {ls.inter_op_threads} inter-op thread, {esc(ls.execution_mode)} "
            f"execution), {esc(ls.fetched)}; the median of {ls.batch1_calls} single-row "
            f"calls per model and of {ls.batch_repeats} calls on {ls.batch_rows} rows at "
            f"once; {esc(ls.order)} ({ls.seconds:.2f} s in all). Another machine, or the "
            "same one under other load, gives other numbers."
        )
    return (
        "<h3 id='deployment'>Size in what deployment pays for</h3>"
        + table(("", "original", "compressed", "verify"), rows, raw=True)
        + "<p class='note'>Comparisons per prediction: the split nodes on each tree's path "
        "to the row's leaf, summed over the trees, as onnxruntime walks them"
        + (
            " (counted on the trees with the input transform folded into the thresholds)"
            if cert.original.input_transform is not None
            else ""
        )
        + f". {note}</p>"
    )


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
    return "<h2 id='proofs'>Per-pair proofs</h2>" + intro + table(head, rows)


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
    out += history_svg(cert)
    counts: dict[str, list[int]] = {}
    for _, h in hist:
        counts.setdefault(h.phase, []).append(h.iteration)
    rows = [
        (ph, len(its), max(its)) for ph in PHASES if (its := counts.get(ph))
    ]  # fmt: skip
    out += table(("loop", "samples", "rounds"), rows)
    if cert.summary.l1_values and len(cert.summary.l1_values) > 1:
        out += "<h3>L1 objective at the end of each L1 loop</h3>" + line_svg(
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
    body = table(("on the training data", "share"), [(a, f"{b:.4f}") for a, b in rows])
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
            esc(c.key),
            esc(c.text),
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
        + table(("verify", "claim", "what the certificate states"), rows, raw=True)
    )


def _learners(cert: Certificate) -> str:
    shown = cert.learners[:TABLE_ROWS]
    rows = [
        (lr.index, lr.origin, f"{lr.weight:.6g}", lr.merged, ints(lr.original_trees) or "-")
        for lr in shown
    ]
    return (
        "<h2 id='learners'>Compressed trees</h2>"
        + table(("tree", "origin", "weight", "learners merged", "original trees"), rows)
        + more(len(cert.learners), len(shown))
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
    return "<h2 id='run'>Run record (stated)</h2>" + table(("", ""), rows)


def _technical(cert: Certificate) -> str:
    """The constants behind the proof, each with one sentence saying what it means."""
    r, pairs = cert.region, cert.pairs
    conflicts = [p.conflicts for p in pairs]
    powers = sorted({p.scale_exp for p in pairs if p.status == "INFEASIBLE"})
    rows = [
        (
            "E_req (compressed margin)",
            f"{cert.scaling.compressed_margin:.6g}",
            "Inside the region the compressed model's score for the original's label beats "
            "every other class by more than this, which covers onnxruntime's float32 "
            "rounding, so its label cannot flip.",
        ),
        (
            "c_o (margin threshold)",
            f"{r.margin_threshold:.6g}",
            "An input is in the region only where the original's score for its label beats "
            "every other class by more than this: c_o = max(eta x sigma, runtime guard), in "
            "score units.",
        ),
        (
            "delta_abs (plausibility threshold)",
            "none" if r.delta_abs is None else f"{r.delta_abs:.6g}",
            "delta = 0: no input is left out for being atypical."
            if r.delta_abs is None
            else "The region keeps the inputs with "
            + plausibility_words(r.delta_abs, r.delta)
            + ".",
        ),
        (
            "CP-SAT conflicts",
            f"{sum(conflicts)} in all, at most {max(conflicts, default=0)} for one pair",
            "Dead ends the CP-SAT solver backed out of while proving the pairs: a measure of "
            "how hard the proofs were, not of how strong they are.",
        ),
        (
            "scaling power p",
            "-" if not powers else ", ".join(map(str, powers)),
            "Each pair's condition was multiplied by 2^p and rounded to integers for CP-SAT, "
            "which needs integer coefficients; the rounding bound in the proof table covers "
            "the rounding error.",
        ),
    ]
    return "<h2 id='technical'>Technical details</h2>" + table(
        ("quantity", "value", "what it means"), rows
    )


def _feature_names(cert: Certificate) -> list[str] | None:
    return cert.data.feature_names if cert.data is not None else None


def _named(features: list[int], names: list[str] | None) -> str:
    """Features by name with their index (by index alone without names)."""
    if not features:
        return "none"
    if not names:
        return ints(features)
    return ", ".join(f"{names[i]} ({i})" for i in features)


def _narrowing_notes(dom: dict, names: list[str] | None) -> str:
    return "".join(f"<p class='note'>{esc(line)}</p>" for line in narrowing_lines(dom, names))


def _missing_notes(cert: Certificate) -> str:
    return "".join(f"<p class='note'>{esc(line)}.</p>" for line in missing_lines(cert))
