"""The progress display of a long run: one line a message, and a status line on a
terminal."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from pace_cert.budget import Budget
    from pace_cert.cert.certificate import Certificate


class ProgressDisplay:
    """Progress of a compress run on ``stream`` (stderr).

    Every message is one line, prefixed by the seconds since ``start``. On a terminal a
    status line stays below them, redrawn in place every second: the best certified size
    so far, the proved lower bound and the time left. Elsewhere (a file, a pipe, CI)
    plain lines only, one more each time the best certified model changes. ``quiet``:
    nothing at all. Called with strings (the driver's progress callback); told of each
    commit by :meth:`committed` and of each proved bound by :meth:`bound_raised`."""

    def __init__(
        self,
        quiet: bool,
        start: float,
        budget: Budget | None = None,
        stream: IO[str] | None = None,
        tty: bool | None = None,
    ) -> None:
        self.quiet, self.start, self.budget = quiet, start, budget
        self.stream = sys.stderr if stream is None else stream
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)()) if tty is None else tty
        self.best: int | None = None  # trees of the best certified model so far
        self.original: int | None = None
        self.bound: int | None = None
        self._lock = threading.Lock()
        self._status_shown = False
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # ------------------------------------------------------------------ input
    def __call__(self, msg: str) -> None:
        self._line(msg)

    def bound_raised(self, k: int) -> None:
        """A higher size lower bound was proved."""
        self.bound = max(self.bound or 0, k)
        if self.tty:
            self._redraw()

    def committed(self, cert: Certificate) -> None:
        """A file set was written: its certificate (the best certified model so far,
        or the original unchanged)."""
        s = cert.summary
        self.original = s.trees_before
        if s.size_lower_bound is not None:
            self.bound = max(self.bound or 0, s.size_lower_bound)
        best = s.trees_after if s.certified else None
        if best is not None and best != self.best:
            self.best = best
            if not self.tty:
                self._line("best so far: " + self.status())
        if self.tty:
            self._redraw()

    def status(self) -> str:
        """best certified size, lower bound, time left."""
        if self.best is None:
            best = "nothing smaller certified yet"
        else:
            best = f"{self.best} trees certified"
        if self.original is not None:
            best += f" (original {self.original})"
        bound = "lower bound " + ("-" if self.bound is None else str(self.bound))
        left = None if self.budget is None else self.budget.left()
        when = "no time limit" if left is None else f"{max(left, 0.0):.0f} s left"
        return f"{best} | {bound} | {when}"

    # ---------------------------------------------------------------- output
    def begin(self) -> None:
        """Start redrawing the status line every second (terminals only)."""
        if self.quiet or not self.tty or self._ticker is not None:
            return
        self._ticker = threading.Thread(target=self._tick, name="pace-cert-progress", daemon=True)
        self._ticker.start()

    def close(self) -> None:
        """Stop the ticker and clear the status line (before the summary is printed)."""
        self._stop.set()
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join(timeout=2)
        with self._lock:
            self._clear()
            self._flush()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            self._redraw()

    def _line(self, msg: str) -> None:
        if self.quiet:
            return
        with self._lock:
            self._clear()
            self.stream.write(f"[{time.perf_counter() - self.start:7.1f}s] {msg}\n")
            if self.tty and not self._stop.is_set():
                self._draw()
            self._flush()

    def _redraw(self) -> None:
        if self.quiet or not self.tty or self._stop.is_set():
            return
        with self._lock:
            self._clear()
            self._draw()
            self._flush()

    def _draw(self) -> None:
        self.stream.write("  best: " + self.status())
        self._status_shown = True

    def _clear(self) -> None:
        if self._status_shown:
            self.stream.write("\r\x1b[K")
            self._status_shown = False

    def _flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # a closed stream: nothing to do
            self.stream.flush()
