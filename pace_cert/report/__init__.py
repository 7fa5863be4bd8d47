"""`pace-cert report`: a certificate's self-contained HTML page, its sections and plots."""

from pace_cert.report.page import render, write_report

__all__ = ["render", "write_report"]
