"""A rung in a process of its own: the per-rung hard stop.

A step that does not stop on its budget (an uninterruptible solver call, a long numpy
step) must not eat the later rungs' time. Each rung of a local frontier runs in a
forked child process (:func:`run_in_child`): the child holds its own process guard
(``pace_cert/plumbing/guard.py``), which ends it at the rung's hard stop after taking its output
directory's commit lock, so the rung's directory always holds its last complete file
set; the parent stops waiting at the same moment (SIGTERM, then SIGKILL after a grace)
and lists the rung as cut with the best certified model it committed. The child's
progress lines, commits and result come back through a pipe. Memory the rung used is
returned to the system when its process ends.

:class:`KeepBest` is the output directory of a rung's second pass: it only takes file
sets of a certified model smaller than the one already on disk.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import sys
import time
from collections.abc import Callable
from typing import Any

from pace_cert.plumbing.outputs import Committed, OutputDir

#: seconds between SIGTERM and SIGKILL of a child that overran its hard stop
KILL_GRACE = 3.0
#: seconds the parent keeps reading the pipe after the child's hard stop
READ_GRACE = 1.0


def isolation_available() -> bool:
    """Whether rungs can run in forked processes (POSIX fork)."""
    return hasattr(os, "fork")


class KeepBest(OutputDir):
    """An output directory that only commits a certified model smaller (trees, then
    leaves) than ``best``: a second pass never replaces the first pass's model with a
    larger one or with the original."""

    def __init__(self, path, best: tuple[int, int]) -> None:
        super().__init__(path)
        self.best = best

    def commit(self, files: dict[str, bytes], committed: Committed) -> None:
        size = better_size(files.get("certificate.json", b"{}"), self.best)
        if committed.exit_code == 0 and size is not None:
            super().commit(files, committed)
            self.best = size


def better_size(cert_bytes: bytes, best: tuple[int, int]) -> tuple[int, int] | None:
    """The (trees, leaves) of a certificate's model when it is certified and smaller
    than ``best``, else None."""
    try:
        s = json.loads(cert_bytes)["summary"]
        size = (int(s["trees_after"]), int(s["leaves_after"]))
        return size if s["certified"] and size < best else None
    except (ValueError, KeyError, TypeError):
        return None


def run_in_child(
    work: Callable[..., Any],
    job: Any,
    hard_stop: float | None,
    say: Callable[[str], None],
    on_commit: Callable[[Any], None],
    output_factory: Callable[[], OutputDir],
    on_child: Callable[[int | None], None] | None = None,
) -> tuple[Any | None, str]:
    """Run ``work(job, say, output, on_commit)`` in a forked child that ends at
    ``hard_stop`` (a ``time.perf_counter()`` value; None: no stop). Returns (its result,
    "") or (None, why the child did not return one). An exception in the child is raised
    here. ``on_child``: told the child's pid once started, None once it has ended."""
    sys.stdout.flush()  # the child must not write the parent's buffered output again
    sys.stderr.flush()
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(
        target=_child,
        args=(work, job, hard_stop, send, output_factory),
        name="pace-cert-rung",
        daemon=True,
    )
    child.start()
    send.close()
    if on_child is not None:
        on_child(child.pid)
    result, why = None, ""
    try:
        while True:
            wait = 0.5 if hard_stop is None else hard_stop + READ_GRACE - time.perf_counter()
            if wait <= 0:
                why = "hard stop: the rung overran its share (a step did not stop on its budget)"
                break
            if not receive.poll(min(wait, 0.5)):
                if not child.is_alive() and not receive.poll():
                    why = f"the rung's process ended (exit code {child.exitcode})"
                    break
                continue
            try:
                kind, payload = receive.recv()
            except (EOFError, OSError, pickle.UnpicklingError):
                child.join()
                why = f"the rung's process ended (exit code {child.exitcode})"
                break
            if kind == "say":
                say(payload)
            elif kind == "commit":
                on_commit(payload)
            elif kind == "done":
                result = payload
                break
            elif kind == "stopped":
                why = payload
                break
            else:  # "error"
                raise payload
    finally:
        stop_child(child)
        receive.close()
        if on_child is not None:
            on_child(None)
    return result, why


def stop_child(child) -> None:
    """End ``child`` (its guard finishes a commit in progress first), SIGKILL after
    KILL_GRACE."""
    child.join(timeout=KILL_GRACE if not child.is_alive() else 0.2)
    if child.is_alive():
        child.terminate()
        child.join(timeout=KILL_GRACE)
    if child.is_alive():
        child.kill()
        child.join()


def _child(work, job, hard_stop, send, output_factory) -> None:
    import threading

    from pace_cert.app import guard_outcome
    from pace_cert.driver.result import StopReason
    from pace_cert.plumbing.guard import GuardStop, ProcessGuard

    output = output_factory()
    sending = threading.Lock()  # the guard's thread and this one share the pipe

    def post(message: tuple) -> None:
        with sending:
            send.send(message)

    def stopped(stop: GuardStop) -> int:
        """The rung's hard stop: its certificate records the stop (no solver), the
        parent is told; the exit code is the signal's, else the last commit's."""
        why = (
            "the rung's hard stop (its share of the time limit) ended the run"
            if stop.signal is None
            else f"{stop.signal} ended the run"
        )
        guard_outcome(
            output, StopReason("rung", why, time_limit=stop.time_limit, signal=stop.signal)
        )
        if sending.acquire(timeout=0.5):
            send.send(("stopped", f"hard stop: stopped by {stop.cause}"))
        committed = output.committed
        return stop.signal_exit_code or (committed.exit_code if committed is not None else 2)

    with ProcessGuard(output, hard_stop, stopped):
        try:
            res = work(job, lambda m: post(("say", m)), output, lambda r: post(("commit", r)))
            post(("done", res))
        except BaseException as e:  # sent to the parent, raised there
            try:
                post(("error", e))
            except Exception:  # an exception that does not pickle
                post(("error", RuntimeError(f"{type(e).__name__}: {e}")))
    send.close()
