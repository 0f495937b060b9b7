"""Elementwise ops, reductions, softmax and cumulative scans."""

from __future__ import annotations

import dataclasses
import math

from ..core.errors import RecordError, ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation, Shape
from .catalog import CATALOG, integer_pow_flops
from .registry import (
    NonNegative,
    axis_index,
    broadcast_shapes,
    broadcasts_to,
    cost_rule,
    default_cost,
    expect_inputs,
    expect_output,
    rows_of,
    where,
)


def per_element_counts(
    op: Operation,
    *,
    flops_per_element: int | None,
    transcendental: bool | None,
    transcendentals_per_element: int | None,
    exponent: int | None,
    extra_multiplies: int,
    default_flops: int = 1,
) -> tuple[int, int, str | None]:
    """(FLOPs, transcendentals, note) per element of a pointwise record, from the catalog entry
    ``attrs['op']`` names unless the record states them (``elementwise`` and
    ``foreach_elementwise`` share it). Explicit per-element attrs win whole (reports saved
    before the catalog carry them), and a name outside the catalog keeps the explicit form's
    defaults (``default_flops`` per element, no transcendental) and comes with a note saying
    so; the note is None otherwise."""
    name = op.attrs.get("op")
    explicit = flops_per_element is not None or transcendental is not None or transcendentals_per_element is not None
    if isinstance(name, str) and not explicit:
        if name == "integer_pow":
            if exponent is None:
                raise RecordError(f"{where(op)} is an integer_pow: give its attrs['exponent']")
            return integer_pow_flops(exponent), 0, None
        entry = CATALOG.get(name)
        if entry is not None:
            return entry.flops + extra_multiplies, entry.transcendentals, None
    flops = default_flops if flops_per_element is None else flops_per_element
    if transcendentals_per_element is None:
        transcendentals_per_element = 1 if transcendental else 0
    note = None
    if isinstance(name, str) and not explicit:
        # a typo in a table or a user's own name must not pass for a counted op unnoticed
        note = (
            f"attrs['op']={name!r} names no catalog entry: counted as {flops} FLOP(s) per element, the default; "
            f"name a catalog entry or give attrs['flops_per_element']"
        )
    return flops, transcendentals_per_element, note


def rows_along(op: Operation, x: Shape, axis: int) -> tuple[int, int]:
    """(rows, length) of ``x`` cut into rows along attrs['axis'], for the row-wise rules."""
    if not x:
        raise ShapeError(f"{where(op)} needs an input of rank >= 1 (a scalar is a row of one: shape (1,))")
    return rows_of(x, axis_index(op, axis, len(x)))


@cost_rule(
    "elementwise",
    "attrs['op'] names a pointwise catalog entry (neural_cost.costs.catalog) whose FLOPs and "
    "transcendentals per output element it counts (+ attrs['extra_multiplies'] per element; "
    "'integer_pow' by attrs['exponent']); explicit attrs['flops_per_element'] (default 1), "
    "attrs['transcendental'] (one per element) or attrs['transcendentals_per_element'] count instead; "
    "inputs broadcast to the output",
)
def elementwise(
    op: Operation,
    *,
    flops_per_element: NonNegative | None = None,
    transcendental: bool | None = None,
    transcendentals_per_element: NonNegative | None = None,
    exponent: int | None = None,
    extra_multiplies: NonNegative = 0,
) -> OpCost:
    """Counts come from the catalog entry ``attrs['op']`` names, unless the record states them
    (``per_element_counts``); with no inputs the explicit form defaults to 0 FLOPs (a fill
    writes). Parameters an adapter read from the call stay parameters: ``integer_pow`` is
    exponentiation by squaring of attrs['exponent'], and attrs['extra_multiplies'] counts
    multiplies by non-default coefficients the entry's formula leaves out (PyTorch's elu
    carrying both selu's scale and celu's input scale)."""
    for i, shape in enumerate(op.inputs):
        if not broadcasts_to(shape, op.output):
            raise ShapeError(f"{where(op)}: inputs[{i}] {shape} does not broadcast to the output {op.output}")
    if op.inputs:
        # A larger output than the inputs broadcast to is a materialised broadcast: a copy, not arithmetic.
        expect_output(op, broadcast_shapes(op, op.inputs), "the inputs' broadcast shape")
    elements = math.prod(op.output)
    flops, transcendentals, note = per_element_counts(
        op,
        flops_per_element=flops_per_element,
        transcendental=transcendental,
        transcendentals_per_element=transcendentals_per_element,
        exponent=exponent,
        extra_multiplies=extra_multiplies,
        default_flops=1 if op.inputs else 0,  # no inputs: a fill or iota writes
    )
    cost = default_cost(op, flops * elements, transcendentals * elements)
    return cost if note is None else dataclasses.replace(cost, notes=(*cost.notes, note))


@cost_rule(
    "reduce",
    "(input elements - output elements) combining ops, plus attrs['flops_per_output'] per output "
    "(1 for a mean's divide) and attrs['transcendentals_per_output'] (a norm's root, logsumexp's exps and log)",
)
def reduce(
    op: Operation,
    *,
    axes: tuple[int, ...] | None = None,
    flops_per_output: NonNegative = 0,
    transcendentals_per_output: NonNegative = 0,
) -> OpCost:
    """Reducing n elements to one takes n-1 combining ops (adds, max, argmax comparisons).

    Work beyond the combining ops is stated per output by the builder, which knows the
    reduced length L: a two-pass variance adds 3L+1 (mean divide, L subtracts, L squares,
    the second sum's L-1 adds, the final divide), a 2-norm adds L squares and a root."""
    expect_inputs(op, 1, 8, "x[, more operands reduced together]")
    x = op.inputs[0]
    n_in, n_out = math.prod(x), math.prod(op.output)
    if axes is not None:
        if any(not -len(x) <= a < len(x) for a in axes):
            raise ShapeError(f"{where(op)} attrs['axes']={axes!r} must list dims of x {x}")
        reduced = {a % len(x) for a in axes}
        dropped = tuple(s for i, s in enumerate(x) if i not in reduced)
        kept = tuple(1 if i in reduced else s for i, s in enumerate(x))
        if op.output not in (dropped, kept):
            raise ShapeError(f"{where(op)} output={op.output} does not fit reducing x {x} over axes {axes}")
    elif n_out > n_in or (n_out and n_in % n_out) or (n_in and not n_out):
        raise ShapeError(f"{where(op)} output={op.output} cannot be a reduction of x {x}")
    # n elements reduced to one take n-1 ops; an empty reduced axis yields the identity with none.
    combining = max(n_in - n_out, 0)
    return default_cost(op, combining + flops_per_output * n_out, transcendentals_per_output * n_out)


@cost_rule(
    "softmax",
    "per row of length L along attrs['axis']: softmax 5L-2 (max, subtract, exp, sum, divide); "
    "log_softmax (attrs['log']) 5L-1; L exponentials counted as transcendental",
)
def softmax(op: Operation, *, axis: int = -1, log: bool = False) -> OpCost:
    expect_inputs(op, 1, 1, "x")
    (x,) = op.inputs
    expect_output(op, x, "softmax keeps the input's shape")
    rows, length = rows_along(op, x, axis)
    if length == 0:
        return default_cost(op, 0)
    if log:
        # max L-1, subtract L, exp L, sum L-1, log 1, subtract L
        per_row, transcendental = 5 * length - 1, length + 1
    else:
        # max L-1, subtract L, exp L, sum L-1, divide L
        per_row, transcendental = 5 * length - 2, length
    return default_cost(op, rows * per_row, rows * transcendental)


@cost_rule(
    "cumulative",
    "cumsum/cumprod/cummax along attrs['axis']: L-1 combining steps per row of length L, each "
    "attrs['flops_per_combine'] FLOPs (default 1) and attrs['transcendentals_per_combine'] (default 0)",
)
def cumulative(
    op: Operation, *, axis: int = -1, flops_per_combine: NonNegative = 1, transcendentals_per_combine: NonNegative = 0
) -> OpCost:
    """A sequential scan's count; a parallel scan on an accelerator does up to twice this work.

    A combining step is one op for sum/product/max; a log-sum-exp scan combines with
    logaddexp, which its builder states as several FLOPs and transcendentals per step."""
    expect_inputs(op, 1, 1, "x")
    (x,) = op.inputs
    expect_output(op, x, "a cumulative op keeps the input's shape")
    rows, length = rows_along(op, x, axis)
    steps = rows * max(length - 1, 0)
    return default_cost(op, steps * flops_per_combine, steps * transcendentals_per_combine)
