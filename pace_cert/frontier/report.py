"""``pace-cert report DIR/frontier.json``: the frontier on one self-contained HTML page
(an SVG plot of certified trees against the share of test rows inside each rung's
region, the proved lower bounds beside each point, the table) and each rung's own
report page (:func:`pace_cert.report.write_report`) beside it, linked from the table."""

from __future__ import annotations

import math
from pathlib import Path

from pace_cert.errors import InputError
from pace_cert.frontier.record import FrontierRecord, RungRecord
from pace_cert.frontier.table import legend, proved_bound, recommendation, table_header, table_rows
from pace_cert.report.plots import PALETTE, esc, svg


def rung_page(out: Path, rung: str) -> Path:
    """Where a rung's own report goes: beside the frontier page."""
    return out.with_name(f"{out.stem}-{rung}.html")


def write_frontier_report(frontier_path: Path, out: Path) -> list[Path]:
    """Read ``frontier_path``, write the frontier page to ``out`` and each rung's report
    beside it; returns the pages written (the frontier page first)."""
    from pace_cert.frontier.record import load_frontier
    from pace_cert.plumbing.outputs import write_atomic
    from pace_cert.report import write_report

    frontier_path, out = Path(frontier_path), Path(out)
    rec = load_frontier(frontier_path)
    if out.is_dir():
        raise InputError(out, "is a directory, expected an HTML file name")
    pages: dict[str, Path] = {}
    for r in rec.rungs:
        cert = frontier_path.parent / r.name / "certificate.json"
        if r.status != "empty region" and cert.is_file():
            pages[r.name] = rung_page(out, r.name)
            write_report(cert, pages[r.name])
    try:
        write_atomic(out, render(rec, pages).encode())
    except OSError as e:
        raise InputError(out, f"cannot write the report ({e.strerror or e})") from None
    return [out, *pages.values()]


def render(rec: FrontierRecord, pages: dict[str, Path]) -> str:
    from pace_cert.report.html import CSS, table

    rows = []
    for r, cells in zip(rec.rungs, table_rows(rec)):
        name = esc(r.name)
        link = f"<a href='{esc(pages[r.name].name)}'>{name}</a>" if r.name in pages else name
        rows.append([link, *(esc(c) for c in cells[1:])])
    head = (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>pace-cert frontier: {esc(Path(rec.model).name)}</title>"
        f"<style>{CSS}</style></head><body><main>"
    )
    units = esc(rec.eta_units)
    return (
        head
        + f"<h1>Certified size-guarantee frontier</h1><p class='mono'>{esc(rec.model)}</p>"
        + f"<p>Mode {esc(rec.mode)}, backend {esc(rec.backend)}, model reuse between rungs "
        + f"{'on' if rec.reuse else 'off'}, {rec.seconds:.0f} s in all"
        + (f" (time limit {rec.time_limit:g} s)" if rec.time_limit is not None else "")
        + f". eta is a {units} margin; delta the share of training rows left out as least "
        "plausible. Each rung is its own certificate: <code>pace-cert verify</code> checks "
        "its directory on its own.</p>"
        + f"<p><strong>{esc(recommendation(rec))}</strong></p>"
        + "<h2>Trees against coverage</h2>"
        + frontier_svg(rec)
        + "<p class='note'>Each point is a rung: the trees of its written model against the "
        "share of the test rows (the data rows without --test) inside its region. Beside "
        "it, the proved lower bound when it says more than 1 tree (no faithful model of the "
        "original's depth has fewer trees), drawn as a tick.</p>"
        + "<h2>Rungs</h2>"
        + table(table_header(rec), rows, raw=True)
        + "<ul class='note'>"
        + "".join(f"<li>{esc(line)}</li>" for line in legend(rec))
        + "</ul>"
        + "</main></body></html>\n"
    )


def _coverage_share(r: RungRecord) -> float | None:
    c = r.test if r.test is not None else r.data
    return None if c is None or not c.rows else c.inside / c.rows


def frontier_svg(rec: FrontierRecord) -> str:
    """Trees (y) against the share of rows inside the region (x), one point per rung
    with its name and bounds; the original's size as a dashed line."""
    width, height, left, right, top, bottom = 760, 400, 50, 170, 56, 40
    drawn = ("empty region", "not started", "nothing written")
    pts = [
        (r, x) for r in rec.rungs if r.status not in drawn and (x := _coverage_share(r)) is not None
    ]
    n0 = max([r.trees_before for r in rec.rungs] + [1])
    pw, ph = width - left - right, height - top - bottom
    # the x axis starts a little below the smallest share shown (points near 100 % spread)
    lo = max(0.0, math.floor((min([x for _, x in pts], default=0.0) - 0.05) * 10) / 10)

    def px(share: float) -> float:
        return left + pw * (share - lo) / (1 - lo)

    def py(trees: float) -> float:
        return top + ph * (1 - trees / n0)

    parts = [
        f"<line x1='{left}' y1='{top + ph}' x2='{left + pw}' y2='{top + ph}' stroke='#888'/>",
        f"<line x1='{left}' y1='{top}' x2='{left}' y2='{top + ph}' stroke='#888'/>",
        f"<line x1='{left}' y1='{py(n0):.1f}' x2='{left + pw}' y2='{py(n0):.1f}' "
        f"stroke='#bbb' stroke-dasharray='4 3'/>",
        f"<text x='{left + 4}' y='{py(n0) - 4:.1f}'>original {n0}</text>",
        f"<text x='{left - 6}' y='{py(0) + 4:.1f}' text-anchor='end'>0</text>",
        f"<text x='{left - 6}' y='{py(n0) + 4:.1f}' text-anchor='end'>{n0}</text>",
        f"<text x='{left}' y='{height - 8}'>{100 * lo:.0f} %</text>",
        f"<text x='{left + pw}' y='{height - 8}' text-anchor='end'>all rows inside</text>",
        f"<text x='{left + pw / 2}' y='{height - 8}' text-anchor='middle'>"
        "share of test rows inside the region</text>",
        f"<text x='4' y='{top - 24}'>trees</text>",
    ]
    placed: list[tuple[float, float]] = []  # label anchors so far: no two overlap
    for i, (r, share) in enumerate(pts):
        colour = PALETTE[i % len(PALETTE)]
        x, y = px(share), py(r.trees_after)
        ly = y - 6
        while any(abs(ly - py_) < 13 and abs(x - px_) < 150 for px_, py_ in placed):
            ly -= 13
        placed.append((x, ly))
        bound = proved_bound(r)
        label = f"{r.name}: {r.trees_after}" + (f" (≥ {bound} proved)" if bound else "")
        parts.append(
            f"<circle cx='{x:.1f}' cy='{y:.1f}' r='5' fill='{colour}'>"
            f"<title>{esc(label)}; {r.status}</title></circle>"
            f"<text x='{x + 8:.1f}' y='{ly:.1f}'>{esc(label)}</text>"
        )
        for v in [bound] if bound else []:
            parts.append(
                f"<line x1='{x - 6:.1f}' y1='{py(v):.1f}' x2='{x + 6:.1f}' y2='{py(v):.1f}' "
                f"stroke='{colour}' stroke-width='2'><title>{esc(r.name)}: bound {v}"
                "</title></line>"
            )
    return svg(width, height, "certified trees against the region's coverage", "".join(parts))


def write_any_report(path: Path, out: Path) -> list[Path]:
    """The report of ``path``: a frontier.json (the frontier page and each rung's page)
    or a certificate.json; returns the pages written."""
    from pace_cert.report import write_report

    if _is_frontier(Path(path)):
        return write_frontier_report(Path(path), Path(out))
    write_report(path, out)
    return [Path(out)]


def _is_frontier(path: Path) -> bool:
    """Whether ``path`` is a frontier.json: a JSON object with a ``rungs`` list."""
    import json

    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False  # write_report says what is wrong with it
    return isinstance(doc, dict) and isinstance(doc.get("rungs"), list)
