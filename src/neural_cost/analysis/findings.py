"""Findings: what the numbers mean, naming the operations and scopes that decide them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.dtypes import dtype_info
from ..core.units import format_percent, format_percent_down, format_seconds, format_si, plural

if TYPE_CHECKING:
    from .gap import GapReport
    from .rows import RowTime

SEVERITIES = ("warning", "note", "next")
#: Gap per executed operation below which dispatch overhead is the likely cause.
DISPATCH_GAP_SECONDS = 20e-6
HIGH_SPREAD = 0.10
FEW_RUNS = 5
#: Unfused ÷ compulsory traffic from which fusing is named as headroom (below it shows as "1.0×").
FUSION_HEADROOM = 1.05


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the report has to say. ``header`` findings print above the numbers."""

    code: str
    message: str
    severity: str = "note"
    header: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "severity": self.severity, "header": self.header}


def _top_names(rows: tuple[RowTime, ...], value: str, total: float, limit: int = 3) -> str:
    ranked = sorted(rows, key=lambda r: -float(getattr(r, value)))[:limit]
    parts = [f"{r.name} {format_percent(float(getattr(r, value)) / total)}" for r in ranked if getattr(r, value) > 0]
    return ", ".join(parts)


def _rows_for_advice(report: GapReport) -> tuple[RowTime, ...]:
    """Scopes when the trace has any, else operations: the unit a user would change."""
    scoped = [r for r in report.scope_rows if r.scope != "(no scope)"]
    return report.scope_rows if scoped and len(report.scope_rows) > 1 else report.operation_rows


def _precision_advice(report: GapReport) -> str:
    """Name a faster dtype the spec actually has, rather than advising precision in general."""
    hardware, flops = report.hardware, report.estimate.flops_by_dtype
    main = max(flops, key=lambda d: flops[d]) if flops else None
    faster = sorted(
        (
            (peak, dtype)
            for dtype, peak in (hardware.peak_flops_by_dtype or {}).items()
            if main is not None and peak > hardware.peak(main) and dtype_info(dtype).category == "float"
        ),
        reverse=True,
    )
    if main is not None and faster:
        peak, dtype = faster[0]
        return (
            f"{hardware.name} peaks {peak / hardware.peak(main):.1f}× higher in {dtype} than in {main}: "
            f"lower precision, or less work, moves the bound."
        )
    return f"{hardware.name} lists no faster floating-point dtype than {main}: only less work moves the bound."


def build_findings(report: GapReport) -> tuple[Finding, ...]:
    estimate, measurement, hardware = report.estimate, report.measurement, report.hardware
    coverage = estimate.coverage
    found: list[Finding] = []

    if coverage.fraction < report.coverage_threshold:
        covered = format_percent_down(coverage.modeled + coverage.free, coverage.total)
        found.append(
            Finding(
                "low_coverage",
                f"Low coverage: only {covered} of the traced {coverage.unit} were modeled or free; "
                f"the roofline bound and efficiency describe part of the workload, not all of it.",
                "warning",
                header=True,
            )
        )
    if (
        measurement.device_kind not in ("unknown", "mixed")
        and hardware.kind != "unknown"
        and measurement.device_kind != hardware.kind
    ):
        assumed = measurement.device_source.startswith("assumed")
        found.append(
            Finding(
                "device_mismatch",
                f"Device mismatch: the work ran on a {measurement.device_kind} ({measurement.device}"
                f"{', assumed: nothing said where it ran' if assumed else ''}) but is scored "
                f"against {hardware.kind} peaks ({hardware.name}); the efficiency describes a device the work did not "
                f"run on. Score it against the device it ran on.",
                "warning",
                header=True,
            )
        )

    bound, observed = report.bound_seconds, report.observed_seconds
    if report.efficiency > 1:
        floor = report.compulsory_seconds
        # Fusion removes memory traffic, never FLOPs: it can explain beating the unfused memory time
        # only while the observed time is still above both the compute time and the compulsory floor.
        if floor is not None and observed >= max(floor, report.compute_seconds):
            why = (
                f"It is still above the compute time ({format_seconds(report.compute_seconds)}) and the "
                f"compulsory floor ({format_seconds(floor)}), so a compiler that fused operations and kept "
                f"intermediates out of memory can explain it; otherwise the peak or the count is wrong."
            )
        else:
            why = "The peak or the count must be wrong: no schedule beats a correct roofline bound."
        found.append(
            Finding(
                "efficiency_above_100",
                f"Efficiency above 100%: observed {format_seconds(observed)} is faster than the bound "
                f"{format_seconds(bound)} on {hardware.name} ({hardware.source}). {why}",
                "warning",
            )
        )

    if coverage.unmodeled:
        listed = ", ".join(f"{name} x{count}" for name, count in coverage.unmodeled[:5])
        more = f" and {len(coverage.unmodeled) - 5} more" if len(coverage.unmodeled) > 5 else ""
        found.append(
            Finding(
                "unmodeled_ops",
                f"{coverage.unmodeled_count} of {plural(coverage.total, coverage.unit)} have no cost rule "
                f"({listed}{more}); "
                f"their time is in the observed figure but not in the bound.",
                "warning",
            )
        )
    for loop in estimate.loop_assumptions:
        if loop.assumed:
            where = ", ".join(p for p in (loop.scope, loop.location) if p)
            found.append(
                Finding(
                    "assumed_loop_count",
                    f"Loop {loop.label}{f' ({where})' if where else ''} was counted {loop.trip_count} times by "
                    f"default: "
                    f"nothing said how many times it runs. Pass its trip count to count it right.",
                    "warning",
                )
            )

    if hardware.peak_flops_by_dtype is not None:
        missing = [d for d, n in estimate.flops_by_dtype.items() if n and not hardware.has_peak(d)]
        if missing:
            found.append(
                Finding(
                    "dtype_peak_fallback",
                    f"{hardware.name} has no peak for {', '.join(missing)}; those FLOPs are scored at peak_flops "
                    f"({format_si(hardware.peak_flops, 'FLOP/s')}).",
                    "note",
                )
            )
    elif len(estimate.flops_by_dtype) > 1 or any(
        not d.startswith(("float", "bfloat")) for d in estimate.flops_by_dtype
    ):
        found.append(
            Finding(
                "single_peak",
                f"{hardware.name} has one peak ({format_si(hardware.peak_flops, 'FLOP/s')}) for every dtype: the "
                f"{', '.join(estimate.flops_by_dtype)} FLOPs are all scored at it. Give peak_flops_by_dtype to "
                f"score each at its own rate.",
                "note",
            )
        )
    if estimate.dense_flops != estimate.flops:
        found.append(
            Finding(
                "executed_vs_dense",
                f"FLOPs follow the kernels that run: {format_si(estimate.flops, 'FLOP')} executed; a dense count "
                f"(as FlopCounterMode reports attention) would be {format_si(estimate.dense_flops, 'FLOP')}.",
                "note",
            )
        )

    rows = _rows_for_advice(report)
    unit = "scopes" if rows is report.scope_rows else "operations"
    if bound > 0 and rows:
        if report.bound_side == "memory":
            total_bytes = sum(r.bytes for r in rows)
            movers = _top_names(rows, "bytes", total_bytes)
            message = f"Memory-bound: the bytes are moved by {movers} (of {plural(len(rows), unit)})."
            if estimate.compulsory_bytes:
                ratio = estimate.bytes / estimate.compulsory_bytes
                if ratio >= FUSION_HEADROOM:
                    message += (
                        f" Unfused traffic is {ratio:.1f}× the compulsory floor: fusing those operations or "
                        f"keeping their intermediates out of memory is the headroom."
                    )
            found.append(Finding("memory_bound", message, "next"))
        else:
            total_flops = sum(r.flops for r in rows)
            dtypes = ", ".join(f"{d} {format_si(n, 'FLOP')}" for d, n in estimate.flops_by_dtype.items())
            found.append(
                Finding(
                    "compute_bound",
                    f"Compute-bound: the FLOPs are done by {_top_names(rows, 'flops', total_flops)} "
                    f"(of {plural(len(rows), unit)}; "
                    f"{dtypes}). {_precision_advice(report)}",
                    "next",
                )
            )
    if 0 < report.efficiency < 0.5:
        executions = sum(op.count for op in estimate.operations) or 1
        gap = observed - bound
        per_op = gap / executions
        if per_op < DISPATCH_GAP_SECONDS:
            cause = (
                "at this size per-operation dispatch and launch overhead, not FLOPs or bytes, decides the "
                "time; larger batches or fused operations amortise it."
            )
        else:
            top = rows[0].name if rows else "the largest operation"
            cause = (
                "more than dispatch costs: profile the largest rows "
                f"({top} first) for slow kernels, layout changes or synchronisation."
            )
        found.append(
            Finding(
                "large_gap",
                f"Observed is {observed / bound:.1f}× the bound: {format_seconds(gap)} above it, "
                f"{format_seconds(per_op)} per executed operation ({executions}) — {cause}",
                "next",
            )
        )
    if measurement.runs < FEW_RUNS:
        found.append(
            Finding(
                "few_runs",
                f"Only {measurement.runs} timed run{'s' if measurement.runs != 1 else ''}: the median and spread are "
                f"not reliable; use at least {FEW_RUNS}.",
                "note",
            )
        )
    elif measurement.median_seconds > 0 and measurement.stdev_seconds / measurement.median_seconds > HIGH_SPREAD:
        found.append(
            Finding(
                "high_spread",
                f"Timing spread is {format_percent(measurement.stdev_seconds / measurement.median_seconds)} of the "
                f"median "
                f"(stdev {format_seconds(measurement.stdev_seconds)}): other load, frequency scaling or too few warmup "
                f"runs; treat the efficiency as ± that much.",
                "note",
            )
        )
    return tuple(found)
