"""The benchmark harness: the PACE paper's tables as profiles of configurations.

    python -m benchmarks.harness PROFILE [options]      (CLI: __main__.py)

Modules: :mod:`~benchmarks.harness.records` (a configuration, a CSV row, where results
go), :mod:`~benchmarks.harness.profiles` (which configurations a profile runs),
:mod:`~benchmarks.harness.tables` (the paper's tables), :mod:`~benchmarks.harness.prepare`
(data to the ONNX model and its IR), :mod:`~benchmarks.harness.run` (one configuration
and its onnxruntime checks), :mod:`~benchmarks.harness.report` (the Markdown report and
machine record), :mod:`~benchmarks.harness.paper_values` (the paper's numbers). The
names below are what the other scripts use.
"""

from benchmarks.harness.prepare import MismatchError, Prepared, prepare
from benchmarks.harness.profiles import ORACLE_BUDGET, Profile, make_profile
from benchmarks.harness.records import (
    PROFILES_OUT,
    STUDIES_OUT,
    Config,
    Result,
    now,
    read_results,
    write_atomic,
)
from benchmarks.harness.report import (
    command_line,
    emit_report,
    git_revision,
    machine_info,
    paper_verdict,
    report_head,
    select_cases,
)
from benchmarks.harness.run import PROBE_POINTS, check_compressed, run_config
from benchmarks.harness.tables import md_table, paper_cell

__all__ = [
    "ORACLE_BUDGET",
    "PROBE_POINTS",
    "PROFILES_OUT",
    "STUDIES_OUT",
    "Config",
    "MismatchError",
    "Prepared",
    "Profile",
    "Result",
    "check_compressed",
    "command_line",
    "emit_report",
    "git_revision",
    "machine_info",
    "make_profile",
    "md_table",
    "now",
    "paper_cell",
    "paper_verdict",
    "prepare",
    "read_results",
    "report_head",
    "run_config",
    "select_cases",
    "write_atomic",
]
