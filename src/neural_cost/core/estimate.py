"""The cost records: per operation, per scope, and for the whole program."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .attrs import FrozenAttrs, attrs_to_json
from .errors import RecordError
from .kernels import Kernel, check_kernels
from .records import Coverage, LoopAssumption, Operation, Shape, TensorSpec, _as_input_shapes, check_global_flops


def _intensity(flops: int, nbytes: int) -> float:
    if nbytes == 0:
        return float("inf") if flops else 0.0
    try:
        return flops / nbytes  # exact int division, correctly rounded
    except OverflowError:  # a ratio beyond a float's range: as unbounded as no bytes at all
        return float("inf")


def _flops_dict(value: Mapping[str, int]) -> FrozenAttrs:
    return value if isinstance(value, FrozenAttrs) else FrozenAttrs(dict(sorted(value.items())))


@dataclass(frozen=True, slots=True)
class OperationCost:
    """One operation's cost over all its executions (``operation.count`` of them)."""

    operation: Operation
    flops_by_dtype: FrozenAttrs
    read_bytes: int
    write_bytes: int
    dense_flops: int
    transcendentals: int = 0
    #: Bytes sent over device links, over all executions (collectives; 0 otherwise).
    wire_bytes: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "flops_by_dtype", _flops_dict(self.flops_by_dtype))

    @classmethod
    def of(cls, op: Operation) -> OperationCost:
        cost, n = op.cost, op.count
        flops = {dtype: value * n for dtype, value in cost.flops_by_dtype.items() if value}
        dense = cost.dense_flops if cost.dense_flops is not None else cost.flops
        return cls(
            op,
            FrozenAttrs.trusted(flops),
            cost.read_bytes * n,
            cost.write_bytes * n,
            dense * n,
            cost.transcendentals * n,
            cost.wire_bytes * n,
        )

    @property
    def name(self) -> str:
        return self.operation.name

    @property
    def kind(self) -> str:
        return self.operation.kind

    @property
    def scope(self) -> str | None:
        return self.operation.scope

    @property
    def flops(self) -> int:
        return sum(self.flops_by_dtype.values())

    @property
    def bytes(self) -> int:
        return self.read_bytes + self.write_bytes

    @property
    def arithmetic_intensity(self) -> float:
        return _intensity(self.flops, self.bytes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "operation": self.operation.to_dict(),
            "flops": self.flops,
            "flops_by_dtype": dict(self.flops_by_dtype),
            "dense_flops": self.dense_flops,
            "transcendentals": self.transcendentals,
            "read_bytes": self.read_bytes,
            "write_bytes": self.write_bytes,
            "wire_bytes": self.wire_bytes,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OperationCost:
        return cls(
            Operation.from_dict(data["operation"]),
            FrozenAttrs(data["flops_by_dtype"]),
            data["read_bytes"],
            data["write_bytes"],
            data["dense_flops"],
            data.get("transcendentals", 0),
            data.get("wire_bytes", 0),
        )


@dataclass(frozen=True, slots=True)
class ScopeCost:
    """The summed cost of every operation recorded under one scope."""

    scope: str
    kinds: tuple[str, ...]
    operations: int
    executions: int
    flops_by_dtype: FrozenAttrs
    read_bytes: int
    write_bytes: int
    dense_flops: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "flops_by_dtype", _flops_dict(self.flops_by_dtype))
        object.__setattr__(self, "kinds", tuple(self.kinds))

    @property
    def name(self) -> str:
        return self.scope

    @property
    def kind(self) -> str:
        return self.kinds[0] if len(self.kinds) == 1 else "mixed"

    @property
    def flops(self) -> int:
        return sum(self.flops_by_dtype.values())

    @property
    def bytes(self) -> int:
        return self.read_bytes + self.write_bytes

    @property
    def arithmetic_intensity(self) -> float:
        return _intensity(self.flops, self.bytes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "kinds": list(self.kinds),
            "operations": self.operations,
            "executions": self.executions,
            "flops": self.flops,
            "flops_by_dtype": dict(self.flops_by_dtype),
            "dense_flops": self.dense_flops,
            "read_bytes": self.read_bytes,
            "write_bytes": self.write_bytes,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScopeCost:
        return cls(
            data["scope"],
            tuple(data["kinds"]),
            data["operations"],
            data["executions"],
            FrozenAttrs(data["flops_by_dtype"]),
            data["read_bytes"],
            data["write_bytes"],
            data["dense_flops"],
        )


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """FLOPs and bytes of a whole program, with the rows they are sums of.

    ``read_bytes``/``write_bytes`` are unfused traffic (every operation reads its inputs
    and writes its output once). ``compulsory_bytes`` is the program's own inputs,
    parameters and outputs moved once — the floor whatever a compiler fuses — or None
    when the trace does not say which tensors those are.
    """

    flops_by_dtype: FrozenAttrs
    read_bytes: int
    write_bytes: int
    compulsory_bytes: int | None
    by_operation: tuple[OperationCost, ...]
    by_scope: tuple[ScopeCost, ...]
    coverage: Coverage
    input_shapes: tuple[tuple[str, Shape], ...] = ()
    loop_assumptions: tuple[LoopAssumption, ...] = ()
    framework: str | None = None
    boundary: tuple[TensorSpec, ...] = ()
    notes: tuple[str, ...] = ()
    dense_flops: int = 0
    transcendentals: int = 0
    #: Another tool's figures for the same program (e.g. XLA's cost_analysis), shown beside ours.
    cross_check: Mapping[str, Any] | None = None
    #: The executed units of the program as it runs (``core/kernels.py``), their FLOPs the sum
    #: of their records'; empty when no compiled program was read (each record is then scored
    #: as its own kernel, at its unfused traffic).
    kernels: tuple[Kernel, ...] = ()
    #: Where the kernels come from (``XLA optimized HLO``, ``eager aten ops``...), or None.
    kernel_source: str | None = None
    #: Devices a partitioned program runs on at once (``Trace.devices``): the rows are one device's.
    devices: int = 1
    #: A partitioned program's model FLOPs over all its devices, from its records at their global
    #: shapes (``Trace.global_model_flops``); None when not partitioned.
    global_model_flops: int | None = None

    def __post_init__(self) -> None:
        if type(self.devices) is not int or self.devices < 1:
            raise RecordError(f"CostEstimate.devices={self.devices!r} must be a positive integer")
        check_global_flops(self.global_model_flops, "CostEstimate")
        object.__setattr__(self, "flops_by_dtype", _flops_dict(self.flops_by_dtype))
        if self.cross_check is not None and not isinstance(self.cross_check, FrozenAttrs):
            object.__setattr__(self, "cross_check", FrozenAttrs(self.cross_check, "CostEstimate.cross_check"))
        object.__setattr__(self, "by_operation", tuple(self.by_operation))
        object.__setattr__(self, "by_scope", tuple(self.by_scope))
        object.__setattr__(self, "input_shapes", _as_input_shapes(self.input_shapes))
        object.__setattr__(self, "loop_assumptions", tuple(self.loop_assumptions))
        object.__setattr__(self, "boundary", tuple(self.boundary))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "kernels", check_kernels(self.kernels, len(self.by_operation), "CostEstimate"))

    @property
    def flops(self) -> int:
        return sum(self.flops_by_dtype.values())

    @property
    def bytes(self) -> int:
        """Unfused traffic: read plus written."""
        return self.read_bytes + self.write_bytes

    @property
    def arithmetic_intensity(self) -> float:
        """FLOPs per byte of unfused traffic."""
        return _intensity(self.flops, self.bytes)

    @property
    def operations(self) -> tuple[Operation, ...]:
        return tuple(row.operation for row in self.by_operation)

    @property
    def wire_bytes(self) -> int:
        """Bytes one device sends over its links, all collectives over all executions."""
        return sum(row.wire_bytes for row in self.by_operation)

    @property
    def unmapped_operations(self) -> tuple[int, ...]:
        """Indices of the records no kernel executes (all of them when there are no kernels)."""
        claimed = {i for kernel in self.kernels for i in kernel.operations}
        return tuple(i for i in range(len(self.by_operation)) if i not in claimed)

    @property
    def compiled_bytes(self) -> int:
        """Compiled traffic: every kernel's bytes over its executions, plus the unfused traffic
        of the records no kernel executes; the unfused traffic when there are no kernels."""
        if not self.kernels:
            return self.bytes
        unmapped = sum(self.by_operation[i].bytes for i in self.unmapped_operations)
        return sum(k.total_traffic_bytes for k in self.kernels) + unmapped

    @property
    def work_share(self) -> tuple[int, int] | None:
        """Share of the work in modeled operations, as ``(part, whole)``: the lower of the FLOP
        and byte shares, unmodeled operations at their elementwise floor (``Coverage``); None
        when an unmodeled operation's size is unknown."""
        return self.coverage.work_share(self.flops, self.bytes)

    @property
    def work_fraction(self) -> float | None:
        share = self.work_share
        return None if share is None else share[0] / share[1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "flops": self.flops,
            "flops_by_dtype": dict(self.flops_by_dtype),
            "dense_flops": self.dense_flops,
            "transcendentals": self.transcendentals,
            "read_bytes": self.read_bytes,
            "write_bytes": self.write_bytes,
            "compulsory_bytes": self.compulsory_bytes,
            "arithmetic_intensity": self.arithmetic_intensity if self.bytes else None,
            "framework": self.framework,
            "coverage": self.coverage.to_dict(),
            "work_fraction": self.work_fraction,
            "input_shapes": [[n, list(s)] for n, s in self.input_shapes],
            "loop_assumptions": [a.to_dict() for a in self.loop_assumptions],
            "boundary": [t.to_dict() for t in self.boundary],
            "notes": list(self.notes),
            "cross_check": attrs_to_json(self.cross_check) if self.cross_check is not None else None,
            "by_operation": [row.to_dict() for row in self.by_operation],
            "by_scope": [row.to_dict() for row in self.by_scope],
            "compiled_bytes": self.compiled_bytes,
            "wire_bytes": self.wire_bytes,
            "kernel_source": self.kernel_source,
            "kernels": [kernel.to_dict() for kernel in self.kernels],
            "devices": self.devices,
            **({} if self.global_model_flops is None else {"global_model_flops": self.global_model_flops}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CostEstimate:
        return cls(
            flops_by_dtype=FrozenAttrs(data["flops_by_dtype"]),
            read_bytes=data["read_bytes"],
            write_bytes=data["write_bytes"],
            compulsory_bytes=data.get("compulsory_bytes"),
            by_operation=tuple(OperationCost.from_dict(r) for r in data["by_operation"]),
            by_scope=tuple(ScopeCost.from_dict(r) for r in data["by_scope"]),
            coverage=Coverage.from_dict(data["coverage"]),
            input_shapes=tuple((n, tuple(s)) for n, s in data.get("input_shapes", ())),
            loop_assumptions=tuple(LoopAssumption.from_dict(a) for a in data.get("loop_assumptions", ())),
            framework=data.get("framework"),
            boundary=tuple(TensorSpec.from_dict(t) for t in data.get("boundary", ())),
            notes=tuple(data.get("notes", ())),
            dense_flops=data.get("dense_flops", 0),
            transcendentals=data.get("transcendentals", 0),
            cross_check=data.get("cross_check"),
            kernels=tuple(Kernel.from_dict(k) for k in data.get("kernels") or ()),
            kernel_source=data.get("kernel_source"),
            devices=data.get("devices", 1),
            global_model_flops=data.get("global_model_flops"),
        )
