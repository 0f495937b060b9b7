"""Table entries for TensorFlow's norm, softmax and pooling ops: ``FusedBatchNorm*``,
``Softmax``/``LogSoftmax``, and ``MaxPool``/``AvgPool`` (2-D and 3-D, ``MaxPoolV2``), the family
the PyTorch table's ``ops_norms`` holds.

Each builder turns one graph op into a ``batchnorm``, ``softmax`` or ``pooling`` record in the
canonical layout (x (N, C, *spatial)); the arithmetic lives in ``neural_cost.costs``. Pooling
pads as convolutions do (SAME, VALID or EXPLICIT; see ``common``).

- ``FusedBatchNorm*`` always applies its scale and offset: ``batchnorm`` with affine=True.
- Gradients, each PyTorch's record for the same backward: ``FusedBatchNormGrad*`` is
  ``native_batch_norm_backward``'s ``norm_backward`` (all three gradients, the scale read);
  ``AvgPoolGrad`` is ``avg_pool2d_backward``'s ``pooling_gradient``. ``MaxPoolGrad`` has no
  saved indices (PyTorch's backward reads them): it finds each window's maximum again from the
  input, as JAX's select-and-scatter does, a ``pooling_backward`` record (the forward's output,
  an operand too, is not read by the CPU kernel).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...core.records import Operation
from .common import UnmodeledOp, _canonical, _channels_last, _paddings, _spatial, const_ints
from .table import TfContext, attr, lowers

# -- pooling ---------------------------------------------------------------------------------


@lowers("MaxPool", "AvgPool", "MaxPool3D", "AvgPool3D", "MaxPoolV2")
def _pool(op: Any, ctx: TfContext) -> Sequence[Operation]:
    last = _channels_last(op)
    x = ctx.shape(op.inputs[0])
    ndim = len(x) - 2
    if op.type == "MaxPoolV2":
        ksize, strides = const_ints(op.inputs[1]), const_ints(op.inputs[2])
        if ksize is None or strides is None:
            raise UnmodeledOp("MaxPoolV2 with a window or strides that are not constants")
    else:
        ksize, strides = tuple(attr(op, "ksize", [])), tuple(attr(op, "strides", []))
    kernel = _spatial(ksize, last, ndim)
    stride = _spatial(strides, last, ndim)
    x_canonical = _canonical(x, last)
    padding = _paddings(op, x_canonical[2:], kernel, stride, (1,) * ndim, last)
    mode = "max" if op.type.startswith("Max") else "avg"
    attrs = {"kernel": kernel, "stride": stride, "padding": padding, "mode": mode}
    out = _canonical(ctx.shape(op.outputs[0]), last)
    return [ctx.op(op, "pooling", op.inputs[:1], attrs=attrs, input_shapes=(x_canonical,), output_shape=out)]


# -- norms and softmax -----------------------------------------------------------------------


@lowers("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def _fused_batch_norm(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """y = scale·(x - mean)·rsqrt(var + eps) + offset: the scale and offset are always applied.
    In training the mean and variance inputs are empty (computed from the batch)."""
    last = _channels_last(op)
    x = _canonical(ctx.shape(op.inputs[0]), last)
    per_channel = [t for t in op.inputs[1:5] if math.prod(ctx.shape(t)) == x[1]]
    training = bool(attr(op, "is_training", False))
    return [
        ctx.op(
            op,
            "batchnorm",
            (op.inputs[0], *per_channel),
            attrs={"affine": True, "training": training},
            input_shapes=(x, *(ctx.shape(t) for t in per_channel)),
            output_shape=x,
        )
    ]


@lowers("Softmax", "LogSoftmax")
def _softmax(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return [ctx.op(op, "softmax", attrs={"axis": -1, "log": op.type == "LogSoftmax"})]


# -- gradients -------------------------------------------------------------------------------


@lowers("FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3")
def _fused_batch_norm_grad(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """(dy, x, scale, mean, variance or its inverse[, reserve]) → (dx, dscale, doffset): the batch
    statistics saved by the forward in training, the moving ones otherwise."""
    last = _channels_last(op)
    x = _canonical(ctx.shape(op.inputs[1]), last)
    per_channel = op.inputs[2:5]
    attrs = {"norm": "batch", "training": bool(attr(op, "is_training", True)), "affine": True}
    return [
        ctx.op(
            op, "norm_backward", op.inputs[:5], attrs=attrs, input_shapes=(x, x, *(ctx.shape(t) for t in per_channel)),
            output_shape=x, extra_outputs=op.outputs[1:3],
        )
    ]  # fmt: skip


def _window(op: Any, ctx: TfContext, x: Any, last: bool) -> dict[str, Any]:
    ndim = len(ctx.shape(x)) - 2
    if op.type == "MaxPoolGradV2":
        ksize, strides = const_ints(op.inputs[3]), const_ints(op.inputs[4])
        if ksize is None or strides is None:
            raise UnmodeledOp("MaxPoolGradV2 with a window or strides that are not constants")
    else:
        ksize, strides = tuple(attr(op, "ksize", [])), tuple(attr(op, "strides", []))
    kernel, stride = _spatial(ksize, last, ndim), _spatial(strides, last, ndim)
    padding = _paddings(op, _canonical(ctx.shape(x), last)[2:], kernel, stride, (1,) * ndim, last)
    return {"kernel": kernel, "stride": stride, "padding": padding}


@lowers("MaxPoolGrad", "MaxPoolGradV2", "MaxPool3DGrad")
def _max_pool_grad(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """(x, the forward's output, grad) → x's shape."""
    last = _channels_last(op)
    x, grad = op.inputs[0], op.inputs[2]
    shapes = (_canonical(ctx.shape(grad), last), _canonical(ctx.shape(x), last))
    attrs = {"mode": "max", **_window(op, ctx, x, last)}
    return [ctx.op(op, "pooling_backward", (grad, x), attrs=attrs, input_shapes=shapes, output_shape=shapes[1])]


@lowers("AvgPoolGrad", "AvgPool3DGrad")
def _avg_pool_grad(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """(x's shape, a constant, grad) → x's shape: every gradient element spread over its window."""
    last = _channels_last(op)
    grad = op.inputs[1]
    shape = _canonical(ctx.shape(grad), last)
    ndim = len(shape) - 2
    attrs = {"mode": "avg", "spatial_dims": ndim, "kernel": _spatial(tuple(attr(op, "ksize", [])), last, ndim)}
    out = _canonical(ctx.shape(op.outputs[0]), last)
    return [ctx.op(op, "pooling_gradient", (grad,), attrs=attrs, input_shapes=(shape,), output_shape=out)]
