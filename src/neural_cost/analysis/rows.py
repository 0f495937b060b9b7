"""Per-row roofline times: each operation's (or scope's) compute and memory time on a spec."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.estimate import CostEstimate, OperationCost, ScopeCost
from ..hardware.spec import HardwareSpec


def compute_seconds(flops_by_dtype: Mapping[str, int], hardware: HardwareSpec) -> float:
    """Σ over dtypes of FLOPs / peak(dtype): every FLOP is charged to its own dtype's peak."""
    return sum(flops / hardware.peak(dtype) for dtype, flops in flops_by_dtype.items())


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

    @property
    def bound_seconds(self) -> float:
        return max(self.compute_seconds, self.memory_seconds)

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
        }


def _row(
    cost: OperationCost | ScopeCost, executions: int, scope: str | None, hardware: HardwareSpec, bound: float
) -> RowTime:
    compute = compute_seconds(cost.flops_by_dtype, hardware)
    memory = cost.bytes / hardware.memory_bandwidth
    share = max(compute, memory) / bound if bound > 0 else 0.0
    return RowTime(cost.name, cost.kind, scope, executions, cost.flops, cost.bytes, compute, memory, share)


def operation_rows(estimate: CostEstimate, hardware: HardwareSpec, bound: float) -> tuple[RowTime, ...]:
    rows = (_row(r, r.operation.count, r.scope, hardware, bound) for r in estimate.by_operation)
    return tuple(sorted(rows, key=lambda r: -r.bound_seconds))


def scope_rows(estimate: CostEstimate, hardware: HardwareSpec, bound: float) -> tuple[RowTime, ...]:
    rows = (_row(s, s.executions, s.scope, hardware, bound) for s in estimate.by_scope)
    return tuple(sorted(rows, key=lambda r: -r.bound_seconds))
