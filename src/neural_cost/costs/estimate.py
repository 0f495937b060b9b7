"""From operations (or a trace) to a CostEstimate: sums of per-operation costs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core.attrs import FrozenAttrs
from ..core.errors import RecordError
from ..core.estimate import CostEstimate, OperationCost, ScopeCost
from ..core.kernels import Kernel, check_kernels
from ..core.records import Coverage, LoopAssumption, Operation, TensorSpec, Trace, records_of

if TYPE_CHECKING:
    from ..adapters.base import FrameworkAdapter

NO_SCOPE = "(no scope)"


def compulsory_bytes(boundary: Sequence[TensorSpec]) -> int | None:
    """The program's own inputs, parameters and outputs, each moved once (None if unknown); a
    sharded tensor by the part one device holds, as the records of a partitioned program are."""
    if not boundary:
        return None
    seen: dict[str, int] = {}
    for tensor in boundary:
        seen.setdefault(f"{tensor.role}:{tensor.name}", tensor.device_bytes)
    return sum(seen.values())


def scope_of(row: OperationCost) -> str:
    """The per-scope table's group of a record: its scope; else the user's function that made
    it, as ``env_step()`` (the ``function`` label a walker puts on unscoped records); else
    "(no scope)"."""
    if row.scope:
        return row.scope
    function = row.operation.attrs.get("function")
    return f"{function}()" if isinstance(function, str) and function else NO_SCOPE


def _scope_rows(rows: Sequence[OperationCost]) -> tuple[ScopeCost, ...]:
    groups: dict[str, list[OperationCost]] = {}
    for row in rows:
        groups.setdefault(scope_of(row), []).append(row)
    result = []
    for scope, members in groups.items():
        flops: dict[str, int] = {}
        for row in members:
            for dtype, value in row.flops_by_dtype.items():
                flops[dtype] = flops.get(dtype, 0) + value
        result.append(
            ScopeCost(
                scope=scope,
                kinds=tuple(sorted({row.kind for row in members})),
                operations=len(members),
                executions=sum(row.operation.count for row in members),
                flops_by_dtype=FrozenAttrs(dict(sorted(flops.items()))),
                read_bytes=sum(row.read_bytes for row in members),
                write_bytes=sum(row.write_bytes for row in members),
                dense_flops=sum(row.dense_flops for row in members),
            )
        )
    return tuple(result)


def estimate_operations(
    operations: Iterable[Operation],
    *,
    coverage: Coverage | None = None,
    boundary: Sequence[TensorSpec] = (),
    input_shapes: Any = (),
    loop_assumptions: Sequence[LoopAssumption] = (),
    framework: str | None = None,
    notes: Sequence[str] = (),
    cross_check: Mapping[str, Any] | None = None,
    kernels: Sequence[Kernel] = (),
    kernel_source: str | None = None,
    devices: int = 1,
    global_model_flops: int | None = None,
) -> CostEstimate:
    """Sum the cost of every operation. Without ``coverage`` all operations count as modeled.

    ``boundary`` names the program's inputs, parameters and outputs; without it the
    compulsory-traffic floor is unknown (None), since a list of operations does not say
    which tensors are intermediate. ``kernels`` (the executed units, ``core/kernels.py``) get
    their FLOPs from the records they execute, never from what the adapter or compiler said.
    """
    raw: Any = operations
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Iterable):
        raise RecordError(f"operations={raw!r} is not a sequence of Operation records")
    ops = tuple(operations)
    for i, op in enumerate(ops):
        if not isinstance(op, Operation):
            raise RecordError(f"operations[{i}] is a {type(op).__name__}, not an Operation")
    boundary = records_of(boundary, TensorSpec, "boundary")
    loop_assumptions = records_of(loop_assumptions, LoopAssumption, "loop_assumptions")
    rows = tuple(OperationCost.of(op) for op in ops)
    flops: dict[str, int] = {}
    for row in rows:
        for dtype, value in row.flops_by_dtype.items():
            flops[dtype] = flops.get(dtype, 0) + value
    notes = tuple(notes) + tuple(dict.fromkeys(f"{op.name}: {note}" for op in ops for note in op.cost.notes))
    return CostEstimate(
        flops_by_dtype=FrozenAttrs(dict(sorted(flops.items()))),
        read_bytes=sum(row.read_bytes for row in rows),
        write_bytes=sum(row.write_bytes for row in rows),
        compulsory_bytes=compulsory_bytes(boundary),
        by_operation=rows,
        by_scope=_scope_rows(rows),
        coverage=coverage if coverage is not None else Coverage.full(ops),
        input_shapes=input_shapes,
        loop_assumptions=tuple(loop_assumptions),
        framework=framework,
        boundary=tuple(boundary),
        notes=notes,
        dense_flops=sum(row.dense_flops for row in rows),
        transcendentals=sum(row.transcendentals for row in rows),
        cross_check=cross_check,
        kernels=with_record_flops(check_kernels(kernels, len(rows), "estimate"), rows),
        kernel_source=kernel_source,
        devices=devices,
        global_model_flops=global_model_flops,
    )


def with_record_flops(kernels: Sequence[Kernel], rows: Sequence[OperationCost]) -> tuple[Kernel, ...]:
    """Each kernel with ``flops_by_dtype`` the sum of its records' FLOPs (over their counts)."""
    result = []
    for kernel in kernels:
        flops: dict[str, int] = {}
        for index in kernel.operations:
            for dtype, value in rows[index].flops_by_dtype.items():
                flops[dtype] = flops.get(dtype, 0) + value
        result.append(dataclasses.replace(kernel, flops_by_dtype=flops))
    return tuple(result)


def estimate_trace(trace: Trace) -> CostEstimate:
    return estimate_operations(
        trace.operations,
        coverage=trace.coverage,
        boundary=trace.boundary,
        input_shapes=trace.input_shapes,
        loop_assumptions=trace.loop_assumptions,
        framework=trace.framework,
        notes=trace.notes,
        cross_check=trace.cross_check,
        kernels=trace.kernels,
        kernel_source=trace.kernel_source,
        devices=trace.devices,
        global_model_flops=trace.global_model_flops,
    )


def estimate_model(model: Any, inputs: Any, adapter: FrameworkAdapter, **kwargs: Any) -> CostEstimate:
    """Trace ``model`` on ``inputs`` with ``adapter`` and estimate the trace."""
    return estimate_trace(adapter.trace(model, inputs, **kwargs))
