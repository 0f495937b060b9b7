"""Rendering of reports: text and plain data."""

from .serialize import report_to_dict
from .text import render_report

__all__ = ["render_report", "report_to_dict"]
