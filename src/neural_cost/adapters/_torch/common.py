"""Helpers shared by the contraction, convolution, attention, recurrent, indexing and
movement table entries: (shape, dtype) specs, records built from them, schema-bound
arguments and a few shape tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ...core.records import Operation, Shape
from .table import AtenCall, TorchContext

Ops = list[Operation]
Spec = tuple[Shape, str]  # a (shape, dtype) the builder has worked out, when no tensor has it


# --- helpers ----------------------------------------------------------------------------


def _spec(ctx: TorchContext, tensor: Any) -> Spec:
    return ctx.shape(tensor), ctx.dtype(tensor)


def _record(
    ctx: TorchContext,
    name: str,
    kind: str,
    inputs: Sequence[Spec],
    output: Spec,
    *,
    attrs: dict[str, Any] | None = None,
    extra: Sequence[Spec] = (),
    count: int = 1,
) -> Operation:
    """A record from (shape, dtype) pairs: for layouts a builder rearranged, and for work
    that runs ``count`` times within one call (a recurrent layer's time steps)."""
    return Operation(
        name,
        kind,
        tuple(shape for shape, _ in inputs),
        output[0],
        output[1],
        scope=ctx.scope,
        attrs=attrs or {},
        input_dtypes=tuple(dtype for _, dtype in inputs),
        extra_outputs=tuple(shape for shape, _ in extra),
        extra_output_dtypes=tuple(dtype for _, dtype in extra) if extra else None,
        count=count,
    )


_SCHEMAS: dict[Any, tuple[tuple[str, Any], ...]] = {}


def _arguments(call: AtenCall) -> dict[str, Any]:
    """Every argument of the call by its schema name, defaults filled in: robust to
    keyword-only arguments and to overloads that number their arguments differently."""
    schema = _SCHEMAS.get(call.func)
    if schema is None:
        schema = tuple(
            (a.name, a.default_value if a.has_default_value() else None) for a in call.func._schema.arguments
        )
        _SCHEMAS[call.func] = schema
    values: dict[str, Any] = {}
    for i, (name, default) in enumerate(schema):
        if i < len(call.args):
            values[name] = call.args[i]
        else:
            values[name] = call.kwargs.get(name, default)
    return values


def _is_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor)


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _per_dim(values: Any, ndim: int) -> tuple[int, ...]:
    """A per-spatial-dim parameter; aten accepts one value for every dim."""
    ints = _ints(values)
    return ints * ndim if len(ints) == 1 and ndim > 1 else ints


def _broadcasts(shape: Shape, target: Shape) -> bool:
    if len(shape) > len(target):
        return False
    offset = len(target) - len(shape)
    return all(d == 1 or d == target[offset + i] for i, d in enumerate(shape))


def _broadcast_elements(shapes: Sequence[Shape]) -> int:
    """Elements of the shape ``shapes`` broadcast to (they are known to broadcast)."""
    rank = max((len(s) for s in shapes), default=0)
    total = 1
    for axis in range(rank):
        sizes = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0} - {1}
        total *= sizes.pop() if sizes else 1
    return total


def _nonzero_count(mask: Any) -> int:
    """How many elements of a boolean mask are set; its size when the values cannot be read
    (meta or fake tensors): an upper bound."""
    try:
        return int(torch.count_nonzero(mask))
    except (RuntimeError, NotImplementedError):
        return int(mask.numel())


def _bias_record(ctx: TorchContext, name: str, out: Any, bias: Any, channel_dim: int) -> Operation:
    """An elementwise bias add over ``out``, the bias laid along ``channel_dim``."""
    out_shape = ctx.shape(out)
    shape = tuple(int(bias.numel()) if d == channel_dim else 1 for d in range(channel_dim, len(out_shape)))
    return _record(
        ctx,
        name,
        "elementwise",
        [(out_shape, ctx.dtype(out)), (shape, ctx.dtype(bias))],
        _spec(ctx, out),
        attrs={"op": "add"},
    )


def _matmul(ctx: TorchContext, name: str, lhs: Spec, rhs: Spec, out: Spec, count: int = 1) -> Operation:
    return _record(ctx, name, "matmul", [lhs, rhs], out, count=count)
