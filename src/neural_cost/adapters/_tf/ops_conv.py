"""Table entries for TensorFlow's convolutions: ``Conv2D``, ``Conv3D``,
``DepthwiseConv2dNative``, the transposed convolutions Keras emits and the gradients of all three.

Each builder turns one graph op into a ``conv`` record; the arithmetic lives in
``neural_cost.costs``. What the builders decide (checked against graphs Keras 3 traces):

- Convolutions are ``conv`` records in the canonical layout (x (N, C, *spatial); weight
  (C_out, C_in/groups, *kernel), transposed (C_in, C_out/groups, *kernel)), from NHWC/NCHW
  (NDHWC/NCDHW) and HWIO filters. SAME padding is TensorFlow's: total = max((out-1)·stride +
  dilation·(k-1) + 1 - in, 0), the smaller half before. ``DepthwiseConv2dNative`` is
  groups = C with C·multiplier outputs. ``Conv2DBackpropInput``/``Conv3DBackpropInputV2``
  (the transposed conv Keras emits) take the forward conv's padding and the output_padding
  that makes the requested output size. ``DepthwiseConv2dNativeBackpropInput`` is the same
  transposed conv with groups = C: the input gradient of any conv, as PyTorch's
  ``convolution_backward.grad_input`` counts it.
- ``Conv2DBackpropFilter``/``Conv3DBackpropFilterV2``/``DepthwiseConv2dNativeBackpropFilter``
  are PyTorch's ``convolution_backward.grad_weight`` record (see ``_conv_filter_gradient``).

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


@lowers("Conv2DBackpropInput", "Conv3DBackpropInputV2", "DepthwiseConv2dNativeBackpropInput")
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
    c_in, c_out = x[1], out[1]
    # the forward's input channels over its filter's per-group ones; a depthwise filter is per channel
    depthwise = op.type == "DepthwiseConv2dNativeBackpropInput"
    groups = c_out if depthwise else c_out // filt[ndim] if filt[ndim] else 1
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


def _crop_to(size: int, taps: int, stride: int, dilation: int, low: int, out: int) -> int:
    """The high padding (negative: a crop) that makes a conv of ``size`` elements with ``taps``
    taps give exactly ``out`` outputs: elements past the last window take no part in the gradient."""
    return stride * (out - 1) + dilation * (taps - 1) + 1 - size - low


@lowers("Conv2DBackpropFilter", "Conv3DBackpropFilterV2", "DepthwiseConv2dNativeBackpropFilter")
def _conv_filter_gradient(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """Inputs: (input, filter_sizes, out_backprop) → the filter's gradient, as PyTorch's
    ``convolution_backward.grad_weight``: the conv of the input (as (C_in, N, *spatial)) with
    out_backprop (as (C_out, N, *out spatial)) for a kernel, with stride and dilation swapped
    and ``batch_groups=groups`` (a depthwise filter: groups = C). It costs what the forward does."""
    last = _channels_last(op)
    x = _canonical(ctx.shape(op.inputs[0]), last)
    grad = _canonical(ctx.shape(op.inputs[2]), last)
    filt = ctx.shape(op.outputs[0])
    ndim = len(x) - 2
    kernel = filt[:ndim]
    stride = _spatial(attr(op, "strides", []), last, ndim)
    dilation = _spatial(attr(op, "dilations", []), last, ndim)
    padding = _paddings(op, x[2:], kernel, stride, dilation, last)
    batch, c_in, c_out = x[0], x[1], grad[1]
    groups = c_in if op.type == "DepthwiseConv2dNativeBackpropFilter" else c_in // filt[ndim] if filt[ndim] else 1
    pads = tuple(
        (padding[i][0], _crop_to(x[2 + i], grad[2 + i], dilation[i], stride[i], padding[i][0], kernel[i]))
        for i in range(ndim)
    )
    attrs: dict[str, Any] = {"stride": dilation, "dilation": stride, "padding": pads}
    if groups > 1:
        attrs["batch_groups"] = groups
    return [
        ctx.op(
            op,
            "conv",
            (op.inputs[0], op.inputs[2]),
            attrs=attrs,
            input_shapes=((c_in, batch, *x[2:]), (c_out, batch, *grad[2:])),
            output_shape=(c_in // groups, c_out, *kernel),
        )
    ]
