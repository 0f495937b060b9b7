"""Table entries for PyTorch's convolutions and their backward.

Each builder turns one executed aten call into records of existing kinds, permuting
PyTorch's layouts into the ones the rules expect; the FLOP and byte arithmetic stays in
``neural_cost.costs``. Conventions beyond ARCHITECTURE.md, each stated where it is used:

- ``convolution_backward``: grad_input is a transposed conv of grad_output with the weight,
  grad_weight a conv of the input with grad_output (XLA's batch_group form for groups > 1),
  grad_bias a reduction. FlopCounterMode charges the weight gradient of a grouped conv
  ``groups`` times its work (its shape swap loses the group division; pytorch/pytorch#183405
  fixes that upstream): ours is the work, so for groups > 1 we report less.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .common import Ops, _arguments, _bias_record, _is_tensor, _per_dim, _record, _spec
from .table import EMPTY_REASONS, AtenCall, TorchContext, lowers

# --- convolution ------------------------------------------------------------------------


class _Conv(NamedTuple):
    x: Any
    weight: Any
    bias: Any
    stride: Any
    padding: Any
    dilation: Any
    transposed: bool
    output_padding: Any
    groups: int


def _full_conv(a: dict[str, Any]) -> _Conv:
    return _Conv(
        a["input"],
        a["weight"],
        a["bias"],
        a["stride"],
        a["padding"],
        a["dilation"],
        bool(a["transposed"]),
        a["output_padding"],
        int(a["groups"]),
    )


def _backend_conv(transposed: bool) -> Callable[[dict[str, Any]], _Conv]:
    def read(a: dict[str, Any]) -> _Conv:
        return _Conv(
            a["self"],
            a["weight"],
            a.get("bias"),
            a["stride"],
            a["padding"],
            a.get("dilation") or (1,),
            transposed,
            a.get("output_padding") or (0,),
            int(a.get("groups") or 1),
        )

    return read


_CONV_ARGS: dict[str, Callable[[dict[str, Any]], _Conv]] = {
    "convolution": _full_conv,
    "_convolution": _full_conv,
    "convolution_overrideable": _full_conv,
    "cudnn_convolution": _backend_conv(False),
    "cudnn_convolution_transpose": _backend_conv(True),
    "mkldnn_convolution": _backend_conv(False),
    "_slow_conv2d_forward": _backend_conv(False),
    "slow_conv3d": _backend_conv(False),
    "slow_conv_dilated2d": _backend_conv(False),
    "slow_conv_dilated3d": _backend_conv(False),
    "slow_conv_transpose2d": _backend_conv(True),
    "slow_conv_transpose3d": _backend_conv(True),
}


@lowers(*_CONV_ARGS)
def _convolution(call: AtenCall, ctx: TorchContext) -> Ops:
    """``conv`` in PyTorch's own layouts (x (N, C, *spatial); weight (C_out, C_in/groups,
    *k), transposed (C_in, C_out/groups, *k)): 2·output elements·(C_in/groups)·prod(k),
    transposed 2·N·prod(input spatial)·C_in·(C_out/groups)·prod(k) — FlopCounterMode's
    convolution count exactly. An unbatched input gets a batch of 1; the bias is
    ``<op>.bias``. (The backend entry points rarely reach dispatch; FlopCounterMode
    misreads two of them: it takes cudnn_convolution's ``groups`` for ``transposed``, and
    _slow_conv2d_forward, with six arguments, makes its formula raise.)"""
    conv = _CONV_ARGS[call.name](_arguments(call))
    x, weight, out = conv.x, conv.weight, call.out
    x_shape, out_shape = ctx.shape(x), ctx.shape(out)
    if len(x_shape) == len(weight.shape) - 1:  # unbatched
        x_shape, out_shape = (1, *x_shape), (1, *out_shape)
    ndim = len(x_shape) - 2
    attrs: dict[str, Any] = {
        "stride": _per_dim(conv.stride, ndim),
        "padding": _per_dim(conv.padding, ndim),
        "dilation": _per_dim(conv.dilation, ndim),
        "groups": conv.groups,
    }
    if conv.transposed:
        attrs["transposed"] = True
        attrs["output_padding"] = _per_dim(conv.output_padding, ndim)
    records = [
        _record(
            ctx,
            call.name,
            "conv",
            [(x_shape, ctx.dtype(x)), _spec(ctx, weight)],
            (out_shape, ctx.dtype(out)),
            attrs=attrs,
        )
    ]
    if conv.bias is not None:
        records.append(_bias_record(ctx, f"{call.name}.bias", out, conv.bias, len(ctx.shape(out)) - ndim - 1))
    return records


def _crop_to(size: int, kernel: int, stride: int, dilation: int, low: int, out: int) -> int:
    """The high padding (negative: a crop) that makes a conv of ``size`` elements with
    ``kernel`` taps produce exactly ``out`` outputs: the elements past the last window
    take no part in the gradient."""
    return stride * (out - 1) + dilation * (kernel - 1) + 1 - size - low


@lowers("convolution_backward")
def _convolution_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    output_padding, groups, output_mask) → the gradients the mask asks for, each the
    convolution that computes it:

    - grad_input: of a conv, the transposed conv of grad_output with the weight (output
      padding chosen to give the input's size); of a transposed conv, the conv of grad_output
      with the weight. Each costs what the forward does — FlopCounterMode's term exactly.
    - grad_weight: of a conv, the conv of the input (as (C_in, N, *spatial)) with
      grad_output (as (C_out, N, *out spatial)) for a kernel, stride and dilation swapped,
      ``batch_groups=groups``; of a transposed conv, the same with grad_output and the input
      exchanged. Each costs what the forward does. FlopCounterMode charges ``groups`` times
      that (its channel swap drops the group division; fixed upstream in
      pytorch/pytorch#183405): equal for groups = 1.
    - grad_bias: a ``reduce`` of grad_output over every dim but the channels (FlopCounterMode: 0).
    """
    a = _arguments(call)
    grad_out, x, weight = a["grad_output"], a["input"], a["weight"]
    mask = [bool(m) for m in a["output_mask"]]
    grad_input, grad_weight, grad_bias = [*call.out, None, None, None][:3]
    ndim = grad_out.dim() - 2
    stride, padding = _per_dim(a["stride"], ndim), _per_dim(a["padding"], ndim)
    dilation, groups = _per_dim(a["dilation"], ndim), int(a["groups"])
    transposed = bool(a["transposed"])
    g_shape, x_shape, kernel = ctx.shape(grad_out), ctx.shape(x), ctx.shape(weight)[2:]
    in_spatial, out_spatial = x_shape[2:], g_shape[2:]
    dtype = ctx.dtype(grad_out)
    records: Ops = []
    if mask[0] and _is_tensor(grad_input):
        attrs: dict[str, Any] = {"stride": stride, "dilation": dilation, "groups": groups}
        if transposed:
            output_padding = _per_dim(a["output_padding"], ndim)
            attrs["padding"] = tuple((p, p - o) for p, o in zip(padding, output_padding, strict=True))
        else:
            attrs["padding"] = padding
            attrs["transposed"] = True
            attrs["output_padding"] = tuple(
                in_spatial[i] - ((out_spatial[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + 1)
                for i in range(ndim)
            )
        records.append(
            _record(
                ctx,
                "convolution_backward.grad_input",
                "conv",
                [_spec(ctx, grad_out), _spec(ctx, weight)],
                _spec(ctx, grad_input),
                attrs=attrs,
            )
        )
    if mask[1] and _is_tensor(grad_weight):
        batch, c_in, c_out = x_shape[0], x_shape[1], g_shape[1]
        if transposed:  # grad_output's windows weighted by the input
            lhs, rhs = (c_out, batch, *out_spatial), (c_in, batch, *in_spatial)
            lhs_dtype, rhs_dtype, size, taps = dtype, ctx.dtype(x), out_spatial, in_spatial
            output = (c_out // groups, c_in, *kernel)
        else:  # the input's windows weighted by grad_output
            lhs, rhs = (c_in, batch, *in_spatial), (c_out, batch, *out_spatial)
            lhs_dtype, rhs_dtype, size, taps = ctx.dtype(x), dtype, in_spatial, out_spatial
            output = (c_in // groups, c_out, *kernel)
        pads = tuple(
            (padding[i], _crop_to(size[i], taps[i], dilation[i], stride[i], padding[i], kernel[i])) for i in range(ndim)
        )
        attrs = {"stride": dilation, "dilation": stride, "padding": pads}
        if groups > 1:
            attrs["batch_groups"] = groups
        records.append(
            _record(
                ctx,
                # a transposed layer's is named apart: the record's shapes alone read like a convolution's
                "convolution_backward.grad_weight" + ("_of_transposed" if transposed else ""),
                "conv",
                [(lhs, lhs_dtype), (rhs, rhs_dtype)],
                (output, ctx.dtype(grad_weight)),
                attrs=attrs,
            )
        )
    if mask[2] and _is_tensor(grad_bias):
        axes = (0, *range(2, grad_out.dim()))
        records.append(
            _record(
                ctx,
                "convolution_backward.grad_bias",
                "reduce",
                [_spec(ctx, grad_out)],
                _spec(ctx, grad_bias),
                attrs={"axes": axes},
            )
        )
    return records


EMPTY_REASONS["convolution_backward"] = "its output_mask asks for no gradient"
