"""The report as plain data: a versioned schema with provenance (``docs/report-schema.md``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..analysis.gap import SCHEMA, SCHEMA_VERSION
from .kernel_text import levels_in_order

if TYPE_CHECKING:
    from ..analysis.gap import GapReport


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
        },
        "findings": [f.to_dict() for f in report.findings],
        "operation_rows": [r.to_dict() for r in report.operation_rows],
        "scope_rows": [r.to_dict() for r in report.scope_rows],
        "kernel_rows": [r.to_dict() for r in report.kernel_rows],
    }
