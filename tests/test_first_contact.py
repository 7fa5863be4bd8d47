"""A first run explains itself (issue 40): exit 2 says that nothing smaller was
certified, that the original was written unchanged and what to try; the summary states
the region's coverage of the data and the float32 tie band; progress shows the best
certified size, the lower bound and the time left; bad input, an empty region included,
is exit 3 with one line and nothing written."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from typer.testing import CliRunner

from pace_cert.cert.certificate import Certificate
from pace_cert.cli.main import ProgressDisplay, app

from .behaviour import RUNS, _model_and_data
from .helpers import tec_model

runner = CliRunner()
SEEDS = ("seeds", "rf", 10, 2)


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def one_error_line(res, *needles: str) -> str:
    """Exit 3, nothing on stdout, exactly one `error: ...` line naming every needle."""
    assert res.exit_code == 3, (res.exit_code, res.stdout, res.stderr, res.exception)
    assert res.stdout == "" and "Traceback" not in res.output
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    for needle in needles:
        assert needle.lower() in err.lower(), (needle, err)
    return err


def nothing_written(out: Path) -> None:
    assert not out.exists(), sorted(p.name for p in out.iterdir()) if out.is_dir() else out


def stump_model(d: Path, outliers: int) -> tuple[Path, Path]:
    """One stump on one feature, three classes: x <= 0.5 scores every class 1/3 (a tie:
    the tie band), x > 0.5 votes class 0. Rows: 400 - ``outliers`` at x = 0 and
    ``outliers`` at x = 100 (confident, and rare enough to be implausible at delta
    0.1)."""
    d.mkdir(parents=True, exist_ok=True)
    third = float(np.float32(1 / 3))
    m = tec_model(
        [0, 1, 2, 0, 1, 2], [third] * 3 + [1.0, 0.0, 0.0], threshold=0.5, labels=(0, 1, 2)
    )
    onnx.save(m, d / "model.onnx")
    rows = ["x,target"] + ["0,0"] * (400 - outliers) + ["100,0"] * outliers
    (d / "train.csv").write_text("\n".join(rows) + "\n")
    return d / "model.onnx", d / "train.csv"


# ------------------------------------------------------------------------ exit 2


@pytest.fixture(scope="module")
def unchanged_run(tmp_path_factory):
    """A decision tree (1 tree) on compas, global region: nothing smaller than one tree
    is faithful, so compress writes the original unchanged (exit 2)."""
    d = tmp_path_factory.mktemp("dt")
    run = next(r for r in RUNS if r.name == "dt-compas-prune-global")
    model, data = _model_and_data(run, d)
    res = invoke("compress", model, "--data", data, "--out", d / "out", "--mode", "prune")
    return model, data, d / "out", res


def test_exit_2_says_plainly_what_happened_and_what_to_try(unchanged_run):
    model, _, out, res = unchanged_run
    assert res.exit_code == 2, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith("inconclusive: nothing smaller than the original's 1 trees")
    assert "the original was written unchanged" in lines[1] and str(model) in lines[1]
    assert lines[2].startswith("why: no faithful model of fewer than 1 trees exists")
    assert lines[3].startswith("try: ") and "--eta 0.1" in lines[3] and "--delta" in lines[3]
    assert (out / "compressed.onnx").read_bytes() == model.read_bytes()
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["summary"]["status"] == "inconclusive"


def test_exit_2_after_a_time_limit_suggests_a_longer_one():
    """The suggestions depend on why: a run the limit stopped suggests a longer limit."""
    from types import SimpleNamespace

    from pace_cert.outcome_words import what_to_try as _what_to_try
    from pace_cert.outcome_words import why_unchanged as _why_unchanged

    summary = SimpleNamespace(size_lower_bound=2, trees_before=50, certified=False)
    region = SimpleNamespace(eta_units="vote share")
    res = SimpleNamespace(
        certificate=SimpleNamespace(summary=summary, region=region), found=None, timed_out=True
    )
    cfg = SimpleNamespace(time_limit=30.0, eta=0.0, delta=0.0, mode="pace")
    assert "time limit (30 s) ended the run" in _why_unchanged(res, cfg)
    tips = _what_to_try(res, cfg)
    assert "--time-limit 120" in tips and "--eta 0.1" in tips and "--delta 0.05" in tips
    cfg = SimpleNamespace(time_limit=30.0, eta=0.6, delta=0.3, mode="pace")
    tips = _what_to_try(res, cfg)
    assert "--eta 0.8" in tips and "--delta 0.5" in tips  # a vote share stays below 1


# ------------------------------------------------------------------ coverage lines


def test_summary_states_the_coverage_of_the_data(compress_run):
    r = compress_run(*SEEDS, "--mode", "prune", "--eta", "0.1")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    cert = Certificate.model_validate_json((r.out / "certificate.json").read_text())
    cov = cert.region.coverage
    assert cov is not None and cov.rows == cert.data.rows
    parts = cov.inside + cov.low_confidence + cov.implausible + cov.tie_band + cov.outside_domain
    assert parts == cov.rows
    assert cov.inside == cert.region.samples_kept
    assert cov.low_confidence > 0  # eta 0.1 leaves some seeds rows out
    line = next(x for x in r.stdout.splitlines() if x.startswith("region: "))
    assert f"{cov.inside} of {cov.rows} data rows inside" in line
    assert f"{cov.low_confidence} low confidence" in line


def test_summary_counts_the_tie_band(tmp_path):
    """Global region (eta = 0): rows where the original is tied lie outside it; the
    summary says how many and why."""
    model, data = stump_model(tmp_path, outliers=20)
    res = invoke("compress", model, "--data", data, "--out", tmp_path / "out", "--quiet")
    assert res.exit_code == 0, res.output
    assert "region: 20 of 400 data rows inside (5%); outside: 380 in the float32 tie band" in (
        res.stdout
    )
    assert "tie band: 380 data rows where the original's own margin is within its float32" in (
        res.stdout
    )
    rep = json.loads(
        invoke("compress", model, "--data", data, "--out", tmp_path / "o2", "--json").stdout
    )
    assert rep["coverage"]["tie_band"] == 380 and rep["coverage"]["inside"] == 20


# ------------------------------------------------------------------------- progress


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _cert(trees_after: int, certified: bool, bound: int | None):
    from types import SimpleNamespace

    s = SimpleNamespace(
        trees_before=10, trees_after=trees_after, certified=certified, size_lower_bound=bound
    )
    return SimpleNamespace(summary=s)


def test_progress_on_a_terminal_shows_best_size_bound_and_time_left():
    from pace_cert.plumbing.budget import Budget

    term = FakeTerminal()
    p = ProgressDisplay(False, start=0.0, budget=Budget.seconds(100.0), stream=term)
    assert p.tty
    p.committed(_cert(10, False, None))  # the original, committed first
    p("[witness] 3 feature gaps ...: a faithful model of trees of depth <= 2 has at least 2 trees")
    p.committed(_cert(6, True, 2))
    p("[l0] round 1: 5 trees")
    text = term.getvalue()
    assert "\r\x1b[K" in text  # the status line is redrawn in place
    last = text.rsplit("\r\x1b[K", 1)[1]
    assert "6 trees certified (original 10) | lower bound 2 | " in last
    assert last.rstrip().endswith("s left")
    p.close()
    assert term.getvalue().endswith("\r\x1b[K")  # cleared before the summary


def test_progress_elsewhere_is_plain_lines():
    plain = io.StringIO()
    p = ProgressDisplay(False, start=0.0, budget=None, stream=plain)
    assert not p.tty
    p("[l1] round 1")
    p.committed(_cert(10, False, None))
    p.committed(_cert(4, True, 3))
    p.close()
    lines = plain.getvalue().splitlines()
    assert "\x1b" not in plain.getvalue() and "\r" not in plain.getvalue()
    assert lines[0].endswith("[l1] round 1")
    assert lines[1].endswith("best so far: 4 trees certified (original 10) | lower bound 3 | "
                             "no time limit")  # fmt: skip
    assert len(lines) == 2


def test_quiet_progress_prints_nothing():
    term = FakeTerminal()
    p = ProgressDisplay(True, start=0.0, stream=term)
    p.begin()
    p("[l1] round 1")
    p.committed(_cert(4, True, 3))
    p.close()
    assert term.getvalue() == ""


# ---------------------------------------------------------------------- bad input


def _bad_csv(kind: str, good: Path, d: Path) -> Path:
    lines = good.read_text().splitlines()
    path = d / f"{kind}.csv"
    if kind == "empty":
        path.write_text("")
    elif kind == "header-only":
        path.write_text(lines[0] + "\n")
    elif kind == "one-row":
        path.write_text("\n".join(lines[:2]) + "\n")
    elif kind == "1e38":
        cells = lines[3].split(",")
        cells[0] = "1e38"
        path.write_text("\n".join([*lines[:3], ",".join(cells), *lines[4:]]) + "\n")
    else:
        raise AssertionError(kind)
    return path


MATRIX = [
    ("csv", "empty", ("empty",)),
    ("csv", "header-only", ("no data rows",)),
    ("csv", "one-row", ("1 data row", "at least 2")),
    ("csv", "1e38", ("data row 3 (file line 4)", "1e38", "2^120")),
    ("flag", ("--eta", "-1"), ("--eta",)),
    ("flag", ("--delta", "2"), ("--delta", "[0, 1]")),
    ("flag", ("--time-limit", "0"), ("--time-limit",)),
    ("flag", ("--threads", "0"), ("--threads",)),
    ("out", "a-file", ("not a directory",)),
]


@pytest.mark.parametrize(("what", "case", "needles"), MATRIX, ids=lambda v: str(v))
def test_bad_input_matrix(what, case, needles, tmp_path, zoo_model):
    """Each is exit 3, one line naming the problem (and the file), nothing written."""
    model, good = zoo_model(*SEEDS)
    data, out, flags = good, tmp_path / "out", ()
    if what == "csv":
        data = _bad_csv(case, good, tmp_path)
        needles = (data.name, *needles)
    elif what == "flag":
        flags = case
    else:
        out = tmp_path / "out.txt"
        out.write_text("keep me\n")
    res = invoke("compress", model, "--data", data, "--out", out, *flags)
    one_error_line(res, *needles)
    if what == "out":
        assert out.read_text() == "keep me\n"
    else:
        nothing_written(out)


def test_one_row_with_verify_data_is_fine_but_1e38_is_not(tmp_path, compress_run):
    """The 2^120 limit is a property of data values (verify --data reads the same way);
    the two-row minimum is compress's (it infers the domain from the rows)."""
    r = compress_run(*SEEDS, "--mode", "prune", "--eta", "0.1")
    comp, cert = r.out / "compressed.onnx", r.out / "certificate.json"
    one = _bad_csv("one-row", r.data, tmp_path)
    res = invoke("verify", r.model, comp, cert, "--data", one)
    assert res.exit_code == 0, res.output
    big = _bad_csv("1e38", r.data, tmp_path)
    one_error_line(invoke("verify", r.model, comp, cert, "--data", big), "1e38", "2^120")


def test_an_empty_region_by_confidence_is_bad_input(tmp_path, zoo_model):
    """The issue's case in kind: every training row's margin is below eta; before, the
    run 'certified' a model over a region holding no row, or failed with an internal
    error and left an empty directory."""
    model, data = zoo_model(*SEEDS)
    out = tmp_path / "out"
    res = invoke("compress", model, "--data", data, "--out", out, "--eta", "0.99", "--delta", "0.1")
    one_error_line(res, data.name, "no training row lies in the region", "lower --eta")
    nothing_written(out)


def test_a_region_of_ties_is_bad_input(tmp_path):
    model, data = stump_model(tmp_path, outliers=0)
    out = tmp_path / "out"
    res = invoke("compress", model, "--data", data, "--out", out)
    one_error_line(res, data.name, "no training row lies in the region", "tie band")
    nothing_written(out)


def test_an_empty_region_by_plausibility_is_bad_input(tmp_path):
    """The confident rows are the rare ones, all implausible at delta 0.1: found once the
    region is built, before the first commit; the directory compress created is gone."""
    model, data = stump_model(tmp_path, outliers=20)
    out = tmp_path / "out"
    res = invoke("compress", model, "--data", data, "--out", out, "--delta", "0.1")
    err = one_error_line(res, data.name, "no training row lies in the region", "--delta")
    assert "20 implausible" in err and "380 in the float32 tie band" in err
    nothing_written(out)


def test_an_existing_out_dir_is_kept_but_left_unwritten(tmp_path):
    model, data = stump_model(tmp_path, outliers=20)
    out = tmp_path / "out"
    out.mkdir()
    res = invoke("compress", model, "--data", data, "--out", out, "--delta", "0.1")
    one_error_line(res, "no training row lies in the region")
    assert out.is_dir() and list(out.iterdir()) == []
