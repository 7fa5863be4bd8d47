"""The progress display of a long run: one line a message, and a status line on a
terminal; in a Jupyter notebook one area updated in place (:class:`NotebookProgress`).
The CLI's ``compress`` and the library's :func:`pace_cert.compress` use it."""

from __future__ import annotations

import contextlib
import html
import io
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pace_cert.cert.certificate import Certificate
    from pace_cert.plumbing.budget import Budget


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


class NotebookProgress(ProgressDisplay):
    """The same progress in a Jupyter notebook: one output area, updated in place with
    the last message and the status line (best certified size, lower bound, time left),
    instead of a line per message. ``display``: IPython's ``display`` function
    (:func:`notebook_display`)."""

    def __init__(self, start: float, budget: Budget | None, display: Callable[..., Any]) -> None:
        super().__init__(False, start, budget, stream=io.StringIO(), tty=False)
        self._display = display
        self._handle: Any = None
        self._last = "starting"

    def begin(self) -> None:
        self._handle = self._display(_Area(self._text()), display_id=True)

    def close(self) -> None:
        self._show()

    def _line(self, msg: str) -> None:
        with self._lock:
            self._last = f"[{time.perf_counter() - self.start:7.1f}s] {msg}"
        self._show()

    def _redraw(self) -> None:
        self._show()

    def _text(self) -> str:
        return f"{self._last}\n  best: {self.status()}"

    def _show(self) -> None:
        with self._lock:
            area = _Area(self._text())
            if self._handle is None:
                self._handle = self._display(area, display_id=True)
            else:
                self._handle.update(area)


class _Area:
    """What the notebook shows: the text, preformatted."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.text)}</pre>"


def notebook_display() -> Callable[..., Any] | None:
    """IPython's ``display`` when this runs in a Jupyter kernel, else None (a terminal,
    a script, terminal IPython). IPython is never imported here: a kernel has it
    imported already."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)()
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    from IPython.display import display  # type: ignore[import-not-found]

    return display


def progress_for(quiet: bool, start: float, budget: Budget | None) -> ProgressDisplay:
    """The progress of a library call: in place in a notebook, else lines on stderr (a
    status line below them on a terminal); nothing with ``quiet``."""
    display = None if quiet else notebook_display()
    if display is not None:
        return NotebookProgress(start, budget, display)
    return ProgressDisplay(quiet, start, budget)
