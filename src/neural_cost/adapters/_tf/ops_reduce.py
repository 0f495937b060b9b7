"""Table entries for TensorFlow's reductions (``Sum``, ``Mean``, ``ArgMax``, ``EuclideanNorm``...),
cumulative scans and top-k (which ``tf.sort``/``tf.argsort`` lower to).

Each builder turns one graph op into a ``reduce``, ``cumulative`` or ``sort`` record; the
arithmetic lives in ``neural_cost.costs``. What the builders decide:

- Reductions: axes from the Const reduction indices (omitted when not constant: the rule
  then checks only the element counts); ``Mean`` adds 1 divide per output.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...core.records import Operation
from .common import UnmodeledOp, const_ints
from .table import TfContext, lowers

# -- reductions ------------------------------------------------------------------------------

_PER_OUTPUT = {"Mean": 1}


@lowers("Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin", "EuclideanNorm")
def _reduce(op: Any, ctx: TfContext) -> Sequence[Operation]:
    x = ctx.shape(op.inputs[0])
    attrs: dict[str, Any] = {}
    axes = const_ints(op.inputs[1])
    if axes is not None and all(-len(x) <= a < len(x) for a in axes):
        attrs["axes"] = axes
    if op.type == "EuclideanNorm":  # L squares and one root per output (sqrt of the sum of squares)
        length = math.prod(x) // max(math.prod(ctx.shape(op.outputs[0])), 1)
        attrs["flops_per_output"] = length + 1
        attrs["transcendentals_per_output"] = 1
    elif op.type in _PER_OUTPUT:
        attrs["flops_per_output"] = _PER_OUTPUT[op.type]
    return [ctx.op(op, "reduce", op.inputs[:1], attrs=attrs)]


# -- scans and top-k -------------------------------------------------------------------------


@lowers("Cumsum", "Cumprod")
def _cumulative(op: Any, ctx: TfContext) -> Sequence[Operation]:
    axis = const_ints(op.inputs[1])
    if axis is None or len(axis) != 1:
        raise UnmodeledOp(f"{op.type} with an axis that is not a constant")
    return [ctx.op(op, "cumulative", op.inputs[:1], attrs={"axis": axis[0]})]


@lowers("TopKV2", "TopK")
def _top_k(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """``tf.sort``/``tf.argsort`` lower to TopKV2 with k = the row length: a full sort's count."""
    values = ctx.shape(op.outputs[0])
    return [ctx.op(op, "sort", op.inputs[:1], attrs={"axis": -1, "k": values[-1]}, extra_outputs=op.outputs[1:2])]
