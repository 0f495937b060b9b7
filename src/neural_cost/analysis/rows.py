"""Per-row roofline times: each operation's (or scope's) compute and memory time on a spec."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import RecordError
from ..core.estimate import CostEstimate, OperationCost, ScopeCost
from ..hardware.spec import HardwareSpec


def as_float(count: int, what: str) -> float:
    """A count (FLOPs, bytes, executions) as a float, or a RecordError naming ``what``.

    Counts are exact Python ints of any size; times are floats. This is the one place a
    count becomes a float, so a count beyond a float's range (about 1.8·10^308) is reported
    here, naming the operation or total it belongs to, rather than as an OverflowError."""
    try:
        return float(count)
    except OverflowError:
        digits = count.bit_length() * 30_103 // 100_000  # ⌊log10 count⌋, or one less
        raise RecordError(
            f"{what} is a count of about 10^{digits}, beyond the range of a float (about 1.8·10^308): no time can "
            f"be computed from it; check the shapes or counts that produced it"
        ) from None


def seconds(count: int, rate: float, what: str) -> float:
    """``count`` units of work at ``rate`` per second."""
    return as_float(count, what) / rate


def compute_seconds(flops_by_dtype: Mapping[str, int], hardware: HardwareSpec, what: str = "the FLOPs") -> float:
    """Σ over dtypes of FLOPs / peak(dtype): every FLOP is charged to its own dtype's peak."""
    return sum(seconds(flops, hardware.peak(dtype), f"{what} in {dtype}") for dtype, flops in flops_by_dtype.items())


def check_float_range(estimate: CostEstimate) -> None:
    """Raise RecordError if any count the analysis turns into a time or a ratio (per operation,
    per scope, and the totals) is beyond a float's range; each row is checked before the totals,
    so the message names the operation that overflowed rather than only the sum."""
    for row in estimate.by_operation:
        where = f"operation {row.name!r} ({row.kind})"
        for dtype, flops in row.flops_by_dtype.items():
            as_float(flops, f"{where}: FLOPs in {dtype}")
        for name in ("flops", "dense_flops", "bytes"):
            as_float(getattr(row, name), f"{where}: {name.replace('_', ' ')}")
        as_float(row.operation.count, f"{where}: executions")
    for scope in estimate.by_scope:
        for name in ("flops", "dense_flops", "bytes", "executions"):
            as_float(getattr(scope, name), f"scope {scope.scope!r}: {name.replace('_', ' ')}")
    for dtype, flops in estimate.flops_by_dtype.items():
        as_float(flops, f"the estimate's total FLOPs in {dtype}")
    totals = {
        "FLOPs": estimate.flops,
        "dense FLOPs": estimate.dense_flops,
        "bytes": estimate.bytes,
        "compulsory bytes": estimate.compulsory_bytes or 0,
        "executions": sum(op.count for op in estimate.operations),
    }
    for name, count in totals.items():
        as_float(count, f"the estimate's total {name}")


@dataclass(frozen=True, slots=True)
class RowTime:
    """One row of the per-operation (or per-scope) table, with its times on the spec."""

    name: str
    kind: str
    scope: str | None
    executions: int
    flops: int
    bytes: int
    compute_seconds: float
    memory_seconds: float
    share: float  # max(compute, memory) / the program's bound
    #: Index into ``estimate.by_operation`` (operation rows) or ``by_scope`` (scope rows).
    index: int | None = None
    #: Measured time per run from a profiled pass (``analysis/timing.py``); None without one.
    measured_seconds: float | None = None
    #: The measured time is a share of a fused kernel's, split by bounds: the row has no
    #: efficiency of its own (the kernel's is shown).
    shared: bool = False
    #: The kernel bound behind the measured time (the row's share of its kernels' bounds, split
    #: as the time is): what the row's efficiency compares with, never its unfused bound.
    measured_bound_seconds: float | None = None
    #: Expected time per run from the kernel model (``analysis/expected.py``): the row's share of
    #: its kernels' expected time, split by the records' bounds as measured time is; None without.
    expected_seconds: float | None = None

    @property
    def bound_seconds(self) -> float:
        return max(self.compute_seconds, self.memory_seconds)

    @property
    def measured_efficiency(self) -> float | None:
        """The kernel bound behind its measured time over that time (None without one, or for a
        shared row: the kernel table shows the kernel's)."""
        if self.measured_seconds is None or self.shared or self.measured_seconds <= 0:
            return None
        bound = self.measured_bound_seconds if self.measured_bound_seconds is not None else self.bound_seconds
        return bound / self.measured_seconds

    @property
    def arithmetic_intensity(self) -> float | None:
        return self.flops / self.bytes if self.bytes else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "scope": self.scope,
            "executions": self.executions,
            "flops": self.flops,
            "bytes": self.bytes,
            "compute_seconds": self.compute_seconds,
            "memory_seconds": self.memory_seconds,
            "share": self.share,
            "measured_seconds": self.measured_seconds,
            "shared": self.shared,
            **({"expected_seconds": self.expected_seconds} if self.expected_seconds is not None else {}),
        }


def _row(
    cost: OperationCost | ScopeCost,
    executions: int,
    scope: str | None,
    hardware: HardwareSpec,
    bound: float,
    index: int,
) -> RowTime:
    what = f"operation {cost.name!r}" if isinstance(cost, OperationCost) else f"scope {cost.name!r}"
    compute = compute_seconds(cost.flops_by_dtype, hardware, f"{what}: FLOPs")
    memory = seconds(cost.bytes, hardware.memory_bandwidth, f"{what}: bytes")
    share = max(compute, memory) / bound if bound > 0 else 0.0
    return RowTime(cost.name, cost.kind, scope, executions, cost.flops, cost.bytes, compute, memory, share, index)


def operation_rows(estimate: CostEstimate, hardware: HardwareSpec, bound: float) -> tuple[RowTime, ...]:
    rows = (_row(r, r.operation.count, r.scope, hardware, bound, i) for i, r in enumerate(estimate.by_operation))
    return tuple(sorted(rows, key=lambda r: -r.bound_seconds))


def scope_rows(estimate: CostEstimate, hardware: HardwareSpec, bound: float) -> tuple[RowTime, ...]:
    rows = (_row(s, s.executions, s.scope, hardware, bound, i) for i, s in enumerate(estimate.by_scope))
    return tuple(sorted(rows, key=lambda r: -r.bound_seconds))


def split_by_bounds(records: Sequence[int], bounds: Mapping[int, float]) -> list[tuple[int, float]]:
    """Each record's part of a kernel it shares: its own bound over the records' (equal parts
    when none has a bound). How a fused kernel's measured and expected times are split."""
    weights = [bounds.get(i, 0.0) for i in records]
    total = sum(weights)
    return [
        (record, weight / total if total > 0 else 1 / len(records))
        for record, weight in zip(records, weights, strict=True)
    ]


def share_fused(
    measured: Mapping[int, float], fused: Sequence[Sequence[int]], weights: Mapping[int, float]
) -> dict[int, float]:
    """``measured`` (seconds per kernel) with the time of each group of kernels the profiler timed as one op
    (``Profile.fused``) shared among them by ``split_by_bounds`` over ``weights`` (each one's bound or expected time),
    so each reads the group's ratio to that yardstick; a group with a kernel not measured keeps the profiler's split."""
    result = dict(measured)
    for group in fused:
        if all(k in measured for k in group):
            total = sum(measured[k] for k in group)
            result.update((k, total * part) for k, part in split_by_bounds(group, weights))
    return result
