"""The ``pace-cert`` command line: a thin shell over :mod:`pace_cert`.

Commands parse arguments, call one library function, format its result and map the
exception family to exit codes: 0 certified/verified, 1 refuted, 2 inconclusive,
3 bad input. One module per command (``compress_cmd``, ``verify_cmd``,
``frontier_cmd``, ``tools_cmd``); this one only registers them.
"""

from __future__ import annotations

import typer

from pace_cert.cli.compress_cmd import (  # noqa: F401  (re-exported for tests and callers)
    HARD_LIMIT_FACTOR,
    _what_to_try,
    _why_unchanged,
    compress,
)
from pace_cert.cli.frontier_cmd import frontier
from pace_cert.cli.progress import ProgressDisplay  # noqa: F401
from pace_cert.cli.tools_cmd import demo, inspect, report
from pace_cert.cli.verify_cmd import verify

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Certified pruning and compression of tree ensembles (PACE). "
    "Exit codes: 0 certified/verified/written, 1 refuted, 2 inconclusive, 3 bad input.",
)
app.command()(compress)
app.command()(verify)
app.command()(frontier)
app.command()(report)
app.command()(inspect)
app.command()(demo)


if __name__ == "__main__":  # pragma: no cover
    app()
