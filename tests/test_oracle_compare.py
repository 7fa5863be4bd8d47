"""benchmarks/oracle_compare.py: oracle selection and the report of a partial run."""

from __future__ import annotations

import pytest

from benchmarks import oracle_compare as oc


def test_oracles_option_always_runs_the_constraint_oracle():
    assert oc.parse_args(["--oracles", "milp"]).oracles == ["constraint", "milp"]
    assert oc.parse_args([]).oracles == list(oc.ORACLES)
    with pytest.raises(SystemExit):
        oc.parse_args(["--oracles", "constraint,gurobi"])


def test_constraint_schedule_option_and_report():
    """The constraint oracle's pair schedule is a choice, parallel by default (like the
    baselines), and the report says which one ran."""
    assert oc.parse_args([]).constraint_schedule == "parallel"
    assert oc.parse_args(["--constraint-schedule", "race"]).constraint_schedule == "race"
    with pytest.raises(SystemExit):
        oc.parse_args(["--constraint-schedule", "sequential"])
    case = oc.Case("compas", 50, 7, 12, 2, 118)
    case.runs["constraint"] = oc.OracleRun("faithful", 10.0, 12.0, 600.0, 5, 10, 20)
    for sched in ("parallel", "race"):
        md = oc.render_md([case], "cmd", "start", oc.parse_args(["--constraint-schedule", sched]))
        assert f"constraint oracle's pair schedule: {sched} (" in md


def test_report_of_a_run_without_the_objective_oracle():
    """A case where only the constraint and MILP oracles ran: the MILP ratio is exact,
    the objective one is absent, and the table carries CPU seconds."""
    case = oc.Case("compas", 50, 7, 12, 2, 118)
    case.runs["constraint"] = oc.OracleRun("faithful", 10.0, 12.0, 600.0, 5, 10, 20)
    case.runs["milp"] = oc.OracleRun("faithful", 320.0, 400.0, 600.0, 5, 10, 20)
    assert case.ratio_cell("milp") == "32.0x"
    assert case.ratio_cell("objective") == "--"
    args = oc.parse_args(["--oracles", "constraint,milp"])
    md = oc.render_md([case], "cmd", "start", args)
    assert md.rstrip().endswith("speedup: 32.0x")
    assert "CPU (s)" in md and "| 400.0 |" in md
    row = oc.render_csv([case]).splitlines()[1]
    assert "400.0" in row and "not run" in row


def test_machine_info_is_taken_once():
    """The revision in a report is the one the run started from."""
    assert oc.harness.machine_info() is oc.harness.machine_info()
