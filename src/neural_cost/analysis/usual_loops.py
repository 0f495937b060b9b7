"""A program's expected time with its loops' kernels as the machine usually ran them while calibrated.

A calibration keeps each kernel's fastest time; a loop program's loop kernels also keep their time at
the median of its passes (``Point.usual_seconds``), fitted into their own curves
(``KernelCalibration.usual_classes``), because on a 2-core VM a loop's wider dots ran 1.4–2× slower than
their fastest for much of a calibration (docs/expected.md, "A loop's kernels as usual").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .calibration_history import is_loop

if TYPE_CHECKING:
    from ..core.estimate import CostEstimate
    from ..hardware.kernel_model import KernelCalibration
    from ..hardware.spec import HardwareSpec
    from .expected import ExpectedRow


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
