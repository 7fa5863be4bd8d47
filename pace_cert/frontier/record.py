"""``DIR/frontier.json``: what a frontier run certified at each rung (pydantic models).

``python -m pace_cert.frontier.record schemas/frontier.schema.json`` (``make schema``)
regenerates the schema; a test fails when the committed file drifts from the models.
Each rung's own proof is its ``certificate.json``, which ``pace-cert verify`` checks;
this file only gathers them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pace_cert.cert.certificate import Deployment

SCHEMA_VERSION = "1.1"  # 1.1: each rung's deployment (sizes before and after, latency)

#: a rung's outcome: a smaller certified model, the original unchanged (nothing smaller
#: was certified), no training row in the region (nothing written for the rung), nothing
#: written (stopped before its first commit), or not started (the frontier's time ended
#: before the rung's turn)
RungStatus = Literal[
    "certified", "original unchanged", "empty region", "nothing written", "not started"
]

#: how far a rung ran: finished (its plan ended by itself), cut (its time ran out or the
#: run was stopped during it: the record is its best certified model so far, as committed
#: in its directory), not started
RungState = Literal["finished", "cut", "not started"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RowCoverage(_Strict):
    """Rows of one CSV file against a rung's region and its written model."""

    path: str
    rows: int
    inside: int = Field(description="rows inside the rung's region")
    agreement: float = Field(
        description="share of all the rows (inside the region or not) on which "
        "onnxruntime gives the rung's compressed.onnx the original's label"
    )
    agreement_inside: float | None = Field(
        default=None,
        description="the same share on the rows inside the region (1 by the certificate; "
        "null: no row inside, or a file written before this field)",
    )


class RungRecord(_Strict):
    name: str = Field(description="the rung's directory under the frontier's DIR")
    eta: float
    delta: float
    share_asked: float | None = Field(
        default=None,
        description="a --rows rung: the share of the --data rows (0..1) asked inside the "
        "region; eta is its translation for this model (the largest eta, rounded down to "
        "two significant digits, whose region holds that share)",
    )
    status: RungStatus
    trees_before: int
    trees_after: int
    leaves_before: int
    leaves_after: int
    bounds: dict[str, int | None] = Field(
        description="proved size lower bounds from the rung's certificate: "
        "size_lower_bound, witness_bound and (when the certificate has one) pruning_bound"
    )
    started_from: str | None = Field(
        default=None,
        description="the enclosing rung whose certified model was this rung's first "
        "candidate (null: none, or reuse off)",
    )
    start_certified: bool | None = Field(
        default=None, description="whether that start model was certified again here"
    )
    data: RowCoverage | None = Field(default=None, description="the --data rows")
    test: RowCoverage | None = Field(default=None, description="the --test rows")
    seconds: float = Field(description="the rung's wall seconds")
    budget_seconds: float | None = Field(description="the time the rung was given")
    time_limited: bool = Field(description="the rung's time ran out before its plan ended")
    phase: str = Field(default="", description="the certificate's summary.phase")
    state: RungState = Field(
        default="finished",
        description="finished: the rung's plan ended by itself; cut: its time ran out or "
        "the run was stopped during it (the record is its best certified model so far); "
        "not started",
    )
    stop_reason: str = Field(default="", description="why the rung's run ended, in words")
    estimate: int | None = Field(
        default=None,
        description="the free-pattern floor: trees a faithful pruning keeps at least if the "
        "trees' leaves combined freely (an estimate, not a bound)",
    )
    deployment: Deployment | None = Field(
        default=None,
        description="the rung's certificate's summary.deployment: both models' trees, "
        "leaves, internal nodes, depth, comparisons per prediction, ONNX bytes and measured "
        "latency (null for a rung without a certificate, and in files before schema 1.1)",
    )


class FrontierRecord(_Strict):
    schema_version: str = SCHEMA_VERSION
    tool_version: str
    created: str
    model: str
    model_sha256: str
    data: str
    test: str | None
    mode: str
    eta_units: Literal["vote share", "raw score"]
    time_limit: float | None
    backend: Literal["local", "ray"]
    reuse: bool = Field(description="each rung started from an enclosing rung's model")
    seconds: float
    exit_code: int = Field(
        description="the process's exit code: 0 some rung (finished or cut) certified a "
        "smaller model; 2 none; when an error ended the run (see ended), the error's code"
    )
    ended: str = Field(
        default="finished",
        description="why the file was written last: finished (every rung ran), running "
        "(written after a rung; more to come), or why the run was stopped",
    )
    rungs: list[RungRecord] = Field(description="every rung of the ladder, in ladder order")


def rung_bounds(cert: Any) -> dict[str, int | None]:
    """The proved lower bounds a rung's certificate states, by name (None: not
    computed). ``pruning_bound`` is read when the certificate has one."""
    s = cert.summary
    pruning = getattr(s, "pruning_bound", None)
    return {
        "size_lower_bound": s.size_lower_bound,
        "witness_bound": s.witness_bound,
        "pruning_bound": None if pruning is None else int(pruning.value),
    }


def load_frontier(path: Path) -> FrontierRecord:
    """Read a frontier.json; InputError when it cannot be read or is not one."""
    from pydantic import ValidationError

    from pace_cert.errors import InputError

    try:
        return FrontierRecord.model_validate_json(Path(path).read_bytes())
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except OSError as e:
        raise InputError(path, f"cannot read it ({e.strerror})") from None
    except ValidationError as e:
        raise InputError(path, f"not a valid frontier.json ({e.error_count()} errors)") from None


def write_schema(path: str | Path) -> None:
    schema = FrontierRecord.model_json_schema()
    Path(path).write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":  # pragma: no cover - exercised by `make schema`
    write_schema(sys.argv[1] if len(sys.argv) > 1 else "schemas/frontier.schema.json")
    print("schema written")
