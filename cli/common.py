"""What every command shares: option types, the exit-code mapping, JSON output and
the one-line description of a certified domain."""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Annotated, Any

import typer

from pace_cert.cert.words import feature_list
from pace_cert.errors import PaceError, exit_code_of

DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON object.")]
ThreadsOpt = Annotated[
    int,
    typer.Option(
        help="Threads for the separation oracle: one single-worker CP-SAT search per "
        "label pair at a time; idle threads race other seeds on undecided pairs. With "
        "--backend ray: the pair solves in flight at once (set it to the cluster's CPUs)."
    ),
]
BackendOpt = Annotated[
    str,
    typer.Option(
        help="Where the label pairs' CP-SAT solves run: local (threads of this process) or "
        "ray (Ray tasks; pip install 'pace-cert[ray]'). The verdict does not depend on it."
    ),
]
RayAddressOpt = Annotated[
    str | None,
    typer.Option(
        help="With --backend ray: the cluster (host:port or ray://host:port); default the "
        "RAY_ADDRESS environment variable, else a local Ray instance with --threads + 1 CPUs."
    ),
]


def run_command(fn: Callable[[], int], debug: bool) -> None:
    """Run a command body; map exceptions to exit codes with one-line messages. A
    closed stdout (``pace-cert inspect MODEL | head -3``) ends the command quietly with
    exit 0: the reader has what it wanted."""
    try:
        code = fn()
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    except BrokenPipeError:
        # what is still buffered goes nowhere, and the exit flush cannot fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(0) from None
    except PaceError as e:
        if debug:
            traceback.print_exc()
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(exit_code_of(e)) from None
    except KeyboardInterrupt as e:
        typer.echo("interrupted", err=True)
        raise typer.Exit(exit_code_of(e)) from None
    except Exception as e:  # an internal error, not the user's input
        if debug:
            traceback.print_exc()
        typer.echo(f"internal error: {type(e).__name__}: {e} (rerun with --debug)", err=True)
        raise typer.Exit(exit_code_of(e)) from None
    raise typer.Exit(code)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=1, default=str) + "\n")


def domain_line(dom: dict, box: str, names: list[str] | None = None) -> str:
    """One line saying which inputs the certificate covers (``box``: what the bounds
    are, when there are any; ``names``: the training CSV's feature columns, in model
    order, to name the binary and integer features)."""
    n = len(dom.get("cells_per_feature", []))
    binary, integer = dom.get("binary_features", []), dom.get("integer_features", [])
    nb, ni = len(binary), len(integer)
    parts = [f"{nb} binary ({{0,1}}{_listed(binary, names, ': ')})"] if nb else []
    parts += [f"{ni} integer-valued{_listed(integer, names, ' (', ')')}"] if ni else []
    parts += [f"{n - nb - ni} any float32"] if n - nb - ni else []
    within = f" within {box}" if dom.get("bounds") else ""
    return f"{n} features: " + ", ".join(parts) + within + " (NaN excluded)"


def _listed(features: list[int], names: list[str] | None, pre: str, post: str = "") -> str:
    return f"{pre}{feature_list(features, names)}{post}" if names else ""
