"""What a frontier run knows at any moment, and its last words.

:class:`FrontierState` holds every rung's record: the rungs finished (their records in
memory), the rung running (its best certified model so far, from each commit of its
output directory) and the rungs not started. ``frontier.json`` is rewritten from it
atomically before the first rung, at every commit of a rung and after every rung, so
the file on disk always lists every rung of the ladder with its current status.

The process guard (``pace_cert/plumbing/guard.py``) sees the state as its ``output``: one lock
(:attr:`FrontierState.lock`, shared by the running rung's :class:`OutputDir`: a rung's
file set and ``frontier.json`` are never half-written when the guard ends the process)
and the exit code so far (:attr:`FrontierState.committed`). When the guard ends the
run, :func:`last_words` (no solver: memory and one atomic write) marks the running rung
cut, writes ``frontier.json`` and renders the table.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pace_cert.frontier.ladder import Rung
from pace_cert.frontier.record import FrontierRecord, RungRecord, rung_bounds
from pace_cert.frontier.table import render_text
from pace_cert.plumbing.outputs import Committed, write_atomic

FRONTIER_FILE = "frontier.json"


def certified_smaller(summary: Any) -> bool:
    """Whether a certificate's summary states a certified model smaller than the
    original (what ``compress`` exits 0 for)."""
    smaller = (summary.trees_after, summary.leaves_after) != (
        summary.trees_before,
        summary.leaves_before,
    )
    return bool(summary.certified) and smaller


def cut_record(
    rung: Rung,
    cert: Any,
    seconds: float,
    budget_seconds: float | None,
    started_from: str | None = None,
    reason: str = "stopped during the rung",
) -> RungRecord:
    """A rung's record from the certificate it committed last (its best certified
    model so far), the rung marked cut."""
    s = cert.summary
    return RungRecord(
        name=rung.name,
        eta=rung.eta,
        delta=rung.delta,
        share_asked=rung.share,
        status="certified" if certified_smaller(s) else "original unchanged",
        trees_before=s.trees_before,
        trees_after=s.trees_after,
        leaves_before=s.leaves_before,
        leaves_after=s.leaves_after,
        bounds=rung_bounds(cert),
        started_from=started_from,
        seconds=seconds,
        budget_seconds=budget_seconds,
        time_limited=True,
        phase=s.phase,
        state="cut",
        stop_reason=reason,
        deployment=getattr(s, "deployment", None),
    )


def not_started_record(rung: Rung, trees: int, leaves: int) -> RungRecord:
    """A rung the frontier's time did not reach (sizes: the original's)."""
    return RungRecord(
        name=rung.name,
        eta=rung.eta,
        delta=rung.delta,
        share_asked=rung.share,
        status="not started",
        trees_before=trees,
        trees_after=trees,
        leaves_before=leaves,
        leaves_after=leaves,
        bounds={},
        seconds=0.0,
        budget_seconds=None,
        time_limited=False,
        state="not started",
        stop_reason="not started: the frontier's time ended before its turn",
    )


@dataclass(frozen=True)
class LastWords:
    """What the process prints when the guard ends a frontier run: the table (stdout;
    empty when nothing was started) and one line saying what is on disk (stderr)."""

    table: str
    note: str
    record: FrontierRecord | None = None  # what frontier.json lists (None: nothing started)


class FrontierState:
    """Every rung's record so far (see the module docstring). Created empty (the CLI
    hands it to the guard before the inputs are read); :meth:`start` fills it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.path: Path | None = None
        self.header: dict = {}
        self.rungs: list[Rung] = []
        self.records: list[RungRecord | None] = []
        self.current: int | None = None  # index of the running rung
        self.partial: RungRecord | None = None  # its best committed model so far
        self.written_code = 2  # exit code of the last frontier.json written
        self.child: int | None = None  # the process running the current rung
        self._sizes = (0, 0)
        self._t0 = time.perf_counter()

    def start(
        self, path: Path, header: dict, rungs: Sequence[Rung], trees: int, leaves: int
    ) -> None:
        """The run's frontier.json path, its header fields, the ladder and the
        original's size; every rung not started."""
        self.path, self.header, self.rungs = Path(path), dict(header), list(rungs)
        self.records = [None] * len(self.rungs)
        self._sizes = (trees, leaves)
        self._t0 = time.perf_counter()

    @property
    def started(self) -> bool:
        return self.path is not None

    # --- the guard's view (``output.lock``, ``output.committed``) ------------------
    @property
    def committed(self) -> Committed | None:
        """Exit 0 once a frontier.json listing a certified smaller rung is on disk;
        None before any was written."""
        if self.written_code == 0:
            return Committed(0, "frontier.json lists a certified smaller rung")
        return Committed(2, "no rung certified a smaller model") if self.started else None

    # --- updates (the caller holds :attr:`lock`) ----------------------------------
    def begin(self, i: int, partial: RungRecord | None = None) -> None:
        """Rung ``i`` starts (``partial``: what it already has on disk, in a second
        pass)."""
        self.current, self.partial = i, partial

    def set_child(self, pid: int | None) -> None:
        """The process running the current rung (None: none)."""
        self.child = pid

    def commit_seen(self, record: RungRecord) -> None:
        """The running rung committed a file set: ``record`` (state cut) is its best
        so far."""
        self.partial = record

    def insert(self, i: int, rung: Rung) -> None:
        """A rung added at position ``i`` (the refinement between two neighbours), not
        started; the rungs from ``i`` on move one place down."""
        self.rungs.insert(i, rung)
        self.records.insert(i, None)
        if self.current is not None and self.current >= i:
            self.current += 1

    def finish(self, i: int, record: RungRecord) -> None:
        self.records[i] = record
        self.current, self.partial = None, None

    def snapshot(self, ended: str = "running", code: int | None = None) -> FrontierRecord:
        """Every rung: finished records, the running rung as cut (its best committed
        model so far), the rest not started. ``code``: the process's exit code when an
        error ends it (else 0 when some rung certified a smaller model, 2 when none)."""
        rungs = []
        for i, r in enumerate(self.rungs):
            rec = self.records[i]
            if rec is None and i == self.current and self.partial is not None:
                rec = self.partial
            rungs.append(rec if rec is not None else not_started_record(r, *self._sizes))
        if code is None:
            code = 0 if any(r.status == "certified" for r in rungs) else 2
        return FrontierRecord(
            **self.header,
            seconds=time.perf_counter() - self._t0,
            exit_code=code,
            ended=ended,
            rungs=rungs,
        )

    def write(self, ended: str = "running", code: int | None = None) -> FrontierRecord:
        """Write frontier.json (atomically) from :meth:`snapshot`; OSError when it
        cannot be written (the previous file stays)."""
        assert self.path is not None
        rec = self.snapshot(ended, code)
        write_atomic(self.path, (rec.model_dump_json(indent=1) + "\n").encode())
        self.written_code = rec.exit_code
        return rec


def last_words(state: FrontierState, reason: str) -> LastWords:
    """What the frontier leaves when its process is ended by ``reason`` (no solver:
    memory and one atomic write): frontier.json with every rung (finished, cut with its
    best certified model so far, not started) and the table. Call with ``state.lock``
    held (the guard holds it); the exit code is ``state.committed``, read before."""
    if state.child is not None:  # its own guard ends it after a commit in progress
        with contextlib.suppress(OSError):
            os.kill(state.child, signal.SIGTERM)
    if not state.started:
        return LastWords("", f"{reason}: stopped before the first rung; nothing was written")
    rec = state.snapshot(ended=reason)
    counts = {s: sum(r.state == s for r in rec.rungs) for s in ("finished", "cut", "not started")}
    listed = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    try:
        state.write(ended=reason)
        note = f"{reason}: wrote {state.path} ({listed})"
    except OSError as e:
        note = f"{reason}: could not write {state.path} ({e.strerror or e})"
    return LastWords(render_text(rec), note, rec)
