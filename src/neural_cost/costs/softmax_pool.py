"""Softmax and pooling beyond the basic rules: safe softmax, softmax backward, adaptive
pooling with uneven windows, and the gradient of a pooling whose forward saved its work."""

from __future__ import annotations

import math
from typing import Literal

from ..core.errors import ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation, Shape
from .intmath import adaptive_window_elements
from .pointwise import rows_along
from .registry import (
    PerDim,
    Positive,
    cost_rule,
    default_cost,
    expect_inputs,
    expect_output,
    spatial,
    where,
)


@cost_rule(
    "safe_softmax",
    "softmax along attrs['axis'] whose rows of all -inf come out as zeros (attention's math path): per row "
    "of L, softmax's 5L-2 + L compares with -inf, L-1 ands, L selects = 8L-3; L exponentials",
)
def safe_softmax(op: Operation, *, axis: int = -1) -> OpCost:
    """PyTorch's ``_safe_softmax``: the masking test is counted as a full pass over the row
    (compare, and-reduce, select), as the unfused kernel runs it; a fused kernel that tests
    only the row maximum does 3L-2 fewer."""
    expect_inputs(op, 1, 1, "x")
    (x,) = op.inputs
    expect_output(op, x, "softmax keeps the input's shape")
    rows, length = rows_along(op, x, axis)
    return default_cost(op, rows * max(8 * length - 3, 0), rows * length)


@cost_rule(
    "softmax_backward",
    "(dy, y) along attrs['axis']: softmax y·(dy - Σ dy·y), log_softmax (attrs['log']) dy - exp(y)·Σ dy: "
    "4L-1 per row of L (multiply, sum, subtract, multiply); log_softmax L exponentials",
)
def softmax_backward(op: Operation, *, axis: int = -1, log: bool = False) -> OpCost:
    """Reads the incoming gradient and the forward's output y; the row sum is L-1 adds.
    A kernel that also recomputes y from x (none does in PyTorch) would cost a forward more."""
    expect_inputs(op, 2, 2, "dy, y")
    dy, y = op.inputs
    if dy != y:
        raise ShapeError(f"{where(op)}: dy {dy} and y {y} must have the same shape")
    expect_output(op, dy, "the input gradient has the output's shape")
    rows, length = rows_along(op, dy, axis)
    transcendentals = rows * length if log else 0
    return default_cost(op, rows * max(4 * length - 1, 0), transcendentals)


def adaptive_windows(size: int, out: int) -> list[int]:
    """Window lengths of adaptive pooling along one dim: [⌊i·n/m⌋, ⌈(i+1)·n/m⌉). For readers and
    tests: the rules use their sum, ``adaptive_window_total``, which never lists them."""
    return [-(-(i + 1) * size // out) - (i * size // out) for i in range(out)]


def _split(op: Operation, shape: Shape, label: str, ndim: int) -> tuple[Shape, Shape]:
    """(leading dims, spatial dims) with attrs['spatial_dims'] = ``ndim`` trailing dims spatial."""
    if len(shape) < ndim:
        raise ShapeError(f"{where(op)}: {label} {shape} has fewer than attrs['spatial_dims']={ndim} dims")
    return shape[: len(shape) - ndim], shape[len(shape) - ndim :]


@cost_rule(
    "adaptive_pooling",
    "x (*lead, *spatial) → (*lead, *pooled), the last attrs['spatial_dims'] dims (default 2) pooled into "
    "windows [⌊i·n/m⌋, ⌈(i+1)·n/m⌉): avg (attrs['mode']) a window's elements per output (adds and one "
    "divide), max its elements - 1 comparisons",
)
def adaptive_pooling(op: Operation, *, spatial_dims: Positive = 2, mode: Literal["avg", "max"] = "avg") -> OpCost:
    """Exact for windows of any length, overlapping or not (n not a multiple of m); windows
    that tile evenly are also a plain ``pooling`` record with the same count."""
    expect_inputs(op, 1, 1, "x")
    (x,) = op.inputs
    lead, window_dims = _split(op, x, "x", spatial_dims)
    out_lead, pooled = _split(op, op.output, "the output", spatial_dims)
    if out_lead != lead:
        raise ShapeError(f"{where(op)} output={op.output} must keep x's leading dims {lead}")
    if any(size == 0 and out > 0 for size, out in zip(window_dims, pooled, strict=True)):
        # every window would be empty: no max or mean to write (PyTorch rejects it too)
        raise ShapeError(f"{where(op)}: x {x} has an empty spatial dim to pool into the output {op.output}")
    windows = math.prod(lead) * adaptive_window_elements(window_dims, pooled)
    outputs = math.prod(op.output)
    return default_cost(op, windows if mode == "avg" else windows - outputs)


@cost_rule(
    "pooling_gradient",
    "gradient of a pooling whose forward saved its work (PyTorch), grad (*lead, *pooled) → x's shape: max "
    "(attrs['mode'], with the saved indices as a second input) 1 add per gradient element at its index; avg "
    "prod(attrs['kernel'])+1 per gradient element (a divide, an add per window position); adaptive_avg its "
    "window's elements + 1 per gradient element; the output is written whole",
)
def pooling_gradient(
    op: Operation,
    *,
    mode: Literal["max", "avg", "adaptive_avg"] = "max",
    spatial_dims: Positive = 2,
    kernel: PerDim[Positive] = 1,
) -> OpCost:
    """Unlike ``pooling_backward`` (JAX's select-and-scatter, which recomputes each window's
    winner from x), the max gradient reads the indices its forward wrote and does no
    comparisons. Padded window positions are counted as in the forward."""
    if mode == "max":
        expect_inputs(op, 2, 2, "grad, the indices saved by the forward")
        grad, indices = op.inputs
        if indices != grad:
            raise ShapeError(f"{where(op)}: the saved indices {indices} must have grad's shape {grad}")
    else:
        expect_inputs(op, 1, 1, "grad")
        grad = op.inputs[0]
    lead, pooled = _split(op, grad, "grad", spatial_dims)
    out_lead, window_dims = _split(op, op.output, "the output", spatial_dims)
    if out_lead != lead:
        raise ShapeError(f"{where(op)} output={op.output} must keep grad's leading dims {lead}")
    elements = math.prod(grad)
    if mode == "max":
        return default_cost(op, elements)
    if mode == "avg":
        window = spatial(op, "kernel", kernel, len(pooled))
        return default_cost(op, elements * (math.prod(window) + 1))
    return default_cost(op, math.prod(lead) * (adaptive_window_elements(window_dims, pooled) + math.prod(pooled)))
