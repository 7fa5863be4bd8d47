"""One exception family, raised deep and mapped to exit codes once, at the CLI edge."""

from __future__ import annotations


class PaceError(Exception):
    """Base class of every error the CLI turns into an exit code."""

    exit_code = 4


class InputError(PaceError):
    """Bad input: a file is missing, unreadable, malformed or unsupported (exit 3)."""

    exit_code = 3

    def __init__(self, path: object, problem: str) -> None:
        self.path = str(path) if path is not None else None
        self.problem = problem
        super().__init__(f"{self.path}: {problem}" if self.path else problem)


class EmptyRegion(InputError):
    """No training row lies in the region: nothing to certify over (exit 3). The
    caller that knows the data file names it (``app.run_compress``); ``region`` holds
    what it needs to say why (the driver's domain, margin threshold and plausibility
    forest)."""

    def __init__(self, problem: str, region: dict | None = None, path: object = None) -> None:
        super().__init__(path, problem)
        self.region = region or {}


class Refuted(PaceError):
    """A counterexample exists: the two models disagree inside the region (exit 1)."""

    exit_code = 1


class Inconclusive(PaceError):
    """A time limit stopped the proof before every pair was settled (exit 2)."""

    exit_code = 2


def exit_code_of(e: BaseException) -> int:
    """The process exit code the CLI gives for ``e`` (``cli.common.run_command``): a
    PaceError's own code, 130 for Ctrl-C, ``SystemExit``'s code, else 4 (internal)."""
    if isinstance(e, PaceError):
        return e.exit_code
    if isinstance(e, KeyboardInterrupt):
        return 130
    if isinstance(e, SystemExit):
        return e.code if isinstance(e.code, int) else 1
    return 4
