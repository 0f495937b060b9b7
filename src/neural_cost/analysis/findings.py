"""Findings: what the numbers mean, naming the operations and scopes that decide them.

One small function per finding code, registered with ``@finding(code, severity)``: it reads
the scored report and yields the message of each finding it has to make (none, one, or one
per loop). ``build_findings`` runs them in registration order, which is the order the
report prints them in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.dtypes import dtype_info
from ..core.kernels import COMPILED_EXCESS, computes_beyond
from ..core.units import format_percent, format_percent_down, format_seconds, format_si, plural
from .suspects import above_100_message, first_touch_message, kernel_movers, low_time_message, measured_gap_cause

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
#: Share of the observed time the measured page faults must cost to name the allocator as the cause.
PAGE_FAULT_SHARE = 0.10


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


#: A finding rule: reads the scored report, yields the message of each finding it makes.
FindingRule = Callable[["GapReport"], Iterator[str]]


@dataclass(frozen=True, slots=True)
class RegisteredFinding:
    code: str
    severity: str
    header: bool
    rule: FindingRule


#: Every finding code with its rule, in the order the report prints them.
FINDING_RULES: dict[str, RegisteredFinding] = {}


def finding(code: str, severity: str, *, header: bool = False) -> Callable[[FindingRule], FindingRule]:
    """Register the function below as the rule for ``code``; its severity and placement are
    declared here, once, so every message it yields is filed the same way."""
    if severity not in SEVERITIES:
        raise ValueError(f"finding {code!r}: severity {severity!r} is not one of {SEVERITIES}")

    def register(rule: FindingRule) -> FindingRule:
        if code in FINDING_RULES:
            raise ValueError(f"finding {code!r} is registered twice")
        FINDING_RULES[code] = RegisteredFinding(code, severity, header, rule)
        return rule

    return register


def build_findings(report: GapReport) -> tuple[Finding, ...]:
    return tuple(
        Finding(entry.code, message, entry.severity, entry.header)
        for entry in FINDING_RULES.values()
        for message in entry.rule(report)
    )


@finding("low_coverage", "warning", header=True)
def _low_coverage(report: GapReport) -> Iterator[str]:
    coverage, share = report.estimate.coverage, report.estimate.work_share
    low = []
    if coverage.fraction < report.coverage_threshold:
        covered = format_percent_down(coverage.modeled + coverage.free, coverage.total)
        low.append(f"only {covered} of the traced {coverage.unit} were modeled or free")
    if share is not None and share[0] / share[1] < report.coverage_threshold:
        low.append(
            f"at most {format_percent_down(*share)} of the work (FLOPs and bytes, unmodeled {coverage.unit} at "
            f"their elementwise floor, the least they can do) is in modeled {coverage.unit}"
        )
    if low:
        yield (
            f"Low coverage: {'; '.join(low)}; the roofline bound and efficiency describe part of the workload, "
            f"not all of it."
        )


@finding("low_time_coverage", "warning", header=True)
def _low_time_coverage(report: GapReport) -> Iterator[str]:
    message = low_time_message(report)
    if message:
        yield message


@finding("device_mismatch", "warning", header=True)
def _device_mismatch(report: GapReport) -> Iterator[str]:
    measurement, hardware = report.measurement, report.hardware
    if (
        measurement.device_kind not in ("unknown", "mixed")
        and hardware.kind != "unknown"
        and measurement.device_kind != hardware.kind
    ):
        assumed = measurement.device_source.startswith("assumed")
        yield (
            f"Device mismatch: the work ran on a {measurement.device_kind} ({measurement.device}"
            f"{', assumed: nothing said where it ran' if assumed else ''}) but is scored "
            f"against {hardware.kind} peaks ({hardware.name}); the efficiency describes a device the work did not "
            f"run on. Score it against the device it ran on."
        )


@finding("efficiency_above_100", "warning")
def _efficiency_above_100(report: GapReport) -> Iterator[str]:
    if report.efficiency <= 1:
        return
    yield above_100_message(report)


@finding("unmodeled_ops", "warning")
def _unmodeled_ops(report: GapReport) -> Iterator[str]:
    coverage = report.estimate.coverage
    if coverage.unmodeled:
        listed = ", ".join(f"{name} x{count}" for name, count in coverage.unmodeled[:5])
        more = f" and {len(coverage.unmodeled) - 5} more" if len(coverage.unmodeled) > 5 else ""
        yield (
            f"{coverage.unmodeled_count} of {plural(coverage.total, coverage.unit)} have no cost rule "
            f"({listed}{more}); "
            f"their time is in the observed figure but not in the bound."
        )


@finding("assumed_loop_count", "warning")
def _assumed_loop_count(report: GapReport) -> Iterator[str]:
    for loop in report.estimate.loop_assumptions:
        if loop.assumed:
            where = ", ".join(p for p in (loop.scope, loop.location) if p)
            yield (
                f"Loop {loop.label}{f' ({where})' if where else ''} was counted {loop.trip_count} times by "
                f"default: "
                f"nothing said how many times it runs. Pass its trip count to count it right."
            )


@finding("dtype_peak_fallback", "note")
def _dtype_peak_fallback(report: GapReport) -> Iterator[str]:
    hardware, estimate = report.hardware, report.estimate
    if hardware.peak_flops_by_dtype is None:
        return
    missing = [d for d, n in estimate.flops_by_dtype.items() if n and not hardware.has_peak(d)]
    if missing:
        yield (
            f"{hardware.name} has no peak for {', '.join(missing)}; those FLOPs are scored at peak_flops "
            f"({format_si(hardware.peak_flops, 'FLOP/s')})."
        )


@finding("single_peak", "note")
def _single_peak(report: GapReport) -> Iterator[str]:
    hardware, estimate = report.hardware, report.estimate
    if hardware.peak_flops_by_dtype is not None:
        return  # per-dtype peaks: dtype_peak_fallback names any dtype they lack
    if len(estimate.flops_by_dtype) > 1 or any(not d.startswith(("float", "bfloat")) for d in estimate.flops_by_dtype):
        yield (
            f"{hardware.name} has one peak ({format_si(hardware.peak_flops, 'FLOP/s')}) for every dtype: the "
            f"{', '.join(estimate.flops_by_dtype)} FLOPs are all scored at it. Give peak_flops_by_dtype to "
            f"score each at its own rate."
        )


@finding("executed_vs_dense", "note")
def _executed_vs_dense(report: GapReport) -> Iterator[str]:
    estimate = report.estimate
    if estimate.dense_flops != estimate.flops:
        yield (
            f"FLOPs follow the kernels that run: {format_si(estimate.flops, 'FLOP')} executed; a dense count "
            f"(as FlopCounterMode reports attention) would be {format_si(estimate.dense_flops, 'FLOP')}."
        )


@finding("compiled_work", "note")
def _compiled_work(report: GapReport) -> Iterator[str]:
    beyond = [kernel for kernel in report.estimate.kernels if computes_beyond(kernel)]
    if not beyond:
        return
    extra = sum(kernel.compiled_flops - kernel.flops for kernel in beyond)
    heaviest = sorted(beyond, key=lambda kernel: -kernel.compiled_flops)[:3]
    named = ", ".join(
        f"{k.name} {format_si(k.compiled_flops, 'FLOP')} for {format_si(k.flops, 'FLOP')}" for k in heaviest
    )
    example = (
        " (XLA:CPU, for one, computes a depthwise layer's filter gradient as a dense convolution over every "
        "channel pair, then keeps the diagonal)"
        if any(kernel.compiled_contraction == "convolution" for kernel in beyond)
        else ""
    )
    yield (
        f"The compiled program computes {format_si(extra, 'FLOP')} more than the program asks "
        f"({format_si(report.estimate.flops, 'FLOP')}): {plural(len(beyond), 'kernels')} run dots or convolutions of "
        f"over {COMPILED_EXCESS:g}× their records' FLOPs ({named}). The bound counts the program's work, so their "
        f"time is above it: the compiler added work{example}."
    )


def _advice_rows(report: GapReport) -> tuple[tuple[RowTime, ...], str]:
    rows = _rows_for_advice(report)
    return rows, "scopes" if rows is report.scope_rows else "operations"


@finding("memory_bound", "next")
def _memory_bound(report: GapReport) -> Iterator[str]:
    rows, unit = _advice_rows(report)
    if report.bound_seconds <= 0 or not rows or report.bound_side != "memory":
        return
    estimate = report.estimate
    if estimate.kernels:
        yield kernel_movers(report)
        return
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
    yield message


@finding("compute_bound", "next")
def _compute_bound(report: GapReport) -> Iterator[str]:
    rows, unit = _advice_rows(report)
    if report.bound_seconds <= 0 or not rows or report.bound_side != "compute":
        return
    total_flops = sum(r.flops for r in rows)
    dtypes = ", ".join(f"{d} {format_si(n, 'FLOP')}" for d, n in report.estimate.flops_by_dtype.items())
    yield (
        f"Compute-bound: the FLOPs are done by {_top_names(rows, 'flops', total_flops)} "
        f"(of {plural(len(rows), unit)}; "
        f"{dtypes}). {_precision_advice(report)}"
    )


@finding("large_gap", "next")
def _large_gap(report: GapReport) -> Iterator[str]:
    if not 0 < report.efficiency < 0.5:
        return
    bound, observed = report.bound_seconds, report.observed_seconds
    executions = sum(op.count for op in report.estimate.operations) or 1
    gap = observed - bound
    per_op = gap / executions
    measured = measured_gap_cause(report)
    if measured:
        cause = measured
    elif per_op < DISPATCH_GAP_SECONDS:
        cause = (
            "at this size per-operation dispatch and launch overhead, not FLOPs or bytes, decides the "
            "time; larger batches or fused operations amortise it."
        )
    else:
        rows = _rows_for_advice(report)
        top = rows[0].name if rows else "the largest operation"
        cause = (
            "more than dispatch costs: profile the largest rows "
            f"({top} first) for slow kernels, layout changes or synchronisation."
        )
    yield (
        f"Observed is {observed / bound:.1f}× the bound: {format_seconds(gap)} above it, "
        f"{format_seconds(per_op)} per executed operation ({executions}) — {cause}"
    )


@finding("above_expected", "next")
def _above_expected(report: GapReport) -> Iterator[str]:
    """The profiled kernels furthest above their expected time (``analysis/expected.py``), among
    those holding at least 5% of the measured time: where the program runs slower than this
    device runs kernels like it."""
    expected = report.expected
    if expected is None or expected.flags:  # another machine's expectation names nothing here
        return
    # The profiler slows what it watches; the expectation is of unwatched runs (as the calibration
    # scales its profiled kernels): measured kernel times are scaled by the timed runs' median ÷
    # the profiled runs' wall time per run (``Profile.unwatched_ratio``) before they are compared.
    # A kernel's measured time is its median profiled run's (``Profile.seconds_per_run``): one run's
    # stall on a shared machine (a few ms, once) names no kernel that runs at its expected time in the others.
    profile = report.profile
    per_run = profile.wall_seconds / profile.runs if profile is not None and profile.runs else 0.0
    unwatched = profile.unwatched_ratio(report.observed_seconds) if profile is not None else 1.0
    measured = {row.index: row.measured_seconds for row in expected.rows if row.measured_seconds is not None}
    rows = [
        row
        for row in expected.rows
        if row.basis == "model"  # a kernel scored at its bound has no expectation to be above
        and row.index is not None
        and row.index in measured
        and row.seconds > 0
        and measured[row.index] * unwatched >= 0.05 * report.observed_seconds
        and measured[row.index] * unwatched >= 1.5 * row.seconds
    ]
    rows.sort(key=lambda row: -measured[row.index] / row.seconds)
    if rows:
        shown = "; ".join(
            f"{row.name}: {measured[row.index] * unwatched / row.seconds:.1f}× its expected time "
            f"({format_seconds(measured[row.index])} measured, "
            f"{format_seconds(row.seconds)} expected)"
            for row in rows[:3]
        )
        scaled = (
            ""
            if unwatched == 1.0
            else f" (measured times ×{unwatched:.2f}: the profiled runs took {format_seconds(per_run)} each, "
            f"the timed runs {format_seconds(report.observed_seconds)})"
        )
        yield f"slower than this device runs kernels like them: {shown}{scaled}"


@finding("page_faults", "next")
def _page_faults(report: GapReport) -> Iterator[str]:
    """The timed runs' measured page faults, priced at the calibration's first-touch cost, when
    they cost at least ``PAGE_FAULT_SHARE`` of the observed time beyond what the expected time
    counts: glibc gave the memory back and maps it again each run; how to keep it."""
    from .fresh_pages import KEEP_PAGES, glibc_allocator, measured_fault_seconds

    expected = report.expected
    if expected is None or expected.flags:
        return
    faults = report.measurement.allocator.get("minor_page_faults_per_run") or 0
    measured = measured_fault_seconds(report.measurement.allocator, expected.first_touch_seconds_per_byte)
    if measured is None:
        return
    allocator = glibc_allocator()
    seconds = measured - expected.fresh_page_seconds
    if allocator.caveat is not None or seconds < PAGE_FAULT_SHARE * report.observed_seconds:
        return
    if allocator.mapped_from is None and (allocator.trim_bytes or 0) >= 1 << 30:  # already kept: not this
        return
    yield (
        f"page faults cost ≈ {format_seconds(seconds)} per run beyond what the expected time counts "
        f"({format_percent(seconds / report.observed_seconds)} of the observed time; {faults:,.0f} measured at the "
        f"calibrated first-touch cost): glibc ({allocator.settings}) returns freed memory to the system and maps "
        f"it again on the next run. Keep it with {KEEP_PAGES} in the environment (nothing mapped, nothing "
        f"returned; the process keeps its peak memory), or preload jemalloc or tcmalloc"
    )


@finding("first_touch", "note")
def _first_touch(report: GapReport) -> Iterator[str]:
    message = first_touch_message(report)
    if message:
        yield message


@finding("few_runs", "note")
def _few_runs(report: GapReport) -> Iterator[str]:
    runs = report.measurement.runs
    if runs < FEW_RUNS:
        yield (
            f"Only {runs} timed run{'s' if runs != 1 else ''}: the median and spread are "
            f"not reliable; use at least {FEW_RUNS}."
        )


@finding("high_spread", "note")
def _high_spread(report: GapReport) -> Iterator[str]:
    measurement = report.measurement
    if measurement.runs < FEW_RUNS:
        return  # few_runs already says the spread is not reliable
    if measurement.median_seconds > 0 and measurement.stdev_seconds / measurement.median_seconds > HIGH_SPREAD:
        yield (
            f"Timing spread is {format_percent(measurement.stdev_seconds / measurement.median_seconds)} of the "
            f"median "
            f"(stdev {format_seconds(measurement.stdev_seconds)}): other load, frequency scaling or too few warmup "
            f"runs; treat the efficiency as ± that much."
        )
