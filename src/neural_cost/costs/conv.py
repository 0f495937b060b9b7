"""Convolution (1-D/2-D/3-D, grouped, strided, dilated, transposed) and pooling.

Layouts are canonical: x is (N, C, *spatial); a convolution's weight is (C_out, C_in/groups,
*kernel), a transposed convolution's (C_in, C_out/groups, *kernel) as PyTorch stores it.
Adapters permute other layouts (NHWC, HWIO) into these before recording.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.errors import RecordError, ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation
from .registry import bool_attr, cost_rule, default_cost, expect_inputs, expect_output, int_attr, per_dim, where


def _padding(op: Operation, ndim: int) -> tuple[tuple[int, int], ...]:
    """Padding as (low, high) per spatial dim: an int, one int per dim, or (low, high) pairs."""
    value: Any = op.attrs.get("padding", 0)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise RecordError(f"{where(op)} attrs['padding']={value} must be >= 0")
        return ((value, value),) * ndim
    if isinstance(value, tuple) and len(value) == ndim:
        pads = []
        for item in value:
            if isinstance(item, int) and not isinstance(item, bool) and item >= 0:
                pads.append((item, item))
            elif (
                isinstance(item, tuple)
                and len(item) == 2
                and all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in item)
            ):
                pads.append((item[0], item[1]))
            else:
                break
        else:
            return tuple(pads)
    raise RecordError(
        f"{where(op)} attrs['padding']={value!r} must be an int, one int per spatial dim, or a (low, high) pair per dim"
    )


def _spatial_output(size: int, kernel: int, stride: int, pad: tuple[int, int], dilation: int, ceil: bool) -> int:
    span = dilation * (kernel - 1) + 1
    room = size + pad[0] + pad[1] - span
    if room < 0:
        return 0
    if not ceil:
        return room // stride + 1
    out = -(-room // stride) + 1
    # ceil_mode (PyTorch): the last window must start inside the input or the low padding,
    # never wholly in the high padding.
    return out - 1 if (out - 1) * stride >= size + pad[0] else out


@cost_rule(
    "conv",
    "2 · output elements · (C_in/groups) · prod(kernel) (every output position × the full kernel, as "
    "FlopCounterMode counts); transposed: 2 · N · prod(input spatial) · C_in · (C_out/groups) · prod(kernel)",
)
def conv(op: Operation) -> OpCost:
    """Convolution FLOPs count every output position times the whole kernel, padded taps
    included (PyTorch's convention; XLA counts only unpadded taps, so it reports less on
    padded convolutions). A bias is a separate elementwise record."""
    expect_inputs(op, 2, 2, "x (N, C_in, *spatial), weight; add the bias as its own record")
    x, weight = op.inputs
    ndim = len(x) - 2
    if ndim not in (1, 2, 3) or len(weight) != len(x):
        raise ShapeError(
            f"{where(op)} needs x (N, C, *spatial) and a weight of the same rank with 1 to 3 spatial dims; "
            f"got x {x}, weight {weight}"
        )
    groups = int_attr(op, "groups", 1, minimum=1)
    transposed = bool_attr(op, "transposed", False)
    stride = per_dim(op, "stride", 1, ndim, minimum=1)
    dilation = per_dim(op, "dilation", 1, ndim, minimum=1)
    padding = _padding(op, ndim)
    batch, c_in = x[0], x[1]
    kernel = weight[2:]
    if c_in % groups:
        raise ShapeError(f"{where(op)}: input channels {c_in} are not divisible by groups={groups}")
    if transposed:
        if weight[0] != c_in:
            raise ShapeError(
                f"{where(op)}: a transposed conv's weight is (C_in, C_out/groups, *kernel); weight {weight} "
                f"does not start with C_in={c_in}"
            )
        c_out = weight[1] * groups
        output_padding = per_dim(op, "output_padding", 0, ndim)
        spatial = tuple(
            (x[2 + i] - 1) * stride[i]
            - padding[i][0]
            - padding[i][1]
            + dilation[i] * (kernel[i] - 1)
            + output_padding[i]
            + 1
            for i in range(ndim)
        )
        expect_output(
            op, (batch, c_out, *spatial), "transposed conv: (in-1)·stride - pads + dilation·(k-1) + output_padding + 1"
        )
        flops = 2 * batch * math.prod(x[2:]) * c_in * weight[1] * math.prod(kernel)
    else:
        if weight[1] * groups != c_in:
            raise ShapeError(
                f"{where(op)}: weight {weight} expects {weight[1]} channels per group × groups={groups} = "
                f"{weight[1] * groups} input channels, but x {x} has {c_in}"
            )
        c_out = weight[0]
        if c_out % groups:
            raise ShapeError(f"{where(op)}: output channels {c_out} are not divisible by groups={groups}")
        spatial = tuple(
            _spatial_output(x[2 + i], kernel[i], stride[i], padding[i], dilation[i], False) for i in range(ndim)
        )
        expect_output(op, (batch, c_out, *spatial), "conv: (in + pads - dilation·(k-1) - 1) // stride + 1")
        flops = 2 * math.prod(op.output) * weight[1] * math.prod(kernel)
    return default_cost(op, flops)


@cost_rule(
    "pooling",
    "window reductions over x (N, C, *spatial): max counts prod(kernel)-1 comparisons per output, "
    "avg counts prod(kernel) (adds and one divide)",
)
def pooling(op: Operation) -> OpCost:
    expect_inputs(op, 1, 1, "x")
    (x,) = op.inputs
    kernel_value = op.attrs.get("kernel")
    if kernel_value is None:
        raise RecordError(f"{where(op)} needs attrs['kernel'] (window size per spatial dim)")
    ndim = len(kernel_value) if isinstance(kernel_value, tuple) else len(x) - 2
    if ndim < 1 or len(x) < ndim + 1:
        raise ShapeError(f"{where(op)}: x {x} has too few dims for a {ndim}-D window")
    kernel = per_dim(op, "kernel", 1, ndim, minimum=1)
    stride = per_dim(op, "stride", 0, ndim, minimum=0) if "stride" in op.attrs else kernel
    stride = tuple(s or k for s, k in zip(stride, kernel, strict=True))
    dilation = per_dim(op, "dilation", 1, ndim, minimum=1)
    padding = _padding(op, ndim)
    ceil = bool_attr(op, "ceil_mode", False)
    mode = op.attrs.get("mode", "max")
    if mode not in ("max", "avg"):
        raise RecordError(f"{where(op)} attrs['mode']={mode!r}; use 'max' or 'avg'")
    lead = x[: len(x) - ndim]
    spatial = tuple(
        _spatial_output(x[len(lead) + i], kernel[i], stride[i], padding[i], dilation[i], ceil) for i in range(ndim)
    )
    expect_output(
        op,
        lead + spatial,
        "(in + pads - dilation·(k-1) - 1) // stride + 1 per spatial dim (ceil_mode: rounded up, "
        "unless the last window would start in the high padding)",
    )
    window = math.prod(kernel)
    per_output = window - 1 if mode == "max" else window
    return default_cost(op, math.prod(op.output) * per_output)
