"""Kernels past their calibration: where an expected time is read off a curve's slope, not a point near it.

A class's curves are fitted on its calibration points; past the largest, time grows by the last segment's
marginal cost (``hardware/kernel_model.py``, ``Curve._beyond``). That is a guess, and it can be a poor one: one
knot of JAX's depthwise class read a layer 4× past its points at an eighth of its time. So ``expected_time``
names the kernels whose roofline time per execution is more than ``PAST`` times the largest point of the
class that read them, and how much of the expected time they carry: the report says which part of its
expectation was extrapolated.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.units import plural
from ..hardware.kernel_model import KernelCalibration

#: A kernel this many times past its class's largest point (roofline time) is extrapolated.
PAST = 2.0


def ceilings(calibration: KernelCalibration) -> dict[str, float]:
    """Each class's largest calibration point, in roofline seconds (its larger side); a family's
    over its members' points and its own, as its curve is fitted."""
    return calibration.by_class(lambda p: max(p.compute_seconds, p.memory_seconds), max)


def extrapolated_note(past: Sequence[tuple[str, str, float, float]], kernel_seconds: float) -> str:
    """The note on kernels past their class's points: ``past`` holds (kernel, class, times past its
    largest point, expected seconds of the kernel); the farthest three are named."""
    share = sum(seconds for *_, seconds in past) / kernel_seconds if kernel_seconds > 0 else 0.0
    top = sorted(past, key=lambda item: -item[2])[:3]
    named = ", ".join(f"{kernel} ({name}) {factor:.1f}×" for kernel, name, factor, _ in top)
    more = f" and {len(past) - 3} more" if len(past) > 3 else ""
    its, size = ("its", "its size") if len(past) == 1 else ("their", "their sizes")
    return (
        f"extrapolated: {plural(len(past), 'kernels')} ({share:.1%} of the kernels' expected time) more than "
        f"{PAST:g}× past the roofline time of {its} class's largest calibration point ({named}{more}), read off "
        f"the curve's last slope, not measured near {size}"
    )
