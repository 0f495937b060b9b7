"""Call helpers shared by the pointwise, reduction, norm, random, optimizer and free table
entries: arguments bound by schema name, tensor inputs, axes, flat and ``custom`` records."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from ...core.records import Operation, Shape
from .common import _record
from .table import AtenCall, TorchContext

Counts = tuple[int, int]  # (FLOPs, transcendentals) per element

# -- call helpers ---------------------------------------------------------------------------

_SIGNATURES: dict[Any, tuple[tuple[str, ...], frozenset[str], dict[str, Any]]] = {}


def _signature(func: Any) -> tuple[tuple[str, ...], frozenset[str], dict[str, Any]]:
    """(argument names, names of out= arguments, defaults) of an op overload, cached."""
    signature = _SIGNATURES.get(func)
    if signature is None:
        arguments = func._schema.arguments
        names = tuple(a.name for a in arguments)
        outs = frozenset(a.name for a in arguments if a.is_out)
        defaults = {a.name: a.default_value for a in arguments if a.has_default_value()}
        signature = _SIGNATURES[func] = (names, outs, defaults)
    return signature


def _bound(call: AtenCall) -> dict[str, Any]:
    """Every argument by its schema name: defaults, then positional, then keyword values."""
    names, _, defaults = _signature(call.func)
    bound = dict(defaults)
    bound.update(zip(names, call.args, strict=False))
    bound.update(call.kwargs)
    return bound


def _inputs(call: AtenCall, skip: Sequence[str] = (), bound: dict[str, Any] | None = None) -> list[torch.Tensor]:
    """The tensors the call reads, in schema order: out= buffers, None and ``skip`` left out;
    an empty tensor is left out when the output is not (an unused buffer, e.g. log_sigmoid's on CUDA)."""
    names, outs, _ = _signature(call.func)
    bound = _bound(call) if bound is None else bound
    outputs = call.outputs
    nonempty = bool(outputs) and outputs[0].numel() > 0
    found = []
    for name in names:
        value = bound.get(name)
        if name in outs or name in skip or not isinstance(value, torch.Tensor):
            continue
        if nonempty and value.numel() == 0:
            continue
        found.append(value)
    return found


def _numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _ints(value: Any, ndim: int, default: int) -> tuple[int, ...]:
    """A per-dimension int argument: one int, an empty list (the default), one or ndim ints."""
    if value is None:
        return (default,) * ndim
    if isinstance(value, int):
        return (value,) * ndim
    items = tuple(int(v) for v in value)
    if not items:
        return (default,) * ndim
    return items * ndim if len(items) == 1 else items


def _axes(x: Shape, out: Shape, dim: Any) -> tuple[int, ...] | None:
    """Reduced axes, non-negative (None or an empty list reduces everything), or None when
    ``dim`` is not a list of ints that explains ``out`` (dim names): the rule then checks
    only that ``out`` divides ``x``."""
    rank = len(x)
    dims = [dim] if isinstance(dim, int) else list(dim or ())
    if not all(isinstance(d, int) for d in dims):
        return None
    axes = tuple(sorted({d % rank for d in dims})) if dims and rank else tuple(range(rank))
    dropped = tuple(s for i, s in enumerate(x) if i not in axes)
    kept = tuple(1 if i in axes else s for i, s in enumerate(x))
    return axes if out in (dropped, kept) else None


def _flat_op(
    call: AtenCall,
    ctx: TorchContext,
    kind: str,
    inputs: Sequence[tuple[Shape, str]],
    output: tuple[Shape, str],
    extra_outputs: Sequence[tuple[Shape, str]] = (),
    attrs: dict[str, Any] | None = None,
) -> Operation:
    """A record over shapes with their own dtypes (flattened tensor lists)."""
    return _record(ctx, call.name, kind, inputs, output, attrs=attrs, extra=extra_outputs)


def _packet_names(bases: Sequence[str]) -> list[str]:
    """Each base name and its in-place packet (``add_``) when this PyTorch has one."""
    names = []
    for base in bases:
        names.append(base)
        if hasattr(torch.ops.aten, base + "_"):
            names.append(base + "_")
    return names


def _elementwise(
    call: AtenCall,
    ctx: TorchContext,
    counts: Counts | str,
    inputs: Sequence[Any] | None = None,
    params: dict[str, Any] | None = None,
) -> list[Operation]:
    """One ``elementwise`` record. ``counts`` names its entry in ``neural_cost.costs.catalog``
    (the rule reads the per-element counts there, with ``params`` such as an integer power's
    exponent; the record says which entry counted it), or states (FLOPs, transcendentals) per
    element for work the call's arguments decide (a loss)."""
    outputs = call.outputs
    if isinstance(counts, str):
        attrs: dict[str, Any] = {"op": counts, **(params or {})}
    else:
        attrs = {"op": call.name, "flops_per_element": counts[0]}
        if counts[1]:
            attrs["transcendentals_per_element"] = counts[1]
    ins = _inputs(call) if inputs is None else inputs
    return [ctx.op(call, "elementwise", ins, outputs[0], attrs=attrs, extra_outputs=outputs[1:])]
