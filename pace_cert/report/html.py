"""The report's HTML building blocks: the stylesheet, tables, code and number cells,
colour swatches (the frontier page uses them too)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pace_cert.report.plots import esc

#: at most this many rows of the long tables (learners, witnesses) are shown
TABLE_ROWS = 200

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


def code(v: object) -> str:
    return f"<code>{esc(v)}</code>"


def ints(v: Iterable[int]) -> str:
    return ", ".join(str(i) for i in v)


def swatch(colour: str) -> str:
    return (
        f"<svg width='12' height='12' style='display:inline;margin:0 6px 0 0'>"
        f"<rect width='12' height='12' fill='{colour}'/></svg>"
    )


def more(total: int, shown: int) -> str:
    if total <= shown:
        return ""
    return f"<p class='note'>First {shown} of {total} shown; the certificate lists all.</p>"


def table(
    head: Sequence[str], rows: Iterable[Sequence[object]], raw: bool = False, cells: bool = False
) -> str:
    """An HTML table. ``raw``: cells are HTML already (else escaped; numbers right
    aligned); ``cells``: the cells after the first are whole ``<td>`` elements."""

    def cell(v: object) -> str:
        if cells and isinstance(v, str) and v.startswith("<td"):
            return v
        if isinstance(v, int | float) and not isinstance(v, bool):
            return f"<td class='num'>{v}</td>"
        return f"<td>{v if raw else esc(v)}</td>"

    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(cell(v) for v in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"
