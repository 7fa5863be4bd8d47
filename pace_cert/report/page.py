"""``pace-cert report``: one self-contained HTML page an auditor reads.

Built from the certificate alone (no model is loaded, no solver runs): the models and
their hashes, the region and where the training rows lie with respect to it, sizes and
the size lower bound, the per-pair proof table, the separating-sample history as a
plot, agreement on the data, and, claim by claim, what ``pace-cert verify`` re-checks
and what it takes as stated (:func:`pace_cert.cert.catalog.claim_catalog`). Plots are
inline SVG written by hand (``plots.py``); the page has no script and loads nothing from anywhere.
"""

from __future__ import annotations

from pathlib import Path

from pace_cert.cert.certificate import Certificate
from pace_cert.errors import InputError
from pace_cert.report.html import CSS
from pace_cert.report.plots import esc
from pace_cert.report.sections import sections


def write_report(cert_path: Path, out: Path) -> None:
    """Read ``cert_path`` and write the report to ``out`` (atomically); InputError for
    an unreadable or invalid certificate or an output path that cannot be written."""
    from pace_cert.cert.verify import load_certificate
    from pace_cert.plumbing.outputs import write_atomic

    cert = load_certificate(Path(cert_path))
    page = render(cert, str(cert_path), single_tree(cert, Path(cert_path).parent))
    out = Path(out)
    if out.is_dir():
        raise InputError(out, "is a directory, expected an HTML file name")
    try:
        write_atomic(out, page.encode())
    except OSError as e:
        raise InputError(out, f"cannot write the report ({e.strerror or e})") from None


def single_tree(cert: Certificate, folder: Path):
    """The compressed model's one tree, read from ``compressed.onnx`` beside the
    certificate when that file is the one certified (same SHA-256) and holds one tree;
    else None. The ensemble drawn by the page's tree section."""
    from pace_cert.cert.records import sha256_file
    from pace_cert.errors import PaceError
    from pace_cert.model.onnx_reader import read_ensemble

    path = folder / "compressed.onnx"
    if cert.compressed.trees != 1 or not path.is_file():
        return None
    if sha256_file(path) != cert.compressed.sha256:
        return None
    try:
        ens, _ = read_ensemble(path)
    except PaceError:
        return None
    return ens if ens.n_trees == 1 else None


def render(cert: Certificate, source: str = "certificate.json", tree=None) -> str:
    """The report of ``cert`` as one HTML document (``tree``: the compressed model when
    it is one tree, drawn with its rules; None: not shown)."""
    s = cert.summary
    parts = sections(cert, tree)
    title = f"pace-cert report: {s.status}, {s.trees_before} -> {s.trees_after} trees"
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body><main>"
        f"<h1>{esc(title)}</h1><p class='note'>Certificate <code>{esc(source)}</code>, schema "
        f"{esc(cert.schema_version)}, written by {esc(cert.tool)} {esc(cert.tool_version)} on "
        f"{esc(cert.created)}. Everything below is read from the certificate; "
        "<code>pace-cert verify ORIGINAL COMPRESSED CERTIFICATE</code> re-checks what the "
        "table <a href='#claims'>What verify re-checks</a> marks <em>checked</em>.</p>"
        + "".join(parts)
        + "</main></body></html>\n"
    )
