"""The expected time as text: the ``expected:`` line, the per-kernel table, and a calibration's summary.

    expected: 21.3 ms (calibrated model; ±9% on its own held-out calibration points; framework floor 1.0 ms)

A calibration from another machine, framework or version is flagged on a line of its own, so a
reader never takes another device's expectation for this one's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..analysis.calibration_history import NOTE_PREFIX as HISTORY_NOTE
from ..analysis.expected import Expected
from ..analysis.fresh_pages import measured_fault_seconds
from ..core.units import format_seconds, format_si
from ..hardware.kernel_model import KernelCalibration
from .printable import printable


def expected_line(expected: Expected, observed_seconds: float | None = None) -> str:
    """``expected: 21.3 ms (...)``, and the observed time's ratio to it when there is one."""
    line = f"expected: {format_seconds(expected.seconds)} ({expected.basis()})"
    cold = expected.cold_seconds
    if cold is not None and expected.first_touch_seconds:
        line += f", up to {format_seconds(cold)} if every large result lands on fresh pages (allocator state)"
    if observed_seconds is not None and expected.seconds > 0:
        line += f"; observed is {observed_seconds / expected.seconds:.2f}× it"
    return line


def page_fault_line(expected: Expected, allocator: Mapping[str, Any]) -> str | None:
    """What the timed runs' measured page faults cost at the calibration's first-touch cost,
    beside what the expected time counts of them: the allocator's state, measured (None where the
    calibration has no first-touch cost or the measurement no fault count)."""
    seconds = measured_fault_seconds(allocator, expected.first_touch_seconds_per_byte)
    if seconds is None:
        return None
    faults, page = allocator["minor_page_faults_per_run"], allocator["page_bytes"]
    per_page = page * (expected.first_touch_seconds_per_byte or 0.0)
    counted = (
        f"the expected time counts {format_seconds(expected.fresh_page_seconds)} of fresh-page time"
        if expected.first_touch_seconds is not None
        else "a compiled program's faults are measured, never predicted: the expected time counts none"
    )
    return (
        f"page faults: {faults:,.0f} per timed run measured (≈ {format_seconds(seconds)} at the "
        f"calibrated {format_seconds(per_page)} per {format_si(page, 'B')} page; a transparent huge page faults "
        f"once for 2 MiB and costs more); {counted}"
    )


def flag_lines(expected: Expected) -> list[str]:
    return [f"WARNING: {flag}" for flag in expected.flags]


def expected_table(expected: Expected, top: int) -> list[str]:
    """The kernels with the most expected time: class, executions, expected, bound, measured."""
    rows = expected.rows[:top]
    if not rows:
        return []
    width = max(len(printable(row.name)) for row in rows)
    width = min(max(width, len("kernel")), 48)
    kind = max(11, *(len(row.kernel_class) for row in rows))  # transcendental:sigmoid is 22
    lines = [f"{'kernel':<{width}}  {'class':<{kind}} {'runs':>6} {'expected':>10} {'bound':>10} {'measured':>10}"]
    for row in rows:
        measured = format_seconds(row.measured_seconds) if row.measured_seconds is not None else "—"
        basis = "" if row.basis == "model" else "  (roofline: no calibration for its class)"
        lines.append(
            f"{printable(row.name)[:width]:<{width}}  {row.kernel_class:<{kind}} {row.executions:>6} "
            f"{format_seconds(row.seconds):>10} {format_seconds(row.bound_seconds):>10} {measured:>10}{basis}"
        )
    if len(expected.rows) > top:
        rest = sum(row.seconds for row in expected.rows[top:])
        lines.append(f"... {len(expected.rows) - top} more kernels: {format_seconds(rest)} expected")
    return lines


def calibration_lines(calibration: KernelCalibration) -> list[str]:
    """What a kernel calibration is: where, when, how, and how well each class's curves predict."""
    error = (
        "—"
        if calibration.median_error is None
        else f"±{calibration.median_error:.0%} median, ±{(calibration.p90_error or 0):.0%} p90"
    )
    versions = ", ".join(f"{name} {version}" for name, version in sorted(calibration.versions.items())) or "unknown"
    kind = max(12, *(len(name) for name in calibration.classes), 0)
    lines = [
        f"kernel calibration: {calibration.framework} ({versions}) on {printable(calibration.hardware.name)}, "
        f"{calibration.date or 'undated'}",
        f"method: {calibration.method or 'unknown'}; {len(calibration.points)} points",
        f"cross-validated error on held-out calibration points: {error}",
        f"{'class':<{kind}} {'points':>6} {'median':>8} {'p90':>8}  curves",
    ]
    for name, model in sorted(calibration.classes.items()):
        median = "—" if model.median_error is None else f"{model.median_error:.0%}"
        p90 = "—" if model.p90_error is None else f"{model.p90_error:.0%}"
        sides = [side for side, curve in (("compute", model.compute), ("memory", model.memory)) if curve is not None]
        lines.append(f"{name:<{kind}} {model.points:>6} {median:>8} {p90:>8}  {' + '.join(sides)}")
    lines += [
        f"note: {printable(note)}"
        for note in calibration.notes
        if "micro-programs" in note or note.startswith(HISTORY_NOTE)  # what was measured, and merged
    ]
    return lines
