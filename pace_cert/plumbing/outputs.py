"""The run's output directory: every commit leaves a complete, consistent set of files.

``compress`` commits the original unchanged (with an inconclusive certificate) as soon as
the region is known, and again each time a smaller certified model is found, and once
more at the end; so the best certified model so far is always on disk. A commit writes
every file to a temporary name first, then renames them with the certificate last (it
names the compressed model's SHA-256: the commit point). A commit holds :attr:`lock`;
whoever ends the process early (the process guard, at its deadline or a signal) takes
the lock first, so no file set is ever left half-renamed, and may then commit once more
(the lock is re-entrant): the last set's certificate, saying how the run ended.
"""

from __future__ import annotations

import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Committed:
    """What the last commit wrote: its exit code (0 a smaller certified model, 2 the
    original unchanged) and the one-line summary the CLI prints for it; for compress
    also its ``certificate`` (the object written, so the result can be printed without
    reading or solving anything), the run's ``estimate``, ``final`` (the run's own
    last commit: its certificate already says how the run ended) and ``at``, the
    ``time.perf_counter()`` value when its result was taken."""

    exit_code: int
    summary: str
    certificate: Any = None
    estimate: Any = None
    final: bool = False
    at: float | None = None


class OutputDir:
    """``OUT_DIR``: committed file sets, one at a time (:meth:`commit`)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.lock = threading.RLock()
        self.committed: Committed | None = None

    def commit(self, files: dict[str, bytes], committed: Committed) -> None:
        """Write ``files`` (name -> bytes; the certificate last) as one set."""
        with self.lock:
            temps = []
            try:
                for name, blob in files.items():
                    temps.append((_write_temp(self.path / name, blob), self.path / name))
                for tmp, final in temps:
                    os.replace(tmp, final)
                temps = []
            finally:
                for tmp, _ in temps:
                    if os.path.exists(tmp):
                        os.unlink(tmp)
            self.committed = committed


def write_atomic(path: Path, data: bytes) -> None:
    """Write bytes to ``path`` via a unique temp file in the same directory + rename."""
    os.replace(_write_temp(Path(path), data), path)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_temp(path: Path, data: bytes) -> str:
    """``data`` in a fresh temporary file beside ``path`` (synced), its name."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp creates 0600; honour the user's umask
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp
