"""Table entries for TensorFlow ops that move data (``copy`` records) and the TensorList ops of
Keras recurrent loops. The free ops (metadata, aliases, handles) are in ``ops_free``.

Shape, axis, perm, paddings and multiples operands are metadata (small Const tensors) and
are not recorded as inputs: a copy reads the data it moves and writes its output.

- ``Transpose`` is free when it keeps the order of the non-size-1 dims (TensorFlow's kernel
  then only reshapes the buffer); otherwise it is a full copy.
- ``StridedSlice``/``Slice`` read only the slice (``reads='touched'``); one that keeps every
  element returns its input. (TensorFlow's CPU kernel also aliases a slice along dim 0 when
  the inner dims are aligned; that depends on the build's alignment, so it is counted as a
  copy: a small overcount.) ``Split``/``SplitV``/``Unpack`` write every piece.
- ``BroadcastTo`` is a copy when it grows its input, free otherwise.
- TensorLists: ``TensorListFromTensor`` copies the whole tensor into its elements and
  ``TensorListStack`` copies them back into one tensor. ``TensorListGetItem`` and
  ``TensorListSetItem`` are one-element copies: under XLA they are a dynamic slice and a
  dynamic update (one element read, one written). TensorFlow's own kernels hand the element
  over by reference, so on the graph executor these two records are an upper bound.
  ``TensorListReserve`` only allocates (free).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...core.dtypes import canonical_dtype
from ...core.records import Operation, Shape
from .common import UnmodeledOp, const_ints
from .table import EMPTY_REASONS, TfContext, attr, lowers


@lowers("ConcatV2")
def _concat(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return [ctx.op(op, "copy", op.inputs[:-1])]


@lowers("Concat")
def _concat_v1(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return [ctx.op(op, "copy", op.inputs[1:])]


@lowers("Pack")
def _pack(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return [ctx.op(op, "copy")]


@lowers("Unpack")
def _unpack(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return [ctx.op(op, "copy", op.inputs[:1], extra_outputs=op.outputs[1:])]


@lowers("Split")
def _split(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return [ctx.op(op, "copy", op.inputs[1:2], extra_outputs=op.outputs[1:])]


@lowers("SplitV")
def _split_v(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return [ctx.op(op, "copy", op.inputs[:1], extra_outputs=op.outputs[1:])]


@lowers(
    "Pad", "PadV2", "MirrorPad", "Tile", "ReverseV2", "SpaceToBatchND", "BatchToSpaceND", "DepthToSpace",
    "SpaceToDepth",
)  # fmt: skip
def _copy_first(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return [ctx.op(op, "copy", op.inputs[:1])]


EMPTY_REASONS["Transpose"] = "a transpose that keeps the order of the non-size-1 dims only reshapes its buffer"


def keeps_order(shape: Shape, perm: Sequence[int]) -> bool:
    """True when ``perm`` moves only size-1 dims of ``shape`` (the data's order is unchanged)."""
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved)


@lowers("Transpose")
def _transpose(op: Any, ctx: TfContext) -> Sequence[Operation]:
    perm = const_ints(op.inputs[1])
    if perm is not None and keeps_order(ctx.shape(op.inputs[0]), perm):
        return []
    return [ctx.op(op, "copy", op.inputs[:1])]


EMPTY_REASONS["StridedSlice"] = EMPTY_REASONS["Slice"] = "a slice that keeps every element returns its input"


@lowers("StridedSlice", "Slice")
def _slice(op: Any, ctx: TfContext) -> Sequence[Operation]:
    if math.prod(ctx.shape(op.outputs[0])) == math.prod(ctx.shape(op.inputs[0])):
        return []
    return [ctx.op(op, "copy", op.inputs[:1], attrs={"reads": "touched"})]


EMPTY_REASONS["BroadcastTo"] = "a broadcast that does not grow its input returns it"


@lowers("BroadcastTo")
def _broadcast_to(op: Any, ctx: TfContext) -> Sequence[Operation]:
    if math.prod(ctx.shape(op.outputs[0])) == math.prod(ctx.shape(op.inputs[0])):
        return []
    return [ctx.op(op, "copy", op.inputs[:1])]


@lowers("AssignVariableOp")
def _assign(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """Writes the value into the variable's buffer: read once, written once."""
    value = op.inputs[1]
    return [ctx.op(op, "copy", (value,), value)]


# -- TensorList ------------------------------------------------------------------------------


def _element_dtype(op: Any) -> str:
    return canonical_dtype(op.get_attr("element_dtype").name, f"{op.type} element_dtype")


def _element_shape(op: Any, ctx: TfContext, tensor: Any, shape_input: int) -> Shape:
    """A list element's shape: the static shape of ``tensor``, else the Const element_shape."""
    if tensor.shape.rank is not None and tensor.shape.is_fully_defined():
        return ctx.shape(tensor)
    dims = const_ints(op.inputs[shape_input])
    if dims is None or any(d < 0 for d in dims):
        raise UnmodeledOp(f"{op.type}: the list element's shape is not static")
    return dims


@lowers("TensorListFromTensor")
def _list_from_tensor(op: Any, ctx: TfContext) -> Sequence[Operation]:
    tensor = op.inputs[0]
    return [ctx.op(op, "copy", (tensor,), output_shape=ctx.shape(tensor), dtype=ctx.dtype(tensor))]


@lowers("TensorListStack")
def _list_stack(op: Any, ctx: TfContext) -> Sequence[Operation]:
    out = op.outputs[0]
    if out.shape.rank is not None and out.shape.is_fully_defined():
        shape = ctx.shape(out)
    else:
        count = int(op.get_attr("num_elements"))
        if count < 0:
            raise UnmodeledOp("TensorListStack: the number of elements is not static")
        shape = (count, *_element_shape(op, ctx, out, 1))
    dtype = _element_dtype(op)
    return [ctx.op(op, "copy", (), input_shapes=(shape,), input_dtypes=(dtype,), output_shape=shape, dtype=dtype)]


@lowers("TensorListGetItem")
def _list_get_item(op: Any, ctx: TfContext) -> Sequence[Operation]:
    shape = _element_shape(op, ctx, op.outputs[0], 2)
    dtype = _element_dtype(op)
    return [ctx.op(op, "copy", (), input_shapes=(shape,), input_dtypes=(dtype,), output_shape=shape, dtype=dtype)]


@lowers("TensorListSetItem", "TensorListPushBack")
def _list_set_item(op: Any, ctx: TfContext) -> Sequence[Operation]:
    value = op.inputs[-1]
    return [ctx.op(op, "copy", (value,), output_shape=ctx.shape(value), dtype=ctx.dtype(value))]


# --- resampling, complex assembly, diagonal matrices, host callbacks -------------------------

_RESIZES = {"ResizeBilinear": "bilinear", "ResizeNearestNeighbor": "nearest", "ResizeBicubic": "bicubic"}
#: ScaleAndTranslate's kernels with a counterpart: the triangle is bilinear's filter, Keys cubic bicubic's.
_SCALE_KERNELS = {"triangle": "bilinear", "keyscubic": "bicubic"}


def _channels_first(shape: Shape) -> Shape:
    """NHWC → NCHW: the interpolate rule reads (N, C, *spatial); the counts do not depend on it."""
    return (shape[0], shape[-1], *shape[1:-1])


@lowers(*_RESIZES, "ScaleAndTranslate")
def _resize(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """(images NHWC, size[, scale, translation]): ``interpolate`` by the op's mode;
    ScaleAndTranslate (``tf.image.resize(antialias=True)``) as the antialiased separable form of
    its kernel's mode, when the kernel has one (triangle, Keys cubic)."""
    attrs: dict[str, Any]
    if op.type == "ScaleAndTranslate":
        kernel = str(attr(op, "kernel_type", "lanczos3"))
        if kernel not in _SCALE_KERNELS or not attr(op, "antialias", True):
            raise UnmodeledOp(f"ScaleAndTranslate {op.name}: kernel {kernel!r} (antialias) has no interpolate mode")
        attrs = {"mode": _SCALE_KERNELS[kernel], "antialias": True}
    else:
        attrs = {"mode": _RESIZES[op.type]}
    x, out = op.inputs[0], op.outputs[0]
    return [
        ctx.op(
            op,
            "interpolate",
            [x],
            attrs=attrs,
            input_shapes=[_channels_first(ctx.shape(x))],
            input_dtypes=[ctx.dtype(x)],
            output_shape=_channels_first(ctx.shape(out)),
        )
    ]


@lowers("Complex")
def _complex(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """(real, imag) interleaved into complex values: a ``copy``, no arithmetic."""
    return [ctx.op(op, "copy")]


@lowers("MatrixDiag", "MatrixDiagV2", "MatrixDiagV3")
def _matrix_diag(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """A matrix with the given diagonal (``tf.eye`` is one): a ``copy`` reading the diagonal and
    writing the whole matrix; the other operands (k, sizes, padding value) are scalars."""
    return [ctx.op(op, "copy", op.inputs[:1])]


@lowers("EagerPyFunc", "PyFunc", "PyFuncStateless")
def _py_function(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """``callback``: the operands sent to Python and the results brought back, as bytes; what the
    function computes is unknown, and the record's note says so."""
    outputs = list(op.outputs)
    token = attr(op, "token")
    attrs: dict[str, Any] = {"target": token} if isinstance(token, str) else {}
    if not outputs or not all(t.shape.is_fully_defined() for t in outputs):
        attrs["results_known"] = not outputs  # py_function's results have no static shape
        # an empty output stands for results of unknown size (the object is never read)
        return [ctx.op(op, "callback", output=object(), output_shape=(0,), dtype="uint8", attrs=attrs)]
    return [ctx.op(op, "callback", output=outputs[0], extra_outputs=outputs[1:], attrs=attrs)]
