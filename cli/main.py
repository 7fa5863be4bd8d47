"""The ``pace-cert`` command line: a thin shell over :mod:`pace_cert`.

Commands parse arguments, call one library function, format its result and map the
exception family to exit codes: 0 certified/verified, 1 refuted, 2 inconclusive,
3 bad input. One module per command (``compress_cmd``, ``verify_cmd``,
``frontier_cmd``, ``tools_cmd``); this one only registers them.
"""

from __future__ import annotations

import os
import sys

import typer

from pace_cert.cli.compress_cmd import (  # noqa: F401  (re-exported for tests and callers)
    HARD_LIMIT_FACTOR,
    compress,
)
from pace_cert.cli.frontier_cmd import frontier
from pace_cert.cli.progress import ProgressDisplay  # noqa: F401
from pace_cert.cli.tools_cmd import demo, inspect, report
from pace_cert.cli.verify_cmd import verify

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,  # help text as written: "pace-cert[ray]" is not a markup tag
    help="Certified pruning and compression of tree ensembles (PACE). "
    "Exit codes: 0 certified/verified/written, 1 refuted, 2 inconclusive, 3 bad input.",
)
app.command()(compress)
app.command()(verify)
app.command()(frontier)
app.command()(report)
app.command()(inspect)
app.command()(demo)


def main() -> None:
    """The console script: :data:`app`, with a closed stdout read as the reader having
    what it wanted (``pace-cert frontier --help | head -2`` exits 0). The help printer
    (rich) ends such a run with exit 1 after pointing stdout at /dev/null, click after
    swapping stdout for its flush-pacifying wrapper: those are the signs."""
    was_null = _stdout_is_devnull()
    try:
        app()
    except SystemExit as e:
        pacified = type(sys.stdout).__name__ in ("PacifyFlushWrapper", "_PacifyFlushWrapper")
        if e.code == 1 and (pacified or (not was_null and _stdout_is_devnull())):
            raise SystemExit(0) from None
        raise


def _stdout_is_devnull() -> bool:
    try:
        return os.path.samestat(os.fstat(1), os.stat(os.devnull))
    except OSError:
        return False


if __name__ == "__main__":  # pragma: no cover
    main()
