"""What the kernel-bound findings say: which kernels decide the bound, and which assumption
behind them could be wrong when the observed time beats it.

An efficiency above 100% is never clamped; it names the kernels that make up most of the
bound and, for each, the assumption it rests on: the memory level its footprint was placed
in (data a kernel finds in a cache only because an earlier call or iteration left it there),
a peak from a formula or table rather than a measurement, a loop count that was assumed.

With a profiled pass (``analysis/timing.py``), the large-gap finding names the kernels measured
furthest above their own bounds and the time outside every kernel, and a time coverage below the
report's threshold is a header warning naming the unmodeled operations by their time.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from ..core.units import format_percent, format_seconds, format_si

if TYPE_CHECKING:
    from .gap import GapReport
    from .kernels import KernelTime

#: Kernels named in a finding, at most.
NAMED = 3
#: Results of one call at least this large are fresh pages on a CPU (malloc maps them anew).
FIRST_TOUCH_BYTES = 32 << 20
#: Below this efficiency a CPU program writing fresh pages is told about first-touch faults.
FIRST_TOUCH_EFFICIENCY = 0.8
_CACHE = re.compile(r"^L\d")


def _deciding(report: GapReport) -> list[KernelTime]:
    """The kernels that make up most of the bound (costliest first, up to ``NAMED``)."""
    rows = [row for row in report.kernel_rows[:NAMED] if row.bound_seconds > 0]
    return [row for i, row in enumerate(rows) if i == 0 or row.share >= 0.05]


def _kernel_phrase(row: KernelTime) -> str:
    where = f"{row.level} at {format_si(row.bandwidth, 'B/s')}"
    footprint = "" if row.footprint_bytes is None else f", footprint {format_si(row.footprint_bytes, 'B')}"
    side = f"{row.bound_side}-bound"
    runs = f", ×{row.executions:,}" if row.executions > 1 else ""
    return f"{row.name} ({format_percent(row.share)} of the bound, {side}, scored at {where}{footprint}{runs})"


def _assumptions(report: GapReport, deciding: list[KernelTime]) -> list[str]:
    hardware, estimate = report.hardware, report.estimate
    found: list[str] = []
    observed, floor = report.observed_seconds, report.compulsory_seconds
    if observed < report.compute_seconds:
        found.append(
            f"the peak or the FLOP count: observed is below the compute time alone "
            f"({format_seconds(report.compute_seconds)} at the spec's peaks), which no placement of data or fusion "
            f"changes"
        )
    if floor is not None and observed < floor:
        found.append(
            f"the bandwidth: observed is below the compulsory floor ({format_seconds(floor)}: the program's inputs, "
            f"parameters and outputs once at {format_si(hardware.memory_bandwidth, 'B/s')}); only data already in a "
            f"cache, or a higher bandwidth than the spec's, explains it"
        )
    caches = [level for level in hardware.memory_levels if _CACHE.match(level.name)]
    cached = [row for row in deciding if row.bound_side == "memory" and row.level not in (None, _main(report))]
    if cached:
        found.append(
            f"the footprint: {', '.join(r.name for r in cached)} {'was' if len(cached) == 1 else 'were'} scored at "
            f"{', '.join(dict.fromkeys(r.level for r in cached))}, assuming the data starts there; if it fits only "
            f"because an earlier call or iteration left it there, a faster level or fewer bytes explain the rest"
        )
    at_main = [
        row
        for row in deciding
        if row.bound_side == "memory"
        and row.level == _main(report)
        and row.footprint_bytes is not None
        and any(row.footprint_bytes <= level.capacity_bytes for level in caches)
    ]
    if at_main:
        found.append(
            f"the level: {', '.join(r.name for r in at_main)} fit{'s' if len(at_main) == 1 else ''} a cache but "
            f"{'was' if len(at_main) == 1 else 'were'} scored at {_main(report)} (the cache has no measured "
            f"bandwidth: `neural-cost hardware --calibrate` measures it)"
        )
    if not caches:
        small = [
            row
            for row in deciding
            if row.bound_side == "memory"
            and row.footprint_bytes is not None
            and row.footprint_bytes < FIRST_TOUCH_BYTES
        ]
        if small:
            named = ", ".join(f"{r.name} (footprint {format_si(r.footprint_bytes or 0, 'B')})" for r in small)
            found.append(
                f"the level: {hardware.name} lists no cache levels, so every kernel is scored at "
                f"{_main(report)}; {named} may be served from a cache (a spec from detect_hardware() lists them)"
            )
    if any(row.bound_side == "compute" for row in deciding):
        unmeasured = [
            dtype
            for dtype, flops in estimate.flops_by_dtype.items()
            if flops and not hardware.measured(f"peak_flops[{dtype}]")
        ]
        if unmeasured:
            found.append(
                f"the peak: {', '.join(unmeasured)} is scored at "
                f"{', '.join(format_si(hardware.peak(d), 'FLOP/s') for d in unmeasured)} "
                f"({hardware.source_of(f'peak_flops[{unmeasured[0]}]')}), not a measured rate"
            )
    assumed = [loop for loop in estimate.loop_assumptions if loop.assumed]
    if assumed:
        found.append(
            f"the count: {', '.join(f'{loop.label} ×{loop.trip_count}' for loop in assumed)} "
            f"{'is' if len(assumed) == 1 else 'are'} assumed trip counts (default_trip_count)"
        )
    if not estimate.kernels and floor is not None and observed >= max(floor, report.compute_seconds):
        found.append(
            "the traffic: no compiled program was read, so each operation is scored at its unfused traffic; "
            f"a compiler that fuses them moves less (the compulsory floor is {format_seconds(floor)})"
        )
    return found


def _main(report: GapReport) -> str:
    rows = report.kernel_rows
    unmapped = [row.level for row in rows if row.footprint_bytes is None]
    if unmapped:
        return unmapped[0]
    mains = [level.name for level in report.hardware.memory_levels if not _CACHE.match(level.name)]
    return mains[-1] if mains else "main memory"


def above_100_message(report: GapReport) -> str:
    """The efficiency-above-100% finding: the deciding kernels and what could be wrong."""
    hardware = report.hardware
    deciding = _deciding(report)
    message = (
        f"Efficiency above 100%: observed {format_seconds(report.observed_seconds)} is faster than the bound "
        f"{format_seconds(report.bound_seconds)} on {hardware.name} ({hardware.source})."
    )
    if deciding:
        message += f" The bound is decided by {'; '.join(_kernel_phrase(row) for row in deciding)}."
    suspects = _assumptions(report, deciding)
    if suspects:
        message += " What could be wrong: " + "; ".join(suspects) + "."
    else:
        message += " No assumption behind these kernels is flagged: the peak or the count must be wrong."
    return message


def first_touch_message(report: GapReport) -> str | None:
    """On a CPU, results allocated afresh by every call are new pages the OS maps on first
    write, a cost the bound does not contain; named when they are large and the efficiency low."""
    if report.measurement.device_kind != "cpu" or report.efficiency >= FIRST_TOUCH_EFFICIENCY:
        return None
    outputs = {t.name: t.nbytes for t in report.estimate.boundary if t.role == "output"}
    fresh = sum(outputs.values())
    if fresh < FIRST_TOUCH_BYTES:
        return None
    largest = sorted(outputs.items(), key=lambda item: -item[1])[:NAMED]
    named = ", ".join(f"{name} {format_si(nbytes, 'B')}" for name, nbytes in largest)
    return (
        f"First-touch page faults: every call returns {format_si(fresh, 'B')} in newly allocated buffers ({named}); "
        f"on a CPU each new page is mapped by the OS when first written, which the bound (bytes at bandwidth) does "
        f"not contain and which can take much of the observed time at this size. Reuse the buffers (donate the "
        f"input, update in place, or loop inside the call) to time what the bound describes."
    )


def kernel_movers(report: GapReport) -> str:
    """The memory-bound finding when the compiled program's kernels were read."""
    estimate = report.estimate
    memory_rows = [row for row in report.kernel_rows if row.bound_side == "memory"]
    total = sum(row.traffic_bytes for row in memory_rows) or 1
    top = sorted(memory_rows, key=lambda row: -row.traffic_bytes)[:NAMED]
    movers = ", ".join(f"{row.name} {format_percent(row.traffic_bytes / total)}" for row in top)
    message = (
        f"Memory-bound: of the compiled traffic, the memory-bound kernels' bytes are moved by {movers} "
        f"(of {len(report.kernel_rows)} kernels)."
    )
    if estimate.compulsory_bytes:
        ratio = estimate.compiled_bytes / estimate.compulsory_bytes
        if ratio >= 1.05:
            message += (
                f" Compiled traffic is {ratio:.1f}× the compulsory floor: fusing those kernels further, or keeping "
                f"their intermediates out of memory, is the headroom."
            )
    return message


def percent_down(fraction: float) -> str:
    """``fraction`` as a percentage rounded *down* to 0.1% (so 99.96% never reads as a complete
    100.0%); ``100.0%`` only when it is 1. The text report's time share prints through it too."""
    if fraction >= 1:
        return "100.0%"
    tenths = min(math.floor(fraction * 1000 + 1e-9), 999)  # 1e-9: 0.961 * 1000 is 960.9999...
    return f"{tenths // 10}.{tenths % 10}%"


def _outside(report: GapReport) -> str:
    """``outside kernels (dispatch, syncs, idle gaps) 100.0 µs per run (25.0% of the profiled run)``."""
    coverage = report.time_coverage
    if coverage is None:
        return ""
    share = (
        f" ({format_percent(coverage.outside_seconds / coverage.wall_seconds)} of the profiled run)"
        if coverage.wall_seconds > 0
        else ""
    )
    return f"outside kernels (dispatch, syncs, idle gaps) {format_seconds(coverage.outside_seconds)} per run{share}"


def measured_gap_cause(report: GapReport) -> str | None:
    """The large-gap finding's cause when a profile exists: the (up to ``NAMED``) kernels whose
    measured time is furthest above their own bound, each with measured, bound and their ratio,
    and the time outside every kernel; None without a profile."""
    if report.profile is None or report.time_coverage is None:
        return None
    above = sorted(
        (r for r in report.kernel_rows if r.measured_seconds is not None and r.measured_seconds > r.bound_seconds),
        key=lambda r: -((r.measured_seconds or 0.0) - r.bound_seconds),
    )[:NAMED]
    outside = _outside(report)
    if not above:
        return f"no kernel is measured above its bound: the time is {outside}."
    parts = []
    for i, row in enumerate(above):
        measured = row.measured_seconds or 0.0
        ratio = f" ({measured / row.bound_seconds:.1f}×)" if row.bound_seconds > 0 else ""
        against = "against a bound of " if i == 0 else "against "
        parts.append(f"{row.name} {format_seconds(measured)} {against}{format_seconds(row.bound_seconds)}{ratio}")
    return f"measured per kernel, the furthest above their bounds: {', '.join(parts)}; {outside}."


def low_time_message(report: GapReport) -> str | None:
    """The low-time-coverage warning: the measured time in modeled kernels is below the report's
    coverage threshold; names the unmodeled operations by their share of the measured time."""
    coverage = report.time_coverage
    fraction = coverage.fraction if coverage is not None else None
    if coverage is None or fraction is None or fraction >= report.coverage_threshold:
        return None
    total = coverage.kernel_seconds + coverage.unmatched_seconds
    listed = ", ".join(f"{name} {format_percent(seconds / total)}" for name, seconds in coverage.unmodeled[:5])
    more = f" and {len(coverage.unmodeled) - 5} more" if len(coverage.unmodeled) > 5 else ""
    ceiling = "at most " if coverage.upper_bound else ""
    return (
        f"Low time coverage: {ceiling}{percent_down(fraction)} of the measured time "
        f"({format_seconds(total)} per run in kernels and unmatched events) is in modeled kernels; unmodeled by "
        f"time: {listed}{more}. The bound leaves their time out: the efficiency describes part of the run."
    )
