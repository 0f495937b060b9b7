"""The report as plain data: a versioned schema with provenance (``docs/report-schema.md``).

A profiled pass is saved whole (``profile``: ``Profile.to_dict``, or null) with the notes on it
(``profile_notes``); ``analysis.time_coverage`` and the rows' measured times are derived from it
and recomputed when the report is loaded. ``analysis.memory`` is one device's memory profile
(``GapReport.memory``) for a distributed program, null for a program on one device."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..analysis.gap import SCHEMA, SCHEMA_VERSION
from ..analysis.memory import is_distributed
from .kernel_text import levels_in_order

if TYPE_CHECKING:
    from ..analysis.gap import GapReport
    from ..analysis.timing import TimeCoverage


def time_coverage_to_dict(coverage: TimeCoverage | None) -> dict[str, Any] | None:
    """``analysis.time_coverage``: per run, in seconds; the unmodeled as ``[name, seconds]``, most first."""
    if coverage is None:
        return None
    return {
        "fraction": coverage.fraction,
        "modeled_seconds": coverage.modeled_seconds,
        "kernel_seconds": coverage.kernel_seconds,
        "unmodeled": [[name, seconds] for name, seconds in coverage.unmodeled],
        "outside_seconds": coverage.outside_seconds,
        "wall_seconds": coverage.wall_seconds,
        "union_seconds": coverage.union_seconds,
        "unmatched_seconds": coverage.unmatched_seconds,
        "unattributed": list(coverage.unattributed),
        "upper_bound": coverage.upper_bound,
    }


def report_to_dict(report: GapReport) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "provenance": report.provenance.to_json(),
        "hardware": report.hardware.to_dict(),
        "measurement": report.measurement.to_dict(),
        "estimate": report.estimate.to_dict(),
        "analysis": {
            "bound_seconds": report.bound_seconds,
            "roofline_seconds": report.roofline_seconds,
            "compute_seconds": report.compute_seconds,
            "memory_seconds": report.memory_seconds,
            "unfused_memory_seconds": report.unfused_memory_seconds,
            "compiled_bytes": report.estimate.compiled_bytes,
            "traffic_by_level": dict(levels_in_order(report)),
            "kernel_notes": list(report.kernel_notes),
            "compulsory_seconds": report.compulsory_seconds,
            "observed_seconds": report.observed_seconds,
            "efficiency": report.efficiency,
            "bound_side": report.bound_side,
            "achieved_flops_per_second": report.achieved_flops_per_second,
            "achieved_bytes_per_second": report.achieved_bytes_per_second,
            "coverage_threshold": report.coverage_threshold,
            "device_mismatch": report.device_mismatch,
            "time_coverage": time_coverage_to_dict(report.time_coverage),
            "kernel_bound_seconds": report.kernel_bound_seconds,
            "communication": report.communication.to_dict() if report.communication is not None else None,
            "utilization": report.utilization.to_dict() if report.utilization is not None else None,
            "memory": report.memory.to_dict() if is_distributed(report.estimate) else None,
        },
        "profile": report.profile.to_dict() if report.profile is not None else None,
        "profile_notes": list(report.profile_notes),
        "expected": report.expected.to_dict() if report.expected is not None else None,
        "findings": [f.to_dict() for f in report.findings],
        "operation_rows": [r.to_dict() for r in report.operation_rows],
        "scope_rows": [r.to_dict() for r in report.scope_rows],
        "kernel_rows": [r.to_dict() for r in report.kernel_rows],
    }
