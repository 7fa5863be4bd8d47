"""`pace-cert report`: one self-contained HTML page an auditor reads (issue 40).

The default tests check the page's content and that it loads nothing; the slow test
opens it in headless Chromium (Debian's package) and checks the rendered page: its DOM
holds the tables and plots, and the screenshot is not blank."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from pace_cert.cli.main import app

runner = CliRunner()
CHROMIUM = Path("/usr/bin/chromium")
SECTIONS = (
    "summary",
    "models",
    "region",
    "technical",
    "sizes",
    "proofs",
    "history",
    "agreement",
    "claims",
    "learners",
)


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


class _Page(HTMLParser):
    """Tags, ids, attribute values and text of a page; raises on unbalanced tags."""

    VOID = frozenset(
        {"meta", "br", "img", "input", "link", "hr", "rect", "line", "circle", "polyline"}
    )

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.ids: set[str] = set()
        self.attrs: list[str] = []
        self.text: list[str] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [v or "" for _, v in attrs]
        self.ids |= {v for k, v in attrs if k == "id"}
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [v or "" for _, v in attrs]

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    assert page.stack == [], page.stack
    return page


@pytest.fixture(scope="module")
def eta_delta(compress_run):
    r = compress_run("compas", "rf", 20, 2, "--mode", "prune", "--eta", "0.1", "--delta", "0.1")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return r


def _report(cert: Path, out: Path) -> str:
    res = invoke("report", cert, "--out", out)
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == f"wrote {out}"
    return out.read_text()


def test_report_holds_what_an_auditor_reads(eta_delta, tmp_path):
    cert_path = eta_delta.out / "certificate.json"
    cert = json.loads(cert_path.read_text())
    html = _report(cert_path, tmp_path / "report.html")
    page = parse(html)
    assert set(SECTIONS) <= page.ids
    assert page.tags.count("table") >= 8 and page.tags.count("svg") >= 3
    text = " ".join(page.text)
    for sha in (cert["original"]["sha256"], cert["compressed"]["sha256"]):
        assert sha in text  # models and hashes
    cov = cert["region"]["coverage"]
    assert "low confidence (margin within eta)" in text and str(cov["low_confidence"]) in text
    assert "Certified." in text and "What verify re-checks" in text
    assert "Boundary witnesses" in text and "checked by verify" in text
    n_hist = sum(len(p["history"]) for p in cert["pairs"])
    assert f"{n_hist} separating samples" in text
    assert text.count("INFEASIBLE") >= len(cert["pairs"])
    # the history plot has one bar segment per (round, pair) with samples
    assert html.count("round ") >= 2 and "separating samples per round" in html


def _first_paragraph(html: str) -> str:
    """The text of the page's first paragraph after the heading's note."""
    start = re.search(r"<p id=[\"']summary[\"']", html).start()  # the browser writes "
    return " ".join(parse(html[start : html.index("</p>", start) + 4]).text)


def _expected_first_paragraph(cert: dict) -> list[str]:
    s, cov = cert["summary"], cert["region"]["coverage"]
    share = f"{cov['inside'] / cov['rows']:.0%}"
    return [
        "What was proved.",
        f"The compressed model ({s['trees_after']} trees, down from {s['trees_before']}) "
        "gives the same label as the original model for every input in the region",
        "Over which inputs.",
        f"beats every other class by more than eta = {cert['region']['eta']:g} (vote share)",
        f"at least as typical as the {1 - cert['region']['delta']:.0%} most typical training rows",
        f"Of the {cov['rows']} rows of the training data, {cov['inside']} ({share}) lie inside "
        "the region",
        "How far from minimal.",
    ]


def test_report_opens_with_a_paragraph_in_plain_words(eta_delta):
    """Without a browser: the first paragraph (before every section) says what was
    proved, over which inputs, how much of the data that covers, and how far from
    minimal; the time limit only when the certificate records it."""
    from pace_cert.cert.certificate import Certificate
    from pace_cert.report import render

    raw = (eta_delta.out / "certificate.json").read_text()
    cert = Certificate.model_validate_json(raw)
    html = render(cert)
    assert html.index("<p id='summary'") < html.index("<h2")
    first = _first_paragraph(html)
    for words in _expected_first_paragraph(json.loads(raw)):
        assert words in first, (words, first)
    s = cert.summary
    b = s.size_lower_bound
    if b is not None and b >= s.trees_after:
        assert f"It is minimal: no faithful model of fewer than {b} trees" in first
    elif b is not None and b > 1:
        assert f"at most {s.trees_after - b} more than the smallest possible" in first
    else:
        assert "no useful lower bound" in first
    object.__setattr__(s, "time_limit_reached", None)  # an older certificate does not say
    assert "Time limit" not in _first_paragraph(render(cert))
    object.__setattr__(s, "time_limit_reached", True)
    first = _first_paragraph(render(cert))
    assert "The run's time limit was reached: a longer run may certify a smaller model" in first
    object.__setattr__(s, "time_limit_reached", False)
    assert "before its time limit" in _first_paragraph(render(cert))


def test_report_technical_details_say_what_each_constant_means(eta_delta):
    from pace_cert.cert.certificate import Certificate
    from pace_cert.report import render

    cert = Certificate.model_validate_json((eta_delta.out / "certificate.json").read_text())
    html = render(cert)
    tech = html[html.index("<h2 id='technical'>") :]
    tech = " ".join(parse(tech[: tech.index("</table>") + 8]).text)
    r = cert.region
    conflicts = sum(p.conflicts for p in cert.pairs)
    for name, value, meaning in (
        ("E_req", f"{cert.scaling.compressed_margin:.6g}", "so its label cannot flip"),
        ("c_o", f"{r.margin_threshold:.6g}", "An input is in the region only where"),
        ("delta_abs", f"{r.delta_abs:.6g}", "isolation-forest path-length score"),
        ("CP-SAT conflicts", f"{conflicts} in all", "how hard the proofs were"),
        ("scaling power p", str(cert.pairs[0].scale_exp), "multiplied by 2^p"),
    ):
        assert name in tech and value in tech and meaning in tech, (name, tech)
    assert "higher is more typical" in tech


def test_report_names_the_features_and_what_integer_infer_took(eta_delta):
    """The domain by the CSV's column names (indices beside them), and the narrowing by
    --binary / --integer infer with the flag that widens it."""
    from pace_cert.cert.certificate import Certificate
    from pace_cert.report import render

    cert = Certificate.model_validate_json((eta_delta.out / "certificate.json").read_text())
    names = eta_delta.data.read_text().splitlines()[0].split(",")[:-1]
    assert cert.data is not None and cert.data.feature_names == names
    text = " ".join(parse(render(cert)).text)
    dom = cert.region.domain
    kinds = [("binary", dom["binary_features"]), ("integer", dom["integer_features"])]
    assert any(f for _, f in kinds)
    for kind, feats in kinds:
        if feats:
            assert f"{names[feats[0]]} ({feats[0]})" in text
            assert f"--{kind} infer" in text and f"--{kind} none certifies every float32" in text


def test_report_is_self_contained(eta_delta, tmp_path):
    """No script, nothing loaded from anywhere: every attribute is local (anchors)."""
    html = _report(eta_delta.out / "certificate.json", tmp_path / "r.html")
    page = parse(html)
    assert "script" not in page.tags and "img" not in page.tags and "link" not in page.tags
    assert "iframe" not in page.tags and "object" not in page.tags
    assert not [a for a in page.attrs if "//" in a or a.startswith(("http", "data:"))]
    assert "url(" not in html and "@import" not in html


def test_report_of_an_inconclusive_certificate(zoo_model, tmp_path):
    from pace_cert.app import run_compress
    from pace_cert.settings import CompressConfig

    model, data = zoo_model("compas", "rf", 20, 2)
    cfg = CompressConfig.of(mode="prune", time_limit=0.001)
    res = run_compress(model, data, tmp_path / "out", cfg)
    assert res.exit_code == 2
    page = parse(_report(tmp_path / "out" / "certificate.json", tmp_path / "r.html"))
    text = " ".join(page.text)
    assert "Inconclusive." in text and "the two files are identical" in text
    assert "every pair UNKNOWN" in text
    assert "Time limit reached" in text and "a longer run may certify a smaller model" in text


def test_report_of_an_older_certificate(eta_delta, tmp_path):
    """Schema 1.3: history compressed labels, no coverage or data record."""
    cert = json.loads((eta_delta.out / "certificate.json").read_text())
    cert["schema_version"] = "1.3"
    del cert["data"]
    cert["region"]["coverage"] = None
    for p in cert["pairs"]:
        for h in p["history"]:
            h["compressed_label"] = h["original_label"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(cert))
    text = " ".join(parse(_report(old, tmp_path / "r.html")).text)
    assert "predates the per-cause counts" in text


def test_report_bad_input(eta_delta, tmp_path):
    res = invoke("report", tmp_path / "missing.json", "--out", tmp_path / "r.html")
    assert res.exit_code == 3 and "missing.json" in res.stderr and "not found" in res.stderr
    assert not (tmp_path / "r.html").exists()
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    res = invoke("report", bad, "--out", tmp_path / "r.html")
    assert res.exit_code == 3 and "not a valid certificate" in res.stderr
    res = invoke("report", eta_delta.out / "certificate.json", "--out", tmp_path)
    assert res.exit_code == 3 and "is a directory" in res.stderr
    res = invoke("report", eta_delta.out / "certificate.json", "--out", tmp_path / "no" / "r.html")
    assert res.exit_code == 3 and "cannot write the report" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------- a real browser


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "profile"
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
    ]
    try:
        return subprocess.run(
            [str(CHROMIUM), *flags, *args], capture_output=True, text=True, timeout=180
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs headless Chromium at /usr/bin/chromium (apt-get install chromium)",
)
def test_report_renders_in_chromium(eta_delta, tmp_path):
    """The page as a browser renders it: the DOM Chromium builds holds every table and
    plot, and the screenshot shows them (not a blank page)."""
    Image = pytest.importorskip("PIL.Image", reason="needs Pillow (a matplotlib dependency)")

    report = tmp_path / "report.html"
    _report(eta_delta.out / "certificate.json", report)
    url = report.resolve().as_uri()
    dom = _chromium(tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = parse(dom.stdout[dom.stdout.index("<html") :])
    assert set(SECTIONS) <= page.ids
    # the first paragraph as the browser renders it, before every section
    cert = json.loads((eta_delta.out / "certificate.json").read_text())
    first = _first_paragraph(dom.stdout)
    for words in _expected_first_paragraph(cert):
        assert words in first, (words, first)
    assert dom.stdout.index("What was proved.") < dom.stdout.index("<h2")
    assert page.tags.count("table") >= 8 and page.tags.count("svg") >= 3
    assert page.tags.count("rect") >= 10  # bars of the coverage, size and history plots
    shot = tmp_path / "report.png"
    res = _chromium(tmp_path, "--window-size=1200,3000", f"--screenshot={shot}", url)
    assert res.returncode == 0 and shot.exists(), res.stderr[-2000:]
    im = Image.open(shot).convert("RGB")
    assert im.size == (1200, 3000)
    colours = im.getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 50  # text, tables and plots, not a blank page
    px = np.asarray(im, np.int32).reshape(-1, 3)
    # the plots' colours (the coverage bar's green, the pairs' blue and red) are drawn
    for rgb in ((0x22, 0x88, 0x33), (0x44, 0x77, 0xAA), (0xEE, 0x66, 0x77)):
        near = int((np.abs(px - np.array(rgb)).max(axis=1) <= 8).sum())
        assert near > 500, (rgb, near)
    assert int((px.sum(axis=1) < 200).sum()) > 5000  # text


def test_report_states_the_size_deployment_pays_for(eta_delta):
    """Before and after, each row tagged with what verify does with it; the latency a
    measurement, said so, with its setup, or why it is missing; none in older
    certificates."""
    from pace_cert.cert.certificate import Certificate
    from pace_cert.report import render

    cert = Certificate.model_validate_json((eta_delta.out / "certificate.json").read_text())
    dep = cert.summary.deployment
    page = parse(render(cert))
    assert "deployment" in page.ids
    text = " ".join(page.text)
    assert "Size in what deployment pays for" in text
    assert f"comparisons per prediction (mean over {dep.rows} data rows)" in text
    assert f"{dep.before.mean_comparisons:.2f}" in text
    assert f"({dep.after.onnx_bytes} bytes)" in text
    assert "measured, not re-checked" in text and "checked with --data" in text
    assert "Latency is measured by compress on this machine, not re-checked" in text
    assert f"onnxruntime {dep.latency_setup.onnxruntime}" in text
    unmeasured = dep.model_copy(
        update={
            "latency_setup": None,
            "latency_note": "not measured: no time left",
            "before": dep.before.model_copy(update={"latency_us_batch1": None}),
        }
    )
    cert.summary.deployment = unmeasured
    assert "Latency: not measured: no time left." in " ".join(parse(render(cert)).text)
    cert.summary.deployment = None
    assert "deployment" not in parse(render(cert)).ids
