"""Kernels past their calibration: where an expected time is read off a curve's slope, not a point near it.

A class's curves are fitted on its calibration points; past the largest, time grows by the last segment's
marginal cost (``hardware/kernel_model.py``, ``Curve._beyond``). That is a guess, and it can be a poor one: one
knot of JAX's depthwise class read a layer 4× past its points at an eighth of its time. So ``expected_time``
names the kernels whose roofline time per execution is more than ``PAST`` times the largest point of the
class that read them, and how much of the expected time they carry: the report says which part of its
expectation was extrapolated.

Kernels expected under their roofline bound (``under_bound_note``): a calibration measures the device, the
bound scores it at the spec's peaks, and a peak from a formula can sit below what the device reaches. On this
project's 2-core AMD EPYC VM the formula reads 2.696 GHz (cpuinfo's 'cpu MHz') and the grid's wide
convolutions ran at 0.72–0.86× their compute bound: a 5 GFLOP strided Conv1d of a wav2vec2 feature encoder
was expected at 12.6 ms under its 14.6 ms bound, with nothing said. The note names them and the peaks' source.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from ..core.units import plural
from ..hardware.kernel_model import KernelCalibration

if TYPE_CHECKING:
    from .expected import ExpectedRow
    from .kernels import KernelTime

#: A kernel this many times past its class's largest point (roofline time) is extrapolated.
PAST = 2.0
#: A kernel expected under this share of its bound is named as faster than it (1%: rounding, not a finding).
UNDER = 0.99


def ceilings(calibration: KernelCalibration) -> dict[str, float]:
    """Each class's largest calibration point, in roofline seconds (its larger side, on the class's memory
    axis: a kernel read off its curve is compared on it too); a family's over its members' points and its own,
    as its curve is fitted."""
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


def under_bound_note(
    rows: Sequence[ExpectedRow],
    scored: Sequence[KernelTime],
    kernel_seconds: float,
    calibration: KernelCalibration,
    dtypes: Callable[[KernelTime], Iterable[str]],
    skip: Collection[str] = (),
) -> str | None:
    """The note on kernels read off their own class's curves under ``UNDER`` × their bound — not those scored at
    their bound, read off another class's curve (``borrowed_class``) or named in ``skip`` (extrapolated past their
    class's points): how many, their share of the kernels' expected time, the farthest three (expected ÷ bound),
    and by the bound's side (``scored``: each row's kernel, in order) where the spec's number came from — the
    peak of each dtype the compute-bound ones compute in (``dtypes``: a kernel's, with FLOPs), the dtypes whose
    peaks share a source named together, and, unless measured, that a formula's clock can sit below the
    device's; each level's bandwidth. None where there is none."""
    from .kernel_classes import borrowed_class

    under = [(row, kernel) for row, kernel in zip(rows, scored, strict=True)
             if row.basis == "model" and 0 < row.seconds < UNDER * row.bound_seconds and row.name not in skip
             and borrowed_class(calibration, row.kernel_class) is None]  # fmt: skip
    if not under:
        return None
    hardware = calibration.hardware
    share = sum(row.seconds for row, _ in under) / kernel_seconds if kernel_seconds > 0 else 0.0
    top = sorted(under, key=lambda pair: pair[0].seconds / pair[0].bound_seconds)[:3]
    named = ", ".join(f"{row.name} ({row.kernel_class}) {row.seconds / row.bound_seconds:.2f}×" for row, _ in top)
    more = f" and {len(under) - 3} more" if len(under) > 3 else ""
    their = "its" if len(under) == 1 else "their"
    compute = sum(kernel.bound_side == "compute" for _, kernel in under)
    sides = []
    if compute:
        kinds = sorted({dtype for _, kernel in under if kernel.bound_side == "compute" for dtype in dtypes(kernel)})
        numbers = {dtype: f"peak_flops[{dtype}]" for dtype in kinds} or {"": "peak_flops"}
        by_source: dict[str, list[str]] = {}
        for dtype, number in numbers.items():
            by_source.setdefault(hardware.source_of(number), []).append(dtype)
        measured = all(hardware.measured(number) for number in numbers.values())
        sides.append(
            f"{compute} compute-bound, scored at peaks from "
            + ", ".join(f"{', '.join(dts) + ': ' if dts[0] else ''}{source!r}" for source, dts in by_source.items())
            + ("" if measured else " (a formula's clock can sit below the one the device runs at: doubt the bound "
               "there, not the expected time; `neural-cost hardware --calibrate` measures the peaks)")
        )  # fmt: skip
    levels = {kernel.level: hardware.source_of(f"bandwidth[{kernel.level}]") for _, kernel in under
              if kernel.bound_side == "memory"}  # fmt: skip
    if levels:
        sides.append(
            f"{len(under) - compute} memory-bound, scored at "
            + ", ".join(f"{level} bandwidth ({source!r})" for level, source in sorted(levels.items()))
            + " (a nearer cache holding their data, or a copy probe slower than such kernels)"
        )
    return (
        f"under the bound: {plural(len(under), 'kernels')} ({share:.1%} of the kernels' expected time) expected "
        f"faster than {their} roofline bound ({named}{more}; expected ÷ bound): the calibration measured this "
        f"device beating the spec there — {'; '.join(sides)}"
    )
