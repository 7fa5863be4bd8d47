"""The progress display of a long run (:mod:`pace_cert.progress`, shared with the
library's :func:`pace_cert.compress`)."""

from pace_cert.progress import ProgressDisplay

__all__ = ["ProgressDisplay"]
