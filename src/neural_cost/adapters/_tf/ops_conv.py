"""Table entries for TensorFlow's convolutions: ``Conv2D``, ``Conv3D``,
``DepthwiseConv2dNative`` and the transposed convolutions Keras emits.

Each builder turns one graph op into a ``conv`` record; the arithmetic lives in
``neural_cost.costs``. What the builders decide (checked against graphs Keras 3 traces):

- Convolutions are ``conv`` records in the canonical layout (x (N, C, *spatial); weight
  (C_out, C_in/groups, *kernel), transposed (C_in, C_out/groups, *kernel)), from NHWC/NCHW
  (NDHWC/NCDHW) and HWIO filters. SAME padding is TensorFlow's: total = max((out-1)·stride +
  dilation·(k-1) + 1 - in, 0), the smaller half before. ``DepthwiseConv2dNative`` is
  groups = C with C·multiplier outputs. ``Conv2DBackpropInput``/``Conv3DBackpropInputV2``
  (the transposed conv Keras emits) take the forward conv's padding and the output_padding
  that makes the requested output size.

Pooling is in ``ops_norms``, as in the PyTorch table; the layout and padding helpers the two
share are in ``common``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.records import Operation, Shape
from .common import _canonical, _channels_last, _paddings, _spatial
from .table import TfContext, attr, lowers

# -- convolution -----------------------------------------------------------------------------


def _conv_attrs(
    stride: Shape, dilation: Shape, padding: tuple[tuple[int, int], ...], groups: int, **extra: Any
) -> dict[str, Any]:
    return {"stride": stride, "dilation": dilation, "padding": padding, "groups": groups, **extra}


@lowers("Conv2D", "Conv3D", "DepthwiseConv2dNative")
def _conv(op: Any, ctx: TfContext) -> Sequence[Operation]:
    last = _channels_last(op)
    x, filt = ctx.shape(op.inputs[0]), ctx.shape(op.inputs[1])
    ndim = len(x) - 2
    kernel = filt[:ndim]
    stride = _spatial(attr(op, "strides", []), last, ndim)
    dilation = _spatial(attr(op, "dilations", []), last, ndim)
    x_canonical = _canonical(x, last)
    padding = _paddings(op, x_canonical[2:], kernel, stride, dilation, last)
    if op.type == "DepthwiseConv2dNative":
        channels, multiplier = filt[ndim], filt[ndim + 1]
        weight: Shape = (channels * multiplier, 1, *kernel)
        groups = channels
    else:
        weight = (filt[ndim + 1], filt[ndim], *kernel)
        groups = x_canonical[1] // filt[ndim] if filt[ndim] else 1
    out = _canonical(ctx.shape(op.outputs[0]), last)
    return [
        ctx.op(
            op,
            "conv",
            op.inputs[:2],
            attrs=_conv_attrs(stride, dilation, padding, groups),
            input_shapes=(x_canonical, weight),
            output_shape=out,
        )
    ]


@lowers("Conv2DBackpropInput", "Conv3DBackpropInputV2")
def _conv_transpose(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """Inputs: (input_sizes, filter (*kernel, C_out, C_in), out_backprop): the gradient of a
    forward conv from the output (its "input") to out_backprop (its "output")."""
    last = _channels_last(op)
    filt, grad = ctx.shape(op.inputs[1]), ctx.shape(op.inputs[2])
    ndim = len(grad) - 2
    kernel = filt[:ndim]
    stride = _spatial(attr(op, "strides", []), last, ndim)
    dilation = _spatial(attr(op, "dilations", []), last, ndim)
    x = _canonical(grad, last)
    out = _canonical(ctx.shape(op.outputs[0]), last)
    padding = _paddings(op, out[2:], kernel, stride, dilation, last)
    c_in, c_out = x[1], filt[ndim]
    groups = c_in // filt[ndim + 1] if filt[ndim + 1] else 1
    output_padding = tuple(
        out[2 + i] - ((x[2 + i] - 1) * stride[i] - padding[i][0] - padding[i][1] + dilation[i] * (kernel[i] - 1) + 1)
        for i in range(ndim)
    )
    weight = (c_in, c_out // groups, *kernel)
    return [
        ctx.op(
            op,
            "conv",
            (op.inputs[2], op.inputs[1]),
            attrs=_conv_attrs(stride, dilation, padding, groups, transposed=True, output_padding=output_padding),
            input_shapes=(x, weight),
            output_shape=out,
        )
    ]
