"""The kernel bound: each executed kernel scored at its own roofline and memory level.

A kernel (``core/kernels.py``) is scored at max(its FLOPs at its dtypes' peaks, its traffic at
the bandwidth of the nearest memory level that holds its footprint); the program's bound is
the sum over kernels. Assumptions, stated in ``docs/bound.md`` and in the report:

- kernels do not overlap one another (a bound for a program that runs them in turn);
- a kernel's data starts in the nearest level its footprint fits: a footprint compared with
  one instance of a level (a per-core L2 with one core's L2), so a kernel spread over cores
  is scored no closer than one core's cache would hold it;
- a cache level without a measured bandwidth is skipped (never guessed): a kernel that fits
  it is scored at the next level that has one, and the report says so;
- the main memory (DRAM, HBM, unified memory) is scored at the spec's ``memory_bandwidth``,
  the figure the report's device line prints.

Records no kernel executes are one more row, scored by the unfused rule (their read and
written bytes at main memory). A trace without kernels scores each record as its own kernel
at its unfused traffic.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from ..core.estimate import CostEstimate, OperationCost
from ..core.kernels import Kernel
from ..core.units import format_si
from ..hardware.spec import HardwareSpec, MemoryLevel
from .rows import as_float, compute_seconds, seconds

UNMAPPED = "(unmapped records)"
#: A level named like a cache (L1d, L2, L3...); every other level is main memory.
_CACHE_NAME = re.compile(r"^L\d")


@dataclass(frozen=True, slots=True)
class KernelTime:
    """One row of the per-kernel table: a kernel's figures and its times on the spec."""

    name: str
    kind: str | None
    scopes: tuple[str, ...]
    source: str | None
    #: How many operation records it executes.
    operations: int
    executions: int
    flops: int
    #: Bytes moved over all executions.
    traffic_bytes: int
    #: Distinct bytes one execution touches; None for the unmapped-records row.
    footprint_bytes: int | None
    level: str
    bandwidth: float
    compute_seconds: float
    memory_seconds: float
    share: float  # bound / the program's kernel bound
    #: Index into ``estimate.kernels``; None for a record scored as its own kernel and for the
    #: unmapped-records row.
    index: int | None = None
    #: Operations it runs that no cost rule models.
    unmodeled: tuple[str, ...] = ()
    #: Measured time per run from a profiled pass, and the events it had (all runs together).
    measured_seconds: float | None = None
    events: int | None = None

    @property
    def bound_seconds(self) -> float:
        return max(self.compute_seconds, self.memory_seconds)

    @property
    def measured_efficiency(self) -> float | None:
        if self.measured_seconds is None or self.measured_seconds <= 0:
            return None
        return self.bound_seconds / self.measured_seconds

    @property
    def bound_side(self) -> str:
        return "compute" if self.compute_seconds >= self.memory_seconds else "memory"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "scopes": list(self.scopes),
            "source": self.source,
            "operations": self.operations,
            "executions": self.executions,
            "flops": self.flops,
            "traffic_bytes": self.traffic_bytes,
            "footprint_bytes": self.footprint_bytes,
            "level": self.level,
            "bandwidth": self.bandwidth,
            "compute_seconds": self.compute_seconds,
            "memory_seconds": self.memory_seconds,
            "share": self.share,
            "index": self.index,
            "unmodeled": list(self.unmodeled),
            "measured_seconds": self.measured_seconds,
            "events": self.events,
        }


@dataclass(frozen=True, slots=True)
class Levels:
    """The levels a footprint is placed in: measured caches nearest first, then main memory."""

    caches: tuple[MemoryLevel, ...]
    main: str
    main_bandwidth: float
    unmeasured: tuple[str, ...]
    #: Cache levels measured slower than main memory: no cache's figure (a probe whose working set
    #: faulted in fresh pages every pass read a 480 MiB "L3" at 3.7 GB/s beside DRAM's 60; a VM's guest
    #: sees its host's whole L3, and at 120 MiB a thread read it at 46.7 GB/s beside DRAM's 55.5), not used.
    implausible: tuple[MemoryLevel, ...] = ()

    @classmethod
    def of(cls, hardware: HardwareSpec) -> Levels:
        levels = hardware.memory_levels
        caches = tuple(level for level in levels if _CACHE_NAME.match(level.name))
        mains = [level.name for level in levels if not _CACHE_NAME.match(level.name)]
        slow = tuple(lv for lv in caches if lv.bandwidth is not None and lv.bandwidth < hardware.memory_bandwidth)
        return cls(
            tuple(level for level in caches if level.bandwidth is not None and level not in slow),
            mains[-1] if mains else "main memory",
            hardware.memory_bandwidth,
            tuple(level.name for level in caches if level.bandwidth is None),
            slow,
        )

    def place(self, footprint: int | None) -> tuple[str, float]:
        """The nearest measured level one instance of which holds ``footprint`` bytes."""
        if footprint is not None:
            for level in self.caches:
                if footprint <= level.capacity_bytes and level.bandwidth is not None:
                    return level.name, level.bandwidth
        return self.main, self.main_bandwidth


def _kernel_row(kernel: Kernel, levels: Levels, hardware: HardwareSpec, index: int) -> KernelTime:
    what = f"kernel {kernel.name!r}"
    level, bandwidth = levels.place(kernel.footprint_bytes)
    return KernelTime(
        kernel.name,
        kernel.kind,
        kernel.scopes,
        kernel.source,
        len(kernel.operations),
        kernel.executions,
        kernel.flops,
        kernel.total_traffic_bytes,
        kernel.footprint_bytes,
        level,
        bandwidth,
        compute_seconds(kernel.flops_by_dtype, hardware, f"{what}: FLOPs"),
        seconds(kernel.total_traffic_bytes, bandwidth, f"{what}: traffic"),
        0.0,
        index,
        kernel.unmodeled,
    )


def _record_row(row: OperationCost, levels: Levels, hardware: HardwareSpec) -> KernelTime:
    """A record scored as its own kernel: its unfused traffic, its per-execution bytes as footprint."""
    count = row.operation.count
    footprint = row.bytes // count if count else row.bytes
    level, bandwidth = levels.place(footprint)
    what = f"operation {row.name!r}"
    return KernelTime(
        row.name,
        row.kind,
        (row.scope,) if row.scope else (),
        None,
        1,
        count,
        row.flops,
        row.bytes,
        footprint,
        level,
        bandwidth,
        compute_seconds(row.flops_by_dtype, hardware, f"{what}: FLOPs"),
        seconds(row.bytes, bandwidth, f"{what}: bytes"),
        0.0,
    )


def _unmapped_row(rows: list[OperationCost], levels: Levels, hardware: HardwareSpec) -> KernelTime:
    flops: dict[str, int] = {}
    for row in rows:
        for dtype, value in row.flops_by_dtype.items():
            flops[dtype] = flops.get(dtype, 0) + value
    traffic = sum(row.bytes for row in rows)
    return KernelTime(
        UNMAPPED,
        "unmapped",
        tuple(dict.fromkeys(row.scope for row in rows if row.scope)),
        None,
        len(rows),
        sum(row.operation.count for row in rows),
        sum(flops.values()),
        traffic,
        None,
        levels.main,
        levels.main_bandwidth,
        compute_seconds(flops, hardware, "the unmapped records' FLOPs"),
        seconds(traffic, levels.main_bandwidth, "the unmapped records' bytes"),
        0.0,
    )


def _rows(estimate: CostEstimate, hardware: HardwareSpec, levels: Levels) -> Iterator[KernelTime]:
    if not estimate.kernels:
        for row in estimate.by_operation:
            yield _record_row(row, levels, hardware)
        return
    for index, kernel in enumerate(estimate.kernels):
        yield _kernel_row(kernel, levels, hardware, index)
    unmapped = [estimate.by_operation[i] for i in estimate.unmapped_operations]
    if unmapped:
        yield _unmapped_row(unmapped, levels, hardware)


def kernel_rows(estimate: CostEstimate, hardware: HardwareSpec) -> tuple[tuple[KernelTime, ...], tuple[str, ...]]:
    """Every kernel scored on ``hardware``, costliest first, and the notes the scoring makes."""
    levels = Levels.of(hardware)
    rows = list(_rows(estimate, hardware, levels))
    for row in rows:
        as_float(row.traffic_bytes, f"kernel {row.name!r}: traffic")
    total = sum(row.bound_seconds for row in rows)
    scored = tuple(
        sorted(
            (_with_share(row, row.bound_seconds / total if total > 0 else 0.0) for row in rows),
            key=lambda r: -r.bound_seconds,
        )
    )
    notes = []
    if levels.unmeasured:
        fit = [r.name for r in scored if r.footprint_bytes is not None and _fits_unmeasured(r, hardware, levels)]
        if fit:
            notes.append(
                f"{', '.join(levels.unmeasured)} {'has' if len(levels.unmeasured) == 1 else 'have'} no measured "
                f"bandwidth: {len(fit)} kernel(s) whose footprint fits there were scored at a farther level "
                f"(`neural-cost hardware --calibrate` measures the caches)"
            )
    notes += implausible_notes(levels)
    return scored, tuple(notes)


def implausible_notes(levels: Levels) -> list[str]:
    """One note per cache level measured slower than main memory (``Levels.implausible``)."""
    return [
        f"{level.name}'s measured bandwidth ({format_si(level.bandwidth or 0.0, 'B/s')}) is below main memory's "
        f"({format_si(levels.main_bandwidth, 'B/s')}): no cache's figure, not used (a kernel that fits there is "
        f"scored at the next level measured; a VM can report its host's whole shared cache, more than its share; "
        f"`neural-cost hardware --calibrate` measures the caches again)"
        for level in levels.implausible
    ]


def _fits_unmeasured(row: KernelTime, hardware: HardwareSpec, levels: Levels) -> bool:
    footprint = row.footprint_bytes or 0
    nearest = next((lv for lv in hardware.memory_levels if footprint <= lv.capacity_bytes), None)
    return nearest is not None and nearest.name in levels.unmeasured


def _with_share(row: KernelTime, share: float) -> KernelTime:
    return replace(row, share=share)


def traffic_by_level(rows: tuple[KernelTime, ...]) -> dict[str, int]:
    """Bytes scored at each level, nearest level first as the rows name them."""
    result: dict[str, int] = {}
    for row in rows:
        result[row.level] = result.get(row.level, 0) + row.traffic_bytes
    return result
