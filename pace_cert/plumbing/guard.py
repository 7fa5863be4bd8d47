"""The process guard of the CLI's long commands: it never overruns, never tears files,
and the result still reaches the user.

The run's budget ends at the time limit; every phase spends from it, but a solver call
or a numpy step in progress cannot always be interrupted. The guard is the backstop:
a watcher thread ends the process at ``hard_deadline`` (a little past the limit), or at
SIGTERM / SIGINT. It first takes the output's commit lock, so the files on disk are the
last complete set committed (:mod:`pace_cert.plumbing.outputs`), then calls the command's *last
words* with a :class:`GuardStop` saying who ended the run. The last words print what a
normal end prints (the result block, or the ``--json`` object) from that last set,
record the stop in it, and return the exit code; the guard then ends the process.
For the command line only: a library caller keeps its process.

Any command can use it (``compress``, ``frontier``): it needs an object with a ``lock``
(held while the last words run; an ``RLock`` lets them commit once more) and a
``last_words(stop) -> exit code`` callback.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

SIGNALS = {signal.SIGTERM: 143, signal.SIGINT: 130}  # exit code: 128 + signal number
POLL_SECONDS = 0.2
#: exit code when the last words themselves fail (an internal error)
LAST_WORDS_FAILED = 4

#: Whoever points file descriptor 1 elsewhere for a moment (HiGHS's banner is silenced
#: so) holds this lock; the guard takes it before its last words print, so they are
#: never written to /dev/null.
STDOUT_LOCK = threading.Lock()


@dataclass(frozen=True)
class GuardStop:
    """Who ended the run: ``signal`` "SIGTERM" or "SIGINT" (exit code 143 / 130), or
    None for the hard deadline of the time limit (the exit code is then the last
    commit's: 0 a smaller certified model, 2 the original unchanged). ``at``: the
    ``time.perf_counter()`` value when the guard acted."""

    signal: str | None
    at: float

    @property
    def time_limit(self) -> bool:
        return self.signal is None

    @property
    def signal_exit_code(self) -> int | None:
        """128 + the signal number; None at the hard deadline."""
        return None if self.signal is None else SIGNALS[signal.Signals[self.signal]]

    @property
    def cause(self) -> str:
        """In words: ``SIGTERM``, ``SIGINT`` or ``the time limit``."""
        return "the time limit" if self.signal is None else self.signal


class Guarded(Protocol):
    """What the guard holds while it ends the process: the output's commit lock."""

    @property
    def lock(self) -> AbstractContextManager: ...


class NoFiles:
    """For a command that writes no files (``verify``): nothing to wait for."""

    def __init__(self) -> None:
        self.lock = threading.RLock()


def block_signals() -> set:
    """Block SIGTERM and SIGINT in the calling thread and every thread it starts from
    now on (numpy's and the solvers' worker threads among them), so they wait for the
    guard's watcher instead of ending the process mid-write. Call it before the heavy
    imports: some libraries start threads when imported. Returns the previous mask."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, set(SIGNALS))


class ProcessGuard:
    """Armed between :meth:`arm` and :meth:`disarm` (use as a context manager).

    ``last_words(stop)`` runs with ``output.lock`` held when the guard ends the
    process; it prints the result and returns the exit code. If it raises, the guard
    prints the error on stderr and exits with :data:`LAST_WORDS_FAILED` (or the
    signal's code)."""

    def __init__(
        self,
        output: Guarded,
        hard_deadline: float | None,
        last_words: Callable[[GuardStop], int],
    ) -> None:
        self.output = output
        self.hard_deadline = hard_deadline
        self.last_words = last_words
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
                self._end(GuardStop(name, time.perf_counter()))
            elif self.hard_deadline is not None and time.perf_counter() >= self.hard_deadline:
                self._end(GuardStop(None, time.perf_counter()))

    def _end(self, stop: GuardStop) -> None:
        code = stop.signal_exit_code
        with self.output.lock:  # a commit in progress finishes first
            try:
                with STDOUT_LOCK:  # fd 1 is not borrowed by anyone now
                    code = self.last_words(stop)
            except BaseException:
                sys.stderr.write(
                    f"internal error while reporting the stop by {stop.cause}:\n"
                    + traceback.format_exc()
                )
                code = LAST_WORDS_FAILED if code is None else code
            finally:
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(OSError, ValueError):  # a closed pipe
                        stream.flush()
                os._exit(LAST_WORDS_FAILED if code is None else code)
