"""Why a run ended (issue 47, items 1-3): the driver records the step that decided the
end and its reason; compress prints it last, with the lower bound (always) and, when
the time limit cut the run, that a longer one may certify a smaller model; --json and
the certificate carry both."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from pace_cert import zoo
from pace_cert.cert.certificate import Certificate
from pace_cert.cert.words import bound_lines
from pace_cert.cli.compress_cmd import compress_summary
from pace_cert.cli.main import app
from pace_cert.driver.result import StopReason
from pace_cert.driver.runner import compress
from pace_cert.model.onnx_reader import ensemble_from_model
from pace_cert.plumbing.budget import Budget
from pace_cert.settings import CompressConfig

from .helpers import small_problem

runner = CliRunner()
TINY = ("seeds", "rf", 4, 1)  # merged and proved minimal within seconds


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def tiny_run(zoo_model, tmp_path_factory):
    model, data = zoo_model(*TINY)
    out = tmp_path_factory.mktemp("tiny") / "out"
    flags = ("--eta", "0.1", "--delta", "0.1", "--quiet")
    res = invoke("compress", model, "--data", data, "--out", out, *flags)
    js = invoke("compress", model, "--data", data, "--out", out.parent / "json", *flags, "--json")
    return model, out, res, js


def test_a_run_says_which_step_ended_it_and_why(tiny_run):
    _, out, res, js = tiny_run
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[-2].startswith("stopped: merge-first: the 3-tree model is proved minimal"), lines
    cert = Certificate.model_validate_json((out / "certificate.json").read_text())
    assert cert.summary.stop_reason == lines[-2].removeprefix("stopped: ")
    assert cert.summary.time_limit_reached is False
    d = json.loads(js.stdout)
    assert d["stop"]["step"] == "merge-first" and "proved minimal" in d["stop"]["reason"]
    assert d["time_limit_reached"] is False


def test_the_closing_line_lists_every_file_written(tiny_run):
    _, out, res, _ = tiny_run
    last = res.stdout.splitlines()[-1]
    assert (out / "plausibility.json").exists()
    assert last == (
        f"wrote {out / 'compressed.onnx'}, {out / 'certificate.json'} and "
        f"{out / 'plausibility.json'}"
    )


def test_the_lower_bound_line_is_always_printed(tiny_run):
    _, _, res, _ = tiny_run
    assert any(
        ln.startswith("minimal: no faithful model of fewer than 3 trees of depth <= 1")
        for ln in res.stdout.splitlines()
    ), res.stdout
    cert = Certificate.model_validate_json((tiny_run[1] / "certificate.json").read_text())
    for bound in (None, 1):
        s = cert.summary.model_copy(update={"size_lower_bound": bound, "witness_bound": None})
        assert bound_lines(s, 12) == [
            "lower bound: 1 tree (nothing useful proved for models of depth <= 12 in this region)"
        ]


def test_a_certified_run_cut_by_its_time_limit_says_so(tiny_run, zoo_model):
    """The summary's words for an outcome whose run the time limit ended (the outcome
    of a real run, with the driver's time-limit stop put in: when the limit strikes is
    not something a test can rely on)."""
    from pace_cert.app import CompressOutcome

    model, out, _, _ = tiny_run
    cert = Certificate.model_validate_json((out / "certificate.json").read_text())
    unproved = cert.summary.model_copy(update={"size_lower_bound": None})
    cert = cert.model_copy(update={"summary": unproved})
    stop = StopReason("l0", "the time limit (9 s) ran out", time_limit=True)
    res = CompressOutcome(0, "certified", out, cert, found=3, timed_out=True, stop=stop)
    cfg = CompressConfig.of(eta=0.1, delta=0.1, time_limit=9)
    text = compress_summary(res, cfg, model)
    assert "time limit reached; a longer run may certify a smaller model" in text
    assert "stopped: l0: the time limit (9 s) ran out" in text
    calm = dataclasses.replace(res, timed_out=False, stop=None)
    assert "time limit reached" not in compress_summary(calm, cfg, model)


def test_a_proved_minimal_size_and_a_time_limit_do_not_contradict(tiny_run):
    """Issue 73 item 9: when the size is proved minimal (the lower bound reaches it)
    and the time limit also ended the run, the text says the size is proved minimal
    and that the limit ran out too: never "a longer run may certify a smaller model",
    nor a longer limit to try. Certified (3 trees, bound 3) and unchanged (exit 2,
    bound = the original's size) alike, in the CLI and the library result's words."""
    from pace_cert.app import CompressOutcome
    from pace_cert.outcome_words import stop_lines, unchanged_lines

    model, out, _, _ = tiny_run
    cert = Certificate.model_validate_json((out / "certificate.json").read_text())
    s = cert.summary
    assert s.size_lower_bound == s.trees_after  # the tiny run is proved minimal
    stop = StopReason("l0", "the time limit (10 s) ran out", time_limit=True)
    cfg = CompressConfig.of(eta=0.1, delta=0.1, time_limit=10)
    minimal = (
        "stopped: the size is proved minimal; the time limit also ran out in step l0 "
        "(nothing smaller can exist in this region)"
    )
    res = CompressOutcome(0, "certified", out, cert, found=3, timed_out=True, stop=stop)
    text = compress_summary(res, cfg, model)
    assert minimal in text.splitlines() and "a longer run" not in text, text
    unchanged = s.model_copy(
        update={"certified": False, "status": "inconclusive", "trees_after": s.trees_before,
                "size_lower_bound": s.trees_before}
    )  # fmt: skip
    cert2 = cert.model_copy(update={"summary": unchanged})
    res2 = CompressOutcome(2, "inconclusive", out, cert2, timed_out=True, stop=stop)
    text = compress_summary(res2, cfg, model)
    lines = text.splitlines()
    assert f"why: no faithful model of fewer than {s.trees_before} trees exists" in text
    assert minimal in lines and "ran out" not in "\n".join(ln for ln in lines if ln != minimal)
    assert "--time-limit" not in text and "a longer run" not in text, text
    assert stop_lines(res2) == [minimal] and unchanged_lines(res2, cfg)[0] in lines


def test_the_driver_records_that_the_time_limit_ended_the_run():
    X, y = small_problem(0, n_features=3, n_classes=2)
    original, _ = ensemble_from_model(zoo.export_onnx(zoo.make_model("rf", 8, 2, 0).fit(X, y), 3))
    cfg = CompressConfig.of(mode="prune", eta=0.1, time_limit=1)
    res = compress(original, X.astype(np.float32), cfg, budget=Budget.seconds(1e-9))
    assert res.stop is not None and res.stop.time_limit
    assert "time limit" in res.stop.reason


def test_the_cli_reports_a_run_the_time_limit_ended(zoo_model, tmp_path):
    """In process the limit counts from the test process's start, long past: the run
    ends at its first step, by the limit, whatever the machine's speed."""
    model, data = zoo_model(*TINY)
    res = invoke(
        "compress", model, "--data", data, "--out", tmp_path, "--time-limit", "0.001", "--json"
    )
    d = json.loads(res.stdout)
    assert d["time_limit_reached"] is True and "time limit" in d["stop"]["reason"]
    cert = json.loads((tmp_path / "certificate.json").read_text())
    assert cert["summary"]["time_limit_reached"] is True
    assert "time limit" in cert["summary"]["stop_reason"]
