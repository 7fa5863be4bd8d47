"""The command line (SPEC §2): bad input -> exit 3 with one line naming the problem and
nothing written; inspect; help; verify's input checks (certificate, hashes)."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from typer.testing import CliRunner

from pace_cert.cli.main import app

runner = CliRunner()

SEEDS = ("seeds", "rf", 10, 2)  # 7 binned features, classes 0, 1, 2


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def assert_bad_input(res, *needles: str) -> str:
    """Exit 3, exactly one `error: ...` line on stderr mentioning every needle, no traceback."""
    assert res.exit_code == 3, (res.exit_code, res.stdout, res.stderr, res.exception)
    assert "Traceback" not in res.output
    assert res.stdout == ""
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error: "), err
    for needle in needles:
        assert needle.lower() in err.lower(), (needle, err)
    return err


def assert_nothing_written(out: Path) -> None:
    assert not out.exists() or (out.is_dir() and not any(out.iterdir())), list(out.iterdir())


@pytest.fixture(scope="module")
def seeds(zoo_model):
    return zoo_model(*SEEDS)


@pytest.fixture(scope="module")
def seeds_run(compress_run):
    run = compress_run(*SEEDS, "--mode", "prune", "--eta", "0.1")  # 10 -> 9 trees
    assert run.exit_code == 0, (run.stdout, run.stderr)
    return run


def compress(model, data, out, *flags):
    return invoke("compress", model, "--data", data, "--out", out, *flags)


# ------------------------------------------------------------------ bad model files


def _add_graph() -> onnx.ModelProto:
    g = helper.make_graph(
        [helper.make_node("Add", ["X", "X"], ["Y"])],
        "not_trees",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 7])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 7])],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _regressor() -> onnx.ModelProto:
    """A bare TreeEnsembleRegressor stump on 7 inputs: a regressor, not a classifier."""
    node = helper.make_node(
        "TreeEnsembleRegressor",
        ["X"],
        ["variable"],
        domain="ai.onnx.ml",
        n_targets=1,
        nodes_treeids=[0, 0, 0],
        nodes_nodeids=[0, 1, 2],
        nodes_featureids=[0, 0, 0],
        nodes_values=[0.5, 0.0, 0.0],
        nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
        nodes_truenodeids=[1, 0, 0],
        nodes_falsenodeids=[2, 0, 0],
        target_treeids=[0, 0],
        target_nodeids=[1, 2],
        target_ids=[0, 0],
        target_weights=[-1.0, 1.0],
    )
    g = helper.make_graph(
        [node],
        "regressor",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 7])],
        [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])],
    )
    return helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]
    )


def _bad_model(kind: str, tmp: Path) -> tuple[Path, tuple[str, ...]]:
    """Write a bad MODEL argument; return its path and the words the error must contain."""
    if kind == "missing":
        return tmp / "missing.onnx", ("missing.onnx", "not found")
    if kind == "directory":
        p = tmp / "model_dir.onnx"
        p.mkdir()
        return p, ("model_dir.onnx", "directory")
    p = tmp / f"{kind}.onnx"
    if kind == "random-bytes":
        p.write_bytes(random.Random(0).randbytes(4096))
        return p, (p.name, "not an onnx model")
    if kind == "text":
        p.write_text("this is not,an onnx model\n1,2\n")
        return p, (p.name, "not an onnx model")
    if kind == "empty":
        p.write_bytes(b"")
        return p, (p.name, "not an onnx model")
    if kind == "add-graph":
        onnx.save(_add_graph(), p)
        return p, (p.name, "no tree ensemble found")
    if kind == "regressor":
        onnx.save(_regressor(), p)
        return p, (p.name, "unsupported model")
    raise AssertionError(kind)


BAD_MODELS = ["missing", "directory", "random-bytes", "text", "empty", "add-graph", "regressor"]


@pytest.mark.parametrize("kind", BAD_MODELS)
def test_compress_rejects_bad_model(kind, tmp_path, seeds):
    model, needles = _bad_model(kind, tmp_path)
    out = tmp_path / "out"
    assert_bad_input(compress(model, seeds[1], out), *needles)
    assert_nothing_written(out)


@pytest.mark.parametrize("kind", BAD_MODELS)
def test_inspect_rejects_bad_model(kind, tmp_path):
    model, needles = _bad_model(kind, tmp_path)
    assert_bad_input(invoke("inspect", model), *needles)


def test_debug_flag_shows_traceback(tmp_path, seeds):
    res = compress(tmp_path / "missing.onnx", seeds[1], tmp_path / "out", "--debug")
    assert res.exit_code == 3
    assert "Traceback" in res.stderr
    assert "error: " in res.stderr and "missing.onnx" in res.stderr


# ------------------------------------------------------------------------ bad CSV files


def _csv_variant(src: Path, kind: str) -> tuple[str, tuple[str, ...]]:
    """Text of a broken copy of the seeds training CSV and the words the error needs."""
    lines = src.read_text().splitlines()
    header, rows = lines[0].split(","), [r.split(",") for r in lines[1:]]
    assert header[-1] == "target" and len(header) == 8

    def text(h, rs):
        return "\n".join(",".join(r) for r in [h, *rs]) + "\n"

    def with_cell(value, col=2, row=3):  # data row `row` is CSV line row + 2
        rs = [list(r) for r in rows]
        rs[row][col] = value
        return text(header, rs)

    if kind == "too-few-columns":
        return text(header[1:], [r[1:] for r in rows]), ("6 feature columns", "expects 7")
    if kind == "too-many-columns":
        return text(["extra", *header], [["0", *r] for r in rows]), ("8 feature columns",)
    if kind == "ragged-row":
        rs = [list(r) for r in rows]
        rs[4] = rs[4][:-2]
        return text(header, rs), ("data row 5 (file line 6)", "columns")
    if kind == "non-numeric":
        return with_cell("abc"), ("data row 4 (file line 5)", header[2], "not a number")
    if kind == "empty-target":  # a row with a missing feature is kept, not one without a label
        return with_cell("", col=-1), ("label ''", "not one of the model's classes")
    if kind == "nan-target":
        return with_cell("nan", col=-1), ("label 'nan'", "not one of the model's classes")
    if kind == "inf":
        return with_cell("-inf"), ("data row 4 (file line 5)", "not finite")
    if kind == "float32-overflow":
        return with_cell("1e39"), ("overflows float32",)
    if kind == "unknown-label":
        where = "data row 4 (file line 5)"
        return with_cell("7", col=-1), ("label '7'", where, "not one of the model's classes")
    if kind == "string-label":
        return with_cell("setosa", col=-1), ("setosa", "not one of the model's classes")
    if kind == "missing-target":
        return text([*header[:-1], "label"], rows), ("no target column", "target")
    if kind == "empty":
        return "", ("empty",)
    if kind == "header-only":
        return text(header, []), ("no data rows",)
    raise AssertionError(kind)


CSV_KINDS = [
    "too-few-columns",
    "too-many-columns",
    "ragged-row",
    "non-numeric",
    "empty-target",
    "nan-target",
    "inf",
    "float32-overflow",
    "unknown-label",
    "string-label",
    "missing-target",
    "empty",
    "header-only",
]


@pytest.mark.parametrize("kind", CSV_KINDS)
def test_compress_rejects_bad_csv(kind, tmp_path, seeds):
    model, good = seeds
    content, needles = _csv_variant(good, kind)
    data = tmp_path / f"bad-{kind}.csv"
    data.write_text(content)
    out = tmp_path / "out"
    assert_bad_input(compress(model, data, out), data.name, *needles)
    assert_nothing_written(out)


def test_compress_rejects_missing_and_directory_csv(tmp_path, seeds):
    out = tmp_path / "out"
    assert_bad_input(compress(seeds[0], tmp_path / "nope.csv", out), "nope.csv", "not found")
    (tmp_path / "csvdir").mkdir()
    assert_bad_input(compress(seeds[0], tmp_path / "csvdir", out), "csvdir", "directory")
    assert_nothing_written(out)


def test_compress_rejects_unknown_target_option(tmp_path, seeds):
    out = tmp_path / "out"
    res = compress(*seeds, out, "--target", "species")
    assert_bad_input(res, seeds[1].name, "no target column", "species")
    assert_nothing_written(out)


# ------------------------------------------------------------------------- bad options


@pytest.mark.parametrize(
    ("flags", "needles"),
    [
        (("--eta", "-0.1"), ("--eta",)),
        (("--eta", "1.0"), ("--eta", "< 1")),  # a vote share for a random forest
        (("--eta", "nan"), ("--eta",)),
        (("--delta", "1.5"), ("--delta", "[0, 1]")),
        (("--delta", "-0.1"), ("--delta",)),
        (("--mode", "bogus"), ("--mode", "bogus")),
        (("--threads", "0"), ("--threads",)),
        (("--time-limit", "0"), ("--time-limit",)),
        (("--bounds", "box"), ("--bounds",)),
        (("--binary", "all"), ("--binary",)),
        (("--integer", "all"), ("--integer", "infer")),
        (("--milp", "cplex"), ("--milp", "cover")),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) and v[0].startswith("--") else "",
)
def test_compress_rejects_bad_options(flags, needles, tmp_path, seeds):
    out = tmp_path / "out"
    assert_bad_input(compress(*seeds, out, *flags), *needles)
    assert_nothing_written(out)


# -------------------------------------------------------------------- bad output paths


def test_compress_out_is_a_regular_file(tmp_path, seeds):
    out = tmp_path / "out.txt"
    out.write_text("keep me\n")
    assert_bad_input(compress(*seeds, out), "out.txt", "not a directory")
    assert out.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_compress_out_below_a_regular_file(tmp_path, seeds):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory\n")
    out = blocker / "sub"
    assert_bad_input(compress(*seeds, out), str(out), "not writable")
    assert blocker.is_file() and blocker.read_text() == "a file, not a directory\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_compress_out_unwritable_directory(tmp_path, seeds):
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        for out in (parent, parent / "sub"):
            assert_bad_input(compress(*seeds, out), str(out), "not writable")
        assert list(parent.iterdir()) == []
    finally:
        parent.chmod(0o700)


# ----------------------------------------------------------------------------- inspect


def test_inspect_random_forest(seeds):
    res = invoke("inspect", seeds[0])
    assert res.exit_code == 0, res.output
    fields = {}
    for line in res.stdout.splitlines():
        k, _, v = line.partition(":")
        fields[k.strip()] = v.strip()
    assert fields["trees"] == "10"
    assert fields["max_depth"] == "2"
    assert fields["classes"] == "[0, 1, 2]"
    assert fields["features"] == "7"
    assert fields["pattern"].startswith("skl2onnx")
    assert fields["kind"] == "voting"

    res = invoke("inspect", seeds[0], "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["trees"] == 10 and d["max_depth"] == 2 and d["features"] == 7
    assert d["classes"] == [0, 1, 2]
    assert d["pattern"] == fields["pattern"]
    assert 3 <= d["leaves"] <= 10 * 4
    assert d["input"] and d["label_output"]


def test_inspect_compressed_model(seeds_run):
    res = invoke("inspect", seeds_run.out / "compressed.onnx", "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["pattern"] == "pace-cert-argmax"
    assert d["classes"] == [0, 1, 2] and d["features"] == 7


# -------------------------------------------------------------------------------- help


@pytest.mark.parametrize(
    ("command", "options"),
    [
        (
            "compress",
            ["--data", "--out", "--target", "--eta", "--delta", "--mode", "--time-limit"],
        ),
        ("compress", ["--threads", "--seed", "--json", "--debug"]),
        ("verify", ["--json", "--exhaustive", "--data", "--time-limit", "--debug"]),
        ("inspect", ["--json", "--debug"]),
        ("demo", ["--out", "--dataset", "--eta", "--delta", "--mode"]),
    ],
)
def test_help(command, options):
    res = invoke(command, "--help")
    assert res.exit_code == 0, res.output
    for opt in options:
        assert opt in res.stdout, (opt, res.stdout)


def test_top_level_help_lists_commands_and_exit_codes():
    res = invoke("--help")
    assert res.exit_code == 0
    for word in ("compress", "verify", "inspect", "demo", "3 bad input"):
        assert word in res.stdout


# --------------------------------------------------------------------- verify: bad input


def _verify(run, cert, original=None, compressed=None, *flags):
    return invoke(
        "verify",
        original or run.model,
        compressed or run.out / "compressed.onnx",
        cert,
        *flags,
    )


def test_verify_accepts_the_real_certificate(seeds_run):
    res = _verify(seeds_run, seeds_run.out / "certificate.json")
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("verified")


@pytest.mark.parametrize(
    "kind",
    ["not-json", "truncated", "empty", "missing-key", "wrong-type", "bad-status", "extra-key"],
)
def test_verify_rejects_malformed_certificate(kind, seeds_run, tmp_path):
    text = (seeds_run.out / "certificate.json").read_text()
    d = json.loads(text)
    if kind == "not-json":
        new = "certificate? no.\n"
    elif kind == "truncated":
        new = text[: len(text) // 2]
    elif kind == "empty":
        new = ""
    else:
        if kind == "missing-key":
            del d["summary"]
        elif kind == "wrong-type":
            d["pairs"] = "all proved, trust me"
        elif kind == "bad-status":
            d["pairs"][0]["status"] = "PROBABLY"
        elif kind == "extra-key":
            d["region"]["confidence"] = "high"
        new = json.dumps(d)
    cert = tmp_path / "cert.json"
    cert.write_text(new)
    assert_bad_input(_verify(seeds_run, cert), "cert.json", "not a valid certificate")


def test_verify_names_a_csv_or_broken_json_given_as_the_certificate(seeds_run, tmp_path):
    """Issue 73 item 8: the training CSV where the certificate goes is named as a CSV;
    broken JSON by its line and column, never with an empty location ``(: ...``."""
    err = assert_bad_input(_verify(seeds_run, seeds_run.data), "train.csv")
    assert err == f"error: {seeds_run.data}: is a CSV, expected the certificate JSON", err
    broken = tmp_path / "broken-cert.json"
    broken.write_text('{"summary": ')
    err = assert_bad_input(_verify(seeds_run, broken), "broken-cert.json")
    assert err == (
        f"error: {broken}: not a valid certificate (invalid JSON at line 1 column 13: "
        "Expecting value)"
    ), err


def test_verify_rejects_missing_files(seeds_run, tmp_path):
    cert = seeds_run.out / "certificate.json"
    assert_bad_input(_verify(seeds_run, tmp_path / "none.json"), "none.json", "not found")
    assert_bad_input(_verify(seeds_run, tmp_path), str(tmp_path))
    res = _verify(seeds_run, cert, original=tmp_path / "orig.onnx")
    assert_bad_input(res, "orig.onnx", "not found")
    res = _verify(seeds_run, cert, compressed=tmp_path / "comp.onnx")
    assert_bad_input(res, "comp.onnx", "not found")


def test_verify_rejects_changed_model_bytes(seeds_run, tmp_path):
    cert = seeds_run.out / "certificate.json"
    # the compressed model with one metadata entry added: still valid, different bytes
    m = onnx.load(seeds_run.out / "compressed.onnx")
    helper.set_model_props(m, {"note": "edited after certification"})
    comp = tmp_path / "compressed.onnx"
    onnx.save(m, comp)
    assert_bad_input(_verify(seeds_run, cert, compressed=comp), str(comp), "sha256")
    # the original with one byte of a leaf weight changed
    orig = tmp_path / "orig.onnx"
    m = onnx.load(seeds_run.model)
    node = next(n for n in m.graph.node if n.op_type == "TreeEnsembleClassifier")
    w = next(a for a in node.attribute if a.name == "class_weights")
    w.floats[0] = float(np.nextafter(np.float32(w.floats[0]), np.float32(2)))
    onnx.save(m, orig)
    assert_bad_input(_verify(seeds_run, cert, original=orig), str(orig), "sha256")
    # the compressed model given as the original and vice versa
    shutil.copy(seeds_run.out / "compressed.onnx", tmp_path / "swapped.onnx")
    res = _verify(seeds_run, cert, tmp_path / "swapped.onnx", seeds_run.model)
    assert_bad_input(res, "swapped.onnx", "sha256")


def test_verify_rejects_non_onnx_model(seeds_run, tmp_path):
    bad = tmp_path / "junk.onnx"
    bad.write_text("junk\n")
    res = _verify(seeds_run, seeds_run.out / "certificate.json", compressed=bad)
    assert_bad_input(res, "junk.onnx", "not an onnx model")


def test_float32_overflow_error_is_one_line_in_a_real_process(tmp_path, seeds):
    """Out of process (pytest swallows warnings in-process): stderr is one line only."""
    import subprocess
    import sys

    content, _ = _csv_variant(seeds[1], "float32-overflow")
    data = tmp_path / "overflow.csv"
    data.write_text(content)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "pace_cert.cli.main", "compress", str(seeds[0])]
    proc = subprocess.run(
        [*cmd, "--data", str(data), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"},  # as a user runs it
    )
    assert proc.returncode == 3
    assert_nothing_written(out)
    assert proc.stderr.strip().splitlines() == ["error: " + f"{data}: a value overflows float32"]


def test_an_in_process_run_counts_its_limit_from_the_call():
    """The suite's in-process CLI calls count --time-limit from the call, not from the
    xdist worker's start (tests/conftest.py): a worker older than a test's limit would
    otherwise end the run before its first step (CI: 'nothing smaller certified
    (0.0s)'). The process-start rule of a real process is pinned in
    test_process_guard.py."""
    import time

    from pace_cert.plumbing import budget

    t0 = time.perf_counter()
    assert budget.process_start() >= t0
    assert budget.Budget.seconds(5.0, start=budget.process_start()).left() > 4.0


# ------------------------------------------------------------------ help text


def test_every_commands_help_shows_brackets_as_written():
    """The help renderer must not take ``[ray]`` (or any bracketed text) for markup:
    every command's and option's help with brackets appears as written in ``--help``."""
    import typer.main

    group = typer.main.get_command(app)
    checked = 0
    for name, command in group.commands.items():
        res = runner.invoke(app, [name, "--help"], env={"COLUMNS": "100"})
        assert res.exit_code == 0, res.output
        shown = " ".join(res.stdout.split())
        helps = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
        for text in helps:
            if "[" in text:
                assert " ".join(text.split()) in shown, (name, text)
                checked += 1
    assert checked >= 3
    for name in ("compress", "verify"):
        out = runner.invoke(app, [name, "--help"], env={"COLUMNS": "100"}).stdout
        assert "pace-cert[ray]" in out
