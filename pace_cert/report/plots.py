"""The report's plots as inline SVG, written by hand (no plotting library, nothing
loaded at view time): the data's coverage bar, bar charts, the separating-sample history
per phase and round, line plots."""

from __future__ import annotations

import html
from collections.abc import Sequence

from pace_cert.cert.certificate import Certificate, Coverage

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
    "missing": "#666666",
}


COVERAGE_NAMES = {
    "inside": "inside the region",
    "low_confidence": "low confidence (margin within eta)",
    "implausible": "implausible (A(x) < delta_abs)",
    "tie_band": "float32 tie band (margin within the runtime guard)",
    "outside_domain": "outside the feature domain",
    "missing": "missing values (NaN: outside every proof)",
}


PHASES = ("start", "merge", "l1", "l0", "boost", "refit")


def coverage_svg(c: Coverage) -> str:
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
            f"<title>{esc(COVERAGE_NAMES[k])}: {n}</title></rect>"
        )
        if w > 40:
            parts.append(
                f"<text x='{x + w / 2:.2f}' y='22' text-anchor='middle' "
                f"style='fill:#fff;font-weight:600'>{n}</text>"
            )
        x += w
    return svg(
        width,
        height,
        "coverage of the training rows",
        "".join(parts) + f"<text x='0' y='44'>0</text><text x='{width}' y='44' "
        f"text-anchor='end'>{c.rows} rows</text>",
    )


def bars_svg(bars: Sequence[tuple[str, int, str]], unit: str) -> str:
    width, row = 760, 30
    label_w = 110
    top = max([v for _, v, _ in bars] + [1])
    parts = []
    for i, (name, v, colour) in enumerate(bars):
        y = 6 + i * row
        w = (width - label_w - 60) * v / top
        parts.append(
            f"<text x='0' y='{y + 16}'>{esc(name)}</text>"
            f"<rect x='{label_w}' y='{y}' width='{max(w, 1):.2f}' height='{row - 8}' "
            f"fill='{colour}'><title>{esc(name)}: {v} {unit}</title></rect>"
            f"<text x='{label_w + w + 6:.2f}' y='{y + 16}'>{v} {unit}</text>"
        )
    return svg(width, 10 + row * len(bars), f"sizes in {unit}", "".join(parts))


def history_svg(cert: Certificate) -> str:
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
    parts = [axis(left, top, plot_h, peak, width)]
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
                    f"{it}, pair {esc(pair_names[pi])}: {n}</title></rect>"
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
                f"fill='{PALETTE[pi]}'/><text x='{lx + 16}' y='{ly}'>pair {esc(name)}</text>"
            )
    else:
        legend.append(
            f"<text x='{left}' y='{top + plot_h + 36}'>{len(pair_names)} pairs; colours "
            "repeat (hover a bar for its pair)</text>"
        )
    height = top + plot_h + 44 + 18 * ((len(pair_names) - 1) // 6 if len(legend) > 1 else 0)
    return svg(
        width,
        height,
        "separating samples per round",
        "".join(parts + legend),
    )


def line_svg(values: Sequence[float], xlabel: str, ylabel: str) -> str:
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
        f"{esc(xlabel)} (1-{n})</text>"
    )
    return svg(width, top + plot_h + 26, f"{ylabel} by {xlabel}", body)


def axis(left: float, top: float, plot_h: float, peak: int, width: float = 900) -> str:
    return (
        f"<line x1='{left}' y1='{top}' x2='{left}' y2='{top + plot_h}' stroke='#888'/>"
        f"<line x1='{left}' y1='{top + plot_h}' x2='{width - 10}' y2='{top + plot_h}' "
        "stroke='#888'/>"
        f"<text x='{left - 30}' y='{top + plot_h / 2}' transform='rotate(-90 {left - 30} "
        f"{top + plot_h / 2})' text-anchor='middle'>samples</text>"
        f"<text x='{left - 6}' y='{top + 10}' text-anchor='end'>{peak}</text>"
        f"<text x='{left - 6}' y='{top + plot_h}' text-anchor='end'>0</text>"
    )


def svg(width: float, height: float, title: str, body: str) -> str:
    return (
        f"<svg width='{width:.0f}' height='{height:.0f}' "
        f"viewBox='0 0 {width:.0f} {height:.0f}' role='img' aria-label='{esc(title)}'>"
        f"<title>{esc(title)}</title>{body}</svg>"
    )


def esc(v: object) -> str:
    return html.escape(str(v), quote=True)
