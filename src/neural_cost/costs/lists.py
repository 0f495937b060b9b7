"""Tensor-list ops (PyTorch's ``_foreach_*``) over tensors of several dtypes or shapes: each
tensor's work charged to its own dtype. (A list of one dtype and shape is one flattened
``elementwise`` record: the same count.)"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from ..core.errors import ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation
from .pointwise import per_element_counts
from .registry import NonNegative, broadcasts_to, cost_rule, expect_inputs, read_inputs, where


def _outputs(op: Operation) -> list[tuple[tuple[int, ...], str]]:
    extra = op.extra_output_dtypes or (op.dtype,) * len(op.extra_outputs)
    return [(op.output, op.dtype), *zip(op.extra_outputs, extra, strict=True)]


def _charged_by_dtype(op: Operation, flops_by_tensor: Iterable[tuple[str, int]], transcendentals: int) -> OpCost:
    """Each tensor's (dtype, FLOPs) charged to its own dtype; every input read once, the outputs written."""
    flops: dict[str, int] = {}
    for dtype, count in flops_by_tensor:
        flops[dtype] = flops.get(dtype, 0) + count
    return OpCost(
        {d: n for d, n in flops.items() if n}, read_inputs(op), op.output_bytes, transcendentals=transcendentals
    )


@cost_rule(
    "foreach_reduce",
    "one reduction per input tensor, each to one output (output then extra outputs): n-1 combining ops "
    "+ attrs['flops_per_element']·n + attrs['flops_per_output'] for a tensor of n elements, charged to its "
    "dtype; transcendentals attrs['transcendentals_per_element']·n + attrs['transcendentals_per_output']",
)
def foreach_reduce(
    op: Operation,
    *,
    flops_per_element: NonNegative = 0,
    flops_per_output: NonNegative = 0,
    transcendentals_per_element: NonNegative = 0,
    transcendentals_per_output: NonNegative = 0,
) -> OpCost:
    """``_foreach_norm`` (a 2-norm: 1 square per element and 1 root per tensor) and
    ``_foreach_max``: the per-element and per-output parts are the builder's, as for
    ``reduce``'s per-output work."""
    expect_inputs(op, 1, 100_000, "one tensor per output")
    if len(op.inputs) != 1 + len(op.extra_outputs):
        raise ShapeError(
            f"{where(op)} reduces {len(op.inputs)} tensors into {1 + len(op.extra_outputs)} outputs; give one each"
        )
    sizes = [math.prod(shape) for shape in op.inputs]
    flops_by_tensor = [
        (op.input_dtype(i), max(n - 1, 0) + flops_per_element * n + flops_per_output) for i, n in enumerate(sizes)
    ]
    transcendentals = sum(transcendentals_per_element * n + transcendentals_per_output for n in sizes)
    return _charged_by_dtype(op, flops_by_tensor, transcendentals)


@cost_rule(
    "foreach_elementwise",
    "a pointwise op applied tensor by tensor, counted per element of each output (the output, then extra "
    "outputs) as an elementwise record counts it (the catalog entry attrs['op'] names, or explicit "
    "attrs['flops_per_element'] (default 1) and attrs['transcendentals_per_element']), charged to that "
    "output's dtype; inputs: attrs['lists'] lists of one tensor per output, then scalars",
)
def foreach_elementwise(
    op: Operation,
    *,
    lists: NonNegative = 1,
    flops_per_element: NonNegative | None = None,
    transcendental: bool | None = None,
    transcendentals_per_element: NonNegative | None = None,
    exponent: int | None = None,
    extra_multiplies: NonNegative = 0,
) -> OpCost:
    """Inputs are the lists read, each laid out in output order (list j's tensor for output
    i at position j·k + i, k outputs), then lone operands (0-d scalars). A target list that
    is only written (``zero_``) is not among the lists read."""
    outputs = _outputs(op)
    if len(op.inputs) < lists * len(outputs):
        raise ShapeError(
            f"{where(op)} has {len(op.inputs)} inputs; attrs['lists']={lists} lists of {len(outputs)} need "
            f"{lists * len(outputs)}"
        )
    for j in range(lists):
        for i, (shape, _) in enumerate(outputs):
            given = op.inputs[j * len(outputs) + i]
            if not broadcasts_to(given, shape):
                raise ShapeError(f"{where(op)}: list {j}'s tensor {i} {given} does not broadcast to its output {shape}")
    per_element, per_element_transcendentals, note = per_element_counts(
        op,
        flops_per_element=flops_per_element,
        transcendental=transcendental,
        transcendentals_per_element=transcendentals_per_element,
        exponent=exponent,
        extra_multiplies=extra_multiplies,
    )
    flops_by_tensor = [(dtype, per_element * math.prod(shape)) for shape, dtype in outputs]
    elements = sum(math.prod(shape) for shape, _ in outputs)
    cost = _charged_by_dtype(op, flops_by_tensor, per_element_transcendentals * elements)
    return cost if note is None else dataclasses.replace(cost, notes=(*cost.notes, note))
