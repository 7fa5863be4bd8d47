"""Freed memory back to the system, between the solver calls of a long run.

glibc's allocator keeps memory that was freed inside its heaps (one arena per thread
that allocates: the CP-SAT workers of a race, HiGHS in the main thread), and returns
it to the system only from the top of a heap. A long run alternates large short-lived
allocations (a HiGHS simplex over thousands of dense rows, CP-SAT models, the
screening pool's scores) between those threads, so its resident size grows towards
the sum of every arena's peak although far less is in use: measured on the realistic
suite, 150 MB of a 1 GB peak (benchmarks/results/memory.md). :func:`give_back` asks
glibc to return every freed page (``malloc_trim(0)``); elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None (another C library, another system)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def give_back(collect: bool = False) -> None:
    """Return the allocator's free pages to the system (glibc; elsewhere nothing);
    ``collect``: first run Python's cycle collector, so objects only a reference cycle
    keeps (a solver's frame in a caught exception's traceback) go, with the native
    memory they own (a HiGHS model: ~100 bytes a nonzero). Changes no value anywhere."""
    if collect:
        gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
