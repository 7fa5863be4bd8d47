"""The process guard of ``pace-cert compress``: it never overruns, never tears files.

The run's budget ends at the time limit; every phase spends from it, but a solver call
or a numpy step in progress cannot always be interrupted. The guard is the backstop:
a watcher thread ends the process at ``hard_deadline`` (a little past the limit), or at
SIGTERM / SIGINT, after taking the output directory's commit lock, so the files on disk
are the last complete set committed (:mod:`pace_cert.outputs`): the best certified
model so far, or the original unchanged. For the command line only: a library caller
keeps its process.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable

from pace_cert.outputs import Committed, OutputDir

SIGNALS = {signal.SIGTERM: 143, signal.SIGINT: 130}  # exit code: 128 + signal number
POLL_SECONDS = 0.2


def block_signals() -> set:
    """Block SIGTERM and SIGINT in the calling thread and every thread it starts from
    now on (numpy's and the solvers' worker threads among them), so they wait for the
    guard's watcher instead of ending the process mid-write. Call it before the heavy
    imports: some libraries start threads when imported. Returns the previous mask."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, set(SIGNALS))


class ProcessGuard:
    """Armed between :meth:`arm` and :meth:`disarm` (use as a context manager).

    ``report(committed, reason)`` prints the last words: ``committed`` is the last
    commit (None: nothing was written), ``reason`` says why the process ends."""

    def __init__(
        self,
        output: OutputDir,
        hard_deadline: float | None,
        report: Callable[[Committed | None, str], None],
    ) -> None:
        self.output = output
        self.hard_deadline = hard_deadline
        self.report = report
        self._disarmed = threading.Event()
        self._thread: threading.Thread | None = None
        self._old_mask: set | None = None

    def __enter__(self) -> ProcessGuard:
        self.arm()
        return self

    def __exit__(self, *exc) -> None:
        self.disarm()

    def arm(self) -> None:
        self._old_mask = block_signals()
        self._thread = threading.Thread(target=self._watch, name="pace-cert-guard", daemon=True)
        self._thread.start()

    def disarm(self) -> None:
        self._disarmed.set()
        if self._thread is not None:
            self._thread.join()
        if self._old_mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._old_mask)

    def _watch(self) -> None:
        while not self._disarmed.is_set():
            info = signal.sigtimedwait(set(SIGNALS), POLL_SECONDS)
            if self._disarmed.is_set():
                return
            if info is not None:
                name = signal.Signals(info.si_signo).name
                self._end(SIGNALS[signal.Signals(info.si_signo)], f"stopped by {name}")
            elif self.hard_deadline is not None and time.perf_counter() >= self.hard_deadline:
                self._end(None, "stopped at the time limit")

    def _end(self, code: int | None, reason: str) -> None:
        with self.output.lock:  # a commit in progress finishes first
            committed = self.output.committed
            try:
                self.report(committed, reason)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                if code is None:
                    code = committed.exit_code if committed is not None else 2
                os._exit(code)
