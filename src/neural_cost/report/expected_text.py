"""The expected time as text: the ``expected:`` line, the per-kernel table, and a calibration's summary.

    expected: 21.3 ms (calibrated model; ±9% on its own held-out calibration points; framework floor 1.0 ms)

A calibration from another machine, framework or version is flagged on a line of its own, so a
reader never takes another device's expectation for this one's.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from ..analysis.calibration_history import NOTE_PREFIX as HISTORY_NOTE
from ..analysis.calibration_history import apart, is_loop
from ..analysis.expected import Expected
from ..analysis.fresh_pages import measured_fault_seconds
from ..analysis.linear_rows import fitted
from ..analysis.usual_loops import MAX_SHARE, changed_state, split_state
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


#: The usual-loop line is printed when it differs from the expected time by at least this share.
USUAL_APART = 0.05


def usual_line(expected: Expected, observed_seconds: float | None = None) -> str | None:
    """``expected with its loops as usual: 1.62 ms (...)`` where the calibration timed the program's loop
    kernels slower at the median of their passes than at their fastest (``Expected.usual_seconds``), by
    ``USUAL_APART`` or more; None otherwise."""
    usual = expected.usual_seconds
    if usual is None or expected.seconds <= 0 or usual < (1 + USUAL_APART) * expected.seconds:
        return None
    line = (
        f"expected with its loops as usual: {format_seconds(usual)} ({usual / expected.seconds:.2f}× the expected "
        f"time: its loops' kernels at the median of their calibration passes, not their fastest: the calibrated "
        f"machine ran them that much slower for much of its calibration)"
    )
    if observed_seconds is not None:
        line += f"; observed is {observed_seconds / usual:.2f}× it"
    return line


def now_line(expected: Expected, observed: float | None = None, when: str = "just after the timed runs") -> str | None:
    """``expected in the host's state now: 2.31 ms (...)`` (``Expected.now_seconds``) wherever the usual line is
    printed: which of the two the host's cross-core wake-up measured ``when`` reads, fast state included."""
    now, wake, wakes, usual = expected.now_seconds, expected.wake_seconds, expected.loop_wakes, expected.usual_seconds
    if now is None or wake is None or wakes is None or usual is None or expected.seconds <= 0:
        return None
    if usual < (1 + USUAL_APART) * expected.seconds:  # no usual line: the two states read alike
        return None
    state = (
        "read half at their fastest times and half at their usual ones (the two wake-ups lie on the two sides "
        "of the line between the calibration's states)"
        if split_state(expected)
        else "read at their fastest times (the quiet state: the expected time)"
        if now <= expected.seconds
        else "read at their usual times, more past the usual wake-up"
    )
    when = _when(expected, when)
    line = (
        f"expected in the host's state now: {format_seconds(now)} ({now / expected.seconds:.2f}× the expected time: "
        f"a cross-core wake-up took {format_seconds(wake)} {when}, {format_seconds(wakes[0])} before the "
        f"calibration's fastest loop passes and {format_seconds(wakes[1])} before its usual ones; its loops' kernels "
        f"{state}"
        + (
            f"; it lies past {MAX_SHARE:g} spans of those two, past what the calibration and the held-out scan "
            f"measured: held there)"
            if (max(expected.wake_around or (wake,)) - wakes[0]) > MAX_SHARE * (wakes[1] - wakes[0])
            else ")"
        )
    )
    if observed is not None:
        line += f"; observed is {observed / now:.2f}× it"
    return line


def _when(expected: Expected, when: str) -> str:
    """When the wake-up was measured: ``when``, or, where it was measured on both sides of the timed runs
    (``Expected.wake_around``), around them, and whether the host changed state while they ran."""
    if expected.wake_around is None:
        return when
    before, after = (format_seconds(wake) for wake in expected.wake_around)
    changed = "; the host changed state while they ran" if changed_state(expected) else ""
    return f"around the timed runs (the mean of {before} just before them and {after} just after{changed})"


#: A wake-up this many times off a calibration that saw one host state is named (``host_note``).
HOST_APART = 1.5


def host_note(expected: Expected, when: str = "just after the timed runs") -> str | None:
    """Where the calibration saw one host state only (its two wake-ups under ``WAKES_APART`` apart: no
    expectation now) and the wake-up measured ``when`` lies ``HOST_APART`` or more off it, for a program
    with a loop's kernels: which way its loops can run from the expected time, and how to measure them."""
    wake, when = expected.wake_seconds, _when(expected, when)
    if wake is None or expected.loop_wakes is None:
        return None
    low, high = sorted(expected.loop_wakes)
    if not low > 0 or apart(low, high) or not any(is_loop(row.kernel_class) for row in expected.rows):
        return None
    quieter, busier = wake * HOST_APART <= low, wake >= HOST_APART * high
    if not (quieter or busier):
        return None
    return (
        f"host state: a cross-core wake-up took {format_seconds(wake)} {when}, {format_seconds(low)}–"
        f"{format_seconds(high)} before the calibration's fastest and usual loop passes: the host is "
        + ("quieter now than when calibrated: its loops' kernels can run faster" if quieter
           else "busier now than when calibrated: its loops' kernels can run slower")
        + " than expected, by an amount the calibration cannot say (it saw one state; `neural-cost calibrate "
        f"--kernels --framework {expected.framework}` in this state measures them)"
    )  # fmt: skip


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
        memory = "memory*" if model.memory_axis == "main" else "memory"
        sides = [side for side, curve in (("compute", model.compute), (memory, model.memory)) if curve is not None]
        lines.append(f"{name:<{kind}} {model.points:>6} {median:>8} {p90:>8}  {' + '.join(sides)}")
    if any(model.memory_axis == "main" for model in calibration.classes.values()):
        lines.append(
            "memory*: read at main memory's bandwidth whatever level holds the kernel (its own held-out points "
            "were predicted better so than at the level's)"
        )
    usual = [p.usual_seconds / p.measured_seconds for p in calibration.points if p.usual_seconds and p.measured_seconds]
    if usual:
        lines.append(
            f"loops as usual: {len(calibration.usual_classes)} loop classes' curves also fitted at the median of "
            f"their programs' passes, {statistics.median(usual):.2f}× their fastest (median of {len(usual)} points; "
            f"`expected with its loops as usual`)"
        )
    if (rows := fitted(calibration)) is not None:
        lines.append(f"few-row products (`thin_matmul`, `thin_matmul:few`) by their rows: {rows.describe()}")
    if (cost := calibration.evicted_seconds_per_byte) is not None:
        lines.append(
            f"evicted operands: {format_si(1 / cost, 'B/s') if cost > 0 else 'no cost'} (an operand last in use "
            f"further back than the caches hold, on top of a kernel the grid timed with it cached; main memory streams "
            f"{format_si(calibration.hardware.memory_bandwidth, 'B/s')})"
        )
    if (wakes := calibration.loop_wakes) is not None:
        lines.append(
            f"host state: a cross-core wake-up took {format_seconds(wakes[0])} before the loop programs' fastest "
            f"passes, {format_seconds(wakes[1])} before their usual ones (medians over the loop programs; over merged "
            f"calibrations the smallest, and the median of those in the slower host state where they saw two; "
            f"`expected in the host's state now`"
            + ("" if apart(wakes[0], wakes[1]) else ": one state seen, none expected now")
            + ")"
        )
    lines += [
        f"note: {printable(note)}"
        for note in calibration.notes
        if "micro-programs" in note or note.startswith(HISTORY_NOTE)  # what was measured, and merged
    ]
    return lines
