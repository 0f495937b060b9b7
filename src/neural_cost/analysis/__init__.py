"""Gap analysis: bound vs observed, findings, per-row times."""

from .findings import Finding
from .gap import DEFAULT_COVERAGE_THRESHOLD, SCHEMA, SCHEMA_VERSION, GapReport, analyze_gap
from .rows import RowTime, compute_seconds

__all__ = [
    "DEFAULT_COVERAGE_THRESHOLD",
    "SCHEMA",
    "SCHEMA_VERSION",
    "Finding",
    "GapReport",
    "RowTime",
    "analyze_gap",
    "compute_seconds",
]
