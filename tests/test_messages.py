"""Messages a first user meets (issue 47, item 5): a model with no trees says so, a
closed stdout is not an internal error, the closing ``wrote`` line lists every file
written, and ``inspect`` names the model family one way."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from pace_cert.cli.main import app
from pace_cert.errors import Inconclusive, InputError, Refuted, exit_code_of

runner = CliRunner()
SEEDS = ("seeds", "rf", 10, 2)


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def _cli(*args) -> list[str]:
    return [sys.executable, "-m", "pace_cert.cli.main", *map(str, args)]


@pytest.fixture(scope="module")
def mlp_onnx(tmp_path_factory) -> Path:
    """An MLPClassifier exported with skl2onnx: MatMul, Relu, ... and no tree."""
    from skl2onnx import to_onnx
    from sklearn.neural_network import MLPClassifier

    X = np.random.default_rng(0).random((60, 3)).astype(np.float32)
    y = (X[:, 0] > 0.5).astype(np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # not converged in 30 iterations: irrelevant here
        mlp = MLPClassifier(hidden_layer_sizes=(4,), max_iter=30, random_state=0).fit(X, y)
    path = tmp_path_factory.mktemp("mlp") / "mlp.onnx"
    path.write_bytes(to_onnx(mlp, X[:1], options={"zipmap": False}).SerializeToString())
    return path


@pytest.mark.parametrize("command", ["inspect", "compress"])
def test_a_model_without_trees_says_no_tree_ensemble_was_found(command, mlp_onnx, tmp_path):
    csv = tmp_path / "train.csv"
    csv.write_text("a,b,c,target\n0.1,0.2,0.3,0\n0.9,0.2,0.3,1\n")
    out = tmp_path / "out"
    args = [mlp_onnx] if command == "inspect" else [mlp_onnx, "--data", csv, "--out", out]
    res = invoke(command, *args)
    assert res.exit_code == 3, res.output
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert f"no tree ensemble found in {mlp_onnx}" in err
    assert "MatMul between the input" not in err
    assert not out.exists()


def test_a_closed_stdout_ends_quietly(zoo_model):
    """The reader went away before anything was written (a pipe whose read end is
    closed): exit 0, nothing on stderr."""
    model, _ = zoo_model(*SEEDS)
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run(_cli("inspect", model), stdout=w, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(w)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


@pytest.mark.parametrize("as_json", [False, True])
def test_inspect_into_a_pipe_closed_after_the_first_line_exits_0(zoo_model, as_json):
    """``pace-cert inspect MODEL | head -1``."""
    model, _ = zoo_model(*SEEDS)
    flags = ["--json"] if as_json else []
    proc = subprocess.Popen(
        _cli("inspect", model, *flags), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert first.strip() and "internal error" not in err and "Traceback" not in err


@pytest.mark.parametrize(
    "error, code",
    [
        (InputError("model.onnx", "not an ONNX file"), 3),
        (Refuted("a counterexample"), 1),
        (Inconclusive("time"), 2),
        (KeyboardInterrupt(), 130),
        (SystemExit(143), 143),
        (RuntimeError("boom"), 4),
    ],
)
def test_one_exit_code_map_for_the_cli_and_frontier_json(error, code):
    """``exit_code_of`` is what ``run_command`` exits with and what frontier.json
    records when an error ends a frontier."""
    assert exit_code_of(error) == code
