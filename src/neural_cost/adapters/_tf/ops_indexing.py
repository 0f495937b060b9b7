"""Table entries for TensorFlow's gathers and scatters: ``GatherV2``, ``GatherNd``,
``ResourceGather*`` and ``TensorScatter*``.

Each builder turns one graph op into an ``embedding``, ``gather`` or ``scatter`` record; the
arithmetic lives in ``neural_cost.costs``. What the builders decide (checked against graphs
Keras 3 traces):

- ``GatherV2`` of a 2-D table along axis 0 is an ``embedding`` record (Keras ``Embedding``),
  other gathers ``gather``; ``ResourceGather`` takes the variable's shape from the resource
  handle's shape data (the op reads the touched rows straight from the variable).
- ``TensorScatter*`` are counted in place: they write only the touched elements (a combining
  scatter also reads their old values).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.records import Operation, Shape
from .common import UnmodeledOp, const_ints
from .table import TfContext, attr, lowers

# -- gather and scatter ----------------------------------------------------------------------


def resource_shape(tensor: Any) -> Shape | None:
    """The shape of the variable a resource handle points to, from its handle shape data."""
    try:
        from tensorflow.python.ops import handle_data_util

        data = handle_data_util.get_resource_handle_data(tensor)
    except Exception:  # no handle data attached
        return None
    if not data.is_set or not data.shape_and_type:
        return None
    dims = [d.size for d in data.shape_and_type[0].shape.dim]
    if data.shape_and_type[0].shape.unknown_rank or any(d < 0 for d in dims):
        return None
    return tuple(int(d) for d in dims)


@lowers("GatherV2")
def _gather_v2(op: Any, ctx: TfContext) -> Sequence[Operation]:
    params = ctx.shape(op.inputs[0])
    axis = const_ints(op.inputs[2])
    batch_dims = int(attr(op, "batch_dims", 0))
    kind = "embedding" if len(params) == 2 and axis in ((0,), (-2,)) and batch_dims == 0 else "gather"
    return [ctx.op(op, kind, op.inputs[:2])]


@lowers("GatherNd")
def _gather_nd(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return [ctx.op(op, "gather", op.inputs[:2])]


@lowers("ResourceGather", "ResourceGatherNd")
def _resource_gather(op: Any, ctx: TfContext) -> Sequence[Operation]:
    table = resource_shape(op.inputs[0])
    if table is None:
        raise UnmodeledOp(f"{op.type}: the variable's shape is not in its resource handle's shape data")
    indices = ctx.shape(op.inputs[1])
    dtype = ctx.dtype(op.outputs[0])
    plain = op.type == "ResourceGather" and len(table) == 2 and int(attr(op, "batch_dims", 0)) == 0
    return [
        ctx.op(
            op,
            "embedding" if plain else "gather",
            op.inputs[:2],
            input_shapes=(table, indices),
            input_dtypes=(dtype, ctx.dtype(op.inputs[1])),
        )
    ]


_SCATTER_MODES = {
    "TensorScatterUpdate": "update",
    "TensorScatterAdd": "add",
    "TensorScatterSub": "sub",
    "TensorScatterMax": "max",
    "TensorScatterMin": "min",
}


@lowers(*_SCATTER_MODES)
def _tensor_scatter(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """Counted in place (TensorFlow forwards the operand's buffer when nothing else holds it)."""
    return [ctx.op(op, "scatter", attrs={"mode": _SCATTER_MODES[op.type]})]
