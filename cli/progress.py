"""The progress display of a long run (:mod:`pace_cert.plumbing.progress`, shared with the
library's :func:`pace_cert.compress`)."""

from pace_cert.plumbing.progress import ProgressDisplay

__all__ = ["ProgressDisplay"]
