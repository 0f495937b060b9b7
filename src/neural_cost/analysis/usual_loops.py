"""A program's expected time with its loops' kernels as the machine usually ran them while calibrated.

A calibration keeps each kernel's fastest time; a loop program's loop kernels also keep their time at
the median of its passes (``Point.usual_seconds``), fitted into their own curves
(``KernelCalibration.usual_classes``), because on a 2-core VM a loop's wider dots ran 1.4–2× slower than
their fastest for much of a calibration (docs/expected.md, "A loop's kernels as usual").

What moved them is the host: a loop's kernels hand work between the cores every trip, and a busy host wakes
a core late (``hardware.wake``). The calibration keeps the host's cross-core wake-up before its loop
programs' fastest and usual passes (``KernelCalibration.loop_wakes``); ``loops_now`` reads a program's
loop kernels in the state whose wake-up lies nearer (geometrically) the one measured when it ran: at their
fastest times, or at their usual ones and, past the usual wake-up, further in proportion to it. The host has
two states, not a line between them: its quiet one's wake-up wandered over 6.5–10 µs on a 2-core VM while
the held-out scan ran at its fastest, and placed in proportion it read 24–32% slow at 9.6 µs
(docs/expected.md, "The host's state now").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..hardware.wake import mean_wake
from .calibration_history import apart, dividing_line, is_loop

if TYPE_CHECKING:
    from ..core.estimate import CostEstimate
    from ..hardware.kernel_model import KernelCalibration
    from ..hardware.spec import HardwareSpec
    from .expected import Expected, ExpectedRow

#: How far past the fastest passes' wake-up the loop kernels are placed at most, in spans of the calibration's
#: two states (fastest to usual): the held-out scan's time was measured up to wake-ups about 2.5 spans out
#: (28 µs against 6.8 and 17.2 µs calibrated would be 2.0); past it the figure is held there, said in its line.
MAX_SHARE = 2.5


def _by_kernel(rows: Sequence[ExpectedRow]) -> dict[tuple[str, int | None, str], float]:
    found: dict[tuple[str, int | None, str], float] = {}
    for row in rows:
        key = (row.name, row.index, row.kernel_class)
        found[key] = found.get(key, 0.0) + row.seconds
    return found


def loops_as_usual(
    estimate: CostEstimate,
    calibration: KernelCalibration,
    rows: Sequence[ExpectedRow],
    floor_seconds: float | None,
    hardware: HardwareSpec | None,
    expect: Callable[..., Any],
) -> float | None:
    """The expected time (``expect``: ``expected_time``) with the loops' kernels read off the calibration's
    usual curves (``KernelCalibration.usual_state``), each kernel at least its expected time ``rows`` (past
    its class's last knot a usual curve's slope can be flatter than the fast one's); None when no kernel
    reads slower so: the program has no loop kernel, or the calibration no usual curve it reads."""
    usual = calibration.usual_state()
    if usual is None or not any(is_loop(row.kernel_class) for row in rows):
        return None
    plain, found = (
        _by_kernel(rows),
        _by_kernel(expect(estimate, usual, floor_seconds, machine={}, hardware=hardware).rows),
    )
    kernels = sum(max(seconds, found.get(key, 0.0)) for key, seconds in plain.items())
    return None if kernels <= sum(plain.values()) else kernels + (floor_seconds or 0.0)


def loops_now(
    expected: Expected,
    loop_wakes: tuple[float, float] | None,
    wake: float | None,
    before: float | None = None,
) -> Expected:
    """``expected`` with the host's cross-core wake-up ``wake`` (seconds, measured just after the program ran;
    ``before``: just before its timed runs, where measured) and ``now_seconds``: the expected time with its
    loop kernels at their fastest plus their usual time's excess × ``wake_share``: none in the fast state, all
    of it in the usual one, more past it (``hedged``: with two readings, the mean of the two figures). None
    where there is no usual time, no wake-up, or the calibration's two states lie under ``WAKES_APART``
    apart. ``wake_seconds`` keeps the readings' mean, ``wake_around`` both where both were measured."""
    readings = tuple(reading for reading in (before, wake) if reading is not None)
    now = hedged(expected.seconds, expected.usual_seconds, loop_wakes, readings)
    around = (before, wake) if before is not None and wake is not None else None
    return replace(
        expected, now_seconds=now, wake_seconds=mean_wake(before, wake), loop_wakes=loop_wakes, wake_around=around
    )


def hedged(
    seconds: float, usual_seconds: float | None, loop_wakes: tuple[float, float] | None, readings: Sequence[float]
) -> float | None:
    """The expected time in the host's state from its wake-up ``readings`` (just before and just after the timed
    runs): the mean of ``between`` at each. Where the two read one state it is that state's figure; where the
    host changed state between them (``changed_state``), half-way between the two states' figures — which
    share of the runs each state took is not measured. None where no reading gives a figure."""
    found = [between(seconds, usual_seconds, loop_wakes, reading) for reading in readings]
    figures = [figure for figure in found if figure is not None]
    return sum(figures) / len(figures) if figures and len(figures) == len(found) else None


def split_state(expected: Expected) -> bool:
    """Whether the host's wake-ups just before and just after the timed runs (``Expected.wake_around``) lie on
    the two sides of the calibration's dividing line (``wake_share``): ``hedged`` reads half-way between the
    two states."""
    around, wakes = expected.wake_around, expected.loop_wakes
    if around is None or wakes is None:
        return False
    shares = [wake_share(wakes, wake) for wake in around]
    return None not in shares and (shares[0] == 0.0) != (shares[1] == 0.0)


def changed_state(expected: Expected) -> bool:
    """Whether the host changed state while the timed runs ran: its two wake-ups lie on the two sides of the
    line (``split_state``) and at least ``WAKES_APART`` apart: two readings close to the line either side of it
    are one state's wander (the quiet state's wake-up wandered over 6.5–10 µs on a 2-core VM), not a change."""
    around = expected.wake_around
    if around is None or not split_state(expected):
        return False
    low, high = sorted(around)
    return apart(low, high)


def between(
    seconds: float, usual_seconds: float | None, loop_wakes: tuple[float, float] | None, wake: float | None
) -> float | None:
    """``loops_now``'s expected time in the host's state ``wake`` from the expected time and its usual one."""
    share = wake_share(loop_wakes, wake)
    return None if share is None or usual_seconds is None else seconds + (usual_seconds - seconds) * share


def wake_share(loop_wakes: tuple[float, float] | None, wake: float | None) -> float | None:
    """How much of the loops' usual excess ``wake`` reads: 0 at or under the geometric mean of the two
    calibrated wake-ups (the fast state), else (``wake`` − the fastest passes' wake-up) ÷ (the usual passes' −
    the fastest passes'), at least 1 and at most ``MAX_SHARE``; None without both, or with the two
    calibrated states under ``WAKES_APART`` apart."""
    if wake is None or loop_wakes is None or not math.isfinite(wake):
        return None
    fast, usual = loop_wakes
    if not apart(fast, usual):
        return None
    if wake <= dividing_line(fast, usual):
        return 0.0
    return min(MAX_SHARE, max(1.0, (wake - fast) / (usual - fast)))
