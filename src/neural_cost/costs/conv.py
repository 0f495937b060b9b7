"""Convolution (1-D/2-D/3-D, grouped, strided, dilated, transposed) and pooling.

Layouts are canonical: x is (N, C, *spatial); a convolution's weight is (C_out, C_in/groups,
*kernel), a transposed convolution's (C_in, C_out/groups, *kernel) as PyTorch stores it.
Adapters permute other layouts (NHWC, HWIO) into these before recording.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, get_args

from ..core.errors import RecordError, ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation
from .intmath import count_in_class, floor_sum
from .registry import (
    Expect,
    NonNegative,
    PerDim,
    Positive,
    cost_rule,
    default_cost,
    expect_inputs,
    expect_output,
    spatial,
    where,
)

#: A pair may be negative (XLA crops that many elements; JAX emits it in the weight gradient
#: of a strided convolution); a single int may not.
Padding = Annotated[
    NonNegative | tuple[NonNegative | tuple[int, int], ...],
    Expect("an integer >= 0, one per spatial dim, or a (low, high) pair per spatial dim"),
]


def _padding(op: Operation, value: Padding, ndim: int) -> tuple[tuple[int, int], ...]:
    """Padding as (low, high) per spatial dim."""
    if isinstance(value, int):
        return ((value, value),) * ndim
    if len(value) != ndim:
        raise RecordError(f"{where(op)} attrs['padding']={value!r} has {len(value)} entries for {ndim} spatial dims")
    return tuple((item, item) if isinstance(item, int) else item for item in value)


def _dilated(size: int, lhs_dilation: int) -> int:
    """The length of an input with lhs_dilation-1 holes between its elements."""
    return (size - 1) * lhs_dilation + 1 if size else 0


def _real_taps(size: int, kernel: int, lhs_dilation: int, stride: int, dilation: int, pad_low: int) -> int:
    """(input element, kernel tap) pairs of one spatial dim of an lhs-dilated conv whose tap
    lands on an output: element i sits at i·lhs_dilation, tap j reaches it from the output at
    (i·lhs_dilation + pad_low - j·dilation) / stride, so the pair runs when that divides.
    Outputs cropped away at the edges are not checked (the transposed convention, as
    FlopCounterMode counts conv_transpose): at stride 1 every pair runs, size·kernel.

    In closed form, never a loop over taps or elements (either may be huge in a saved report):
    with g = gcd(L, s), tap j has elements only when g | (j·D - p), i.e. j in one residue
    class j0 mod Q (Q = g / gcd(D, g)), T taps in all; tap j0 + t·Q then needs
    i ≡ r(t) = (α·t + β) mod P (P = s / g), and there are ⌈(size - r)/P⌉ such i. Summed over t,
    ⌊(size + P - 1 - r(t))/P⌋ = ⌊(α·t + β)/P⌋ + ⌊((P - α)·t + size + P - 1 - β)/P⌋ - t: two
    floor sums."""
    if stride == 1:
        return size * kernel
    common = math.gcd(lhs_dilation, stride)
    period = stride // common
    shared = math.gcd(dilation, common)
    tap_period = common // shared
    if pad_low % shared:
        return 0  # j·D - p is never a multiple of g
    first_tap = (pad_low // shared) * pow(dilation // shared, -1, tap_period) % tap_period if tap_period > 1 else 0
    taps = count_in_class(kernel, first_tap, tap_period)
    if taps == 0 or size == 0:
        return 0
    inverse = pow(lhs_dilation // common, -1, period) if period > 1 else 0
    slope = (tap_period * dilation // common) * inverse % period
    start = (first_tap * dilation - pad_low) // common * inverse % period
    return (
        floor_sum(taps, period, slope, start)
        + floor_sum(taps, period, period - slope, size + period - 1 - start)
        - taps * (taps - 1) // 2
    )


def _spatial_output(size: int, kernel: int, stride: int, pad: tuple[int, int], dilation: int, ceil: bool) -> int:
    span = dilation * (kernel - 1) + 1
    room = size + pad[0] + pad[1] - span
    if not ceil:
        return room // stride + 1 if room >= 0 else 0
    # ceil_mode (PyTorch's pooling_output_shape): rounded up — a window wider than the padded input
    # still gives one output (HF EfficientNet's hidden_dim-wide average pool, 2560 by default, over
    # 4×4 maps) — but the last window must start inside the input or the low padding, never wholly in
    # the high padding.
    out = -(-room // stride) + 1
    if out < 1:
        return 0
    return out - 1 if (out - 1) * stride >= size + pad[0] else out


@cost_rule(
    "conv",
    "2 · output elements · (C_in/groups) · prod(kernel) (every output position × the full kernel, as "
    "FlopCounterMode counts); transposed (attrs['transposed'], or any attrs['lhs_dilation'] > 1): "
    "2 · N · prod(input spatial) · C_in · (C_out/groups) · prod(kernel), with lhs_dilation only the taps that "
    "land on the stride's outputs; attrs['batch_groups'] splits the batch",
)
def conv(
    op: Operation,
    *,
    groups: Positive = 1,
    transposed: bool = False,
    stride: PerDim[Positive] = 1,
    dilation: PerDim[Positive] = 1,
    padding: Padding = 0,
    output_padding: PerDim[NonNegative] = 0,
    lhs_dilation: PerDim[Positive] = 1,
    batch_groups: Positive = 1,
) -> OpCost:
    """Convolution FLOPs count every output position times the whole kernel, padded taps
    included (PyTorch's convention; XLA counts only unpadded taps, so it reports less on
    padded convolutions). A bias is a separate elementwise record.

    XLA's general convolution is described with two more attributes. ``lhs_dilation`` (one
    per spatial dim) puts lhs_dilation-1 holes between input elements: that is how JAX writes
    a transposed convolution and the input gradient of a strided one, with the weight in the
    forward layout (C_out, C_in/groups, *kernel). Its FLOPs follow the transposed convention
    (only real taps, as FlopCounterMode counts a transposed conv), never the holes; with a
    window stride > 1 only the taps that land on an output (``_real_taps``). XLA counts the
    same real taps but also drops those of outputs cropped by the padding, so it can report less.
    ``batch_groups`` (XLA's batch_group_count, the weight gradient of a grouped or depthwise
    conv) splits the batch into that many groups, each convolved with its own C_out/batch_groups
    output channels: the output batch is N/batch_groups.
    """
    expect_inputs(op, 2, 2, "x (N, C_in, *spatial), weight; add the bias as its own record")
    x, weight = op.inputs
    ndim = len(x) - 2
    if ndim not in (1, 2, 3) or len(weight) != len(x):
        raise ShapeError(
            f"{where(op)} needs x (N, C, *spatial) and a weight of the same rank with 1 to 3 spatial dims; "
            f"got x {x}, weight {weight}"
        )
    strides = spatial(op, "stride", stride, ndim)
    dilations = spatial(op, "dilation", dilation, ndim)
    lhs_dilations = spatial(op, "lhs_dilation", lhs_dilation, ndim)
    pads = _padding(op, padding, ndim)
    batch, c_in = x[0], x[1]
    kernel = weight[2:]
    if c_in % groups:
        raise ShapeError(f"{where(op)}: input channels {c_in} are not divisible by groups={groups}")
    if transposed:
        if lhs_dilations != (1,) * ndim or batch_groups != 1:
            raise RecordError(
                f"{where(op)} is transposed=True and also has lhs_dilation/batch_groups; describe a transposed conv "
                f"one way: transposed=True with a (C_in, C_out/groups, *kernel) weight, or XLA's lhs_dilation"
            )
        if weight[0] != c_in:
            raise ShapeError(
                f"{where(op)}: a transposed conv's weight is (C_in, C_out/groups, *kernel); weight {weight} "
                f"does not start with C_in={c_in}"
            )
        c_out = weight[1] * groups
        extra = spatial(op, "output_padding", output_padding, ndim)
        sizes = tuple(
            (x[2 + i] - 1) * strides[i] - pads[i][0] - pads[i][1] + dilations[i] * (kernel[i] - 1) + extra[i] + 1
            for i in range(ndim)
        )
        expect_output(
            op, (batch, c_out, *sizes), "transposed conv: (in-1)·stride - pads + dilation·(k-1) + output_padding + 1"
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
        if batch % batch_groups or c_out % batch_groups:
            raise ShapeError(
                f"{where(op)}: batch {batch} and output channels {c_out} must both be divisible by "
                f"batch_groups={batch_groups}"
            )
        sizes = tuple(
            _spatial_output(_dilated(x[2 + i], lhs_dilations[i]), kernel[i], strides[i], pads[i], dilations[i], False)
            for i in range(ndim)
        )
        expect_output(
            op,
            (batch // batch_groups, c_out, *sizes),
            "conv: ((in-1)·lhs_dilation + 1 + pads - dilation·(k-1) - 1) // stride + 1; batch / batch_groups",
        )
        if any(d > 1 for d in lhs_dilations):
            # Transposed convention: every real input element times the kernel taps that land on
            # an output, and the output channels it feeds, (C_in/groups)·C_out; the holes are not work.
            taps = math.prod(
                _real_taps(x[2 + i], kernel[i], lhs_dilations[i], strides[i], dilations[i], pads[i][0])
                for i in range(ndim)
            )
            flops = 2 * batch * weight[1] * (c_out // batch_groups) * taps
        else:
            flops = 2 * math.prod(op.output) * weight[1] * math.prod(kernel)
    return default_cost(op, flops)


Kernel = Annotated[PerDim[Positive], Expect("the window size: an integer >= 1, or one per spatial dim")]


def _window(
    op: Operation,
    x: tuple[int, ...],
    kernel: Kernel,
    stride: PerDim[NonNegative] | None,
    dilation: PerDim[Positive],
    lhs_dilation: PerDim[Positive],
    padding: Padding,
    ceil: bool,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(window sizes, pooled shape) for a window reduction over x; a stride of 0 (or none)
    is the window size. A window wider than the padded input counts the taps that land in it."""
    ndim = len(kernel) if isinstance(kernel, tuple) else len(x) - 2
    if ndim < 1 or len(x) < ndim + 1:
        raise ShapeError(f"{where(op)}: x {x} has too few dims for a {ndim}-D window")
    window = spatial(op, "kernel", kernel, ndim)
    strides = window if stride is None else spatial(op, "stride", stride, ndim)
    strides = tuple(s or k for s, k in zip(strides, window, strict=True))
    dilations = spatial(op, "dilation", dilation, ndim)
    lhs_dilations = spatial(op, "lhs_dilation", lhs_dilation, ndim)
    pads = _padding(op, padding, ndim)
    lead = x[: len(x) - ndim]
    sizes = tuple(
        _spatial_output(
            _dilated(x[len(lead) + i], lhs_dilations[i]), window[i], strides[i], pads[i], dilations[i], ceil
        )
        for i in range(ndim)
    )
    # a window wider than the padded input (ceil_mode) reads the taps inside it only
    taps = tuple(
        min(window[i], (_dilated(x[len(lead) + i], lhs_dilations[i]) + sum(pads[i]) - 1) // dilations[i] + 1)
        for i in range(ndim)
    )
    return taps, lead + sizes


_POOLED_SIZE = (
    "(in + pads - dilation·(k-1) - 1) // stride + 1 per spatial dim (ceil_mode: rounded up, "
    "unless the last window would start in the high padding; lhs_dilation: in becomes (in-1)·lhs_dilation + 1)"
)
PoolingMode = Literal["max", "min", "avg", "sum"]
POOLING_MODES: tuple[str, ...] = get_args(PoolingMode)


@cost_rule(
    "pooling",
    "window reductions over x (N, C, *spatial): max/min count prod(kernel)-1 comparisons per output, "
    "sum prod(kernel)-1 adds, avg prod(kernel) (adds and one divide), a window wider than the padded input "
    "(ceil_mode) its taps inside it; a second input of x's shape "
    "(values picked at each max/min window's selected position) is read, not compared",
)
def pooling(
    op: Operation,
    *,
    kernel: Kernel,
    mode: PoolingMode = "max",
    stride: PerDim[NonNegative] | None = None,
    dilation: PerDim[Positive] = 1,
    lhs_dilation: PerDim[Positive] = 1,
    padding: Padding = 0,
    ceil_mode: bool = False,
) -> OpCost:
    """Every output counts the whole window, padded positions included (as for conv); a window wider
    than the padded input (PyTorch's ``ceil_mode``) counts the taps inside it.

    ``mode='sum'`` is a bare window sum (XLA's reduce_window_sum); an average pool written as
    a window sum then a divide is a sum record plus an elementwise record, k per output in all,
    the same as ``mode='avg'``. The optional second input is what JAX's select_and_gather_add
    reads: the windows are compared on x and the value at the winner is taken from it.
    """
    expect_inputs(op, 1, 2, "x[, values picked at the selected positions]")
    x = op.inputs[0]
    if len(op.inputs) == 2 and (op.inputs[1] != x or mode not in ("max", "min")):
        raise ShapeError(
            f"{where(op)}: a second input must have x's shape {x} and select by max or min; got {op.inputs[1]} "
            f"with mode={mode!r}"
        )
    sizes, pooled = _window(op, x, kernel, stride, dilation, lhs_dilation, padding, ceil_mode)
    expect_output(op, pooled, _POOLED_SIZE)
    window = math.prod(sizes)
    per_output = window if mode == "avg" else window - 1
    return default_cost(op, math.prod(op.output) * per_output)


@cost_rule(
    "pooling_backward",
    "gradient of max/min pooling, (grad (N, C, *pooled), x (N, C, *spatial)) → x's shape: per gradient "
    "element prod(kernel)-1 comparisons to find the window's winner and 1 add into it; the output is written whole",
)
def pooling_backward(
    op: Operation,
    *,
    kernel: Kernel,
    mode: Literal["max", "min"] = "max",
    stride: PerDim[NonNegative] | None = None,
    dilation: PerDim[Positive] = 1,
    lhs_dilation: PerDim[Positive] = 1,
    padding: Padding = 0,
    ceil_mode: bool = False,
) -> OpCost:
    """JAX's select_and_scatter_add: recompute each window's max (or min) from x, add the
    incoming gradient at that position. The output starts as zeros and is written in full;
    x and the gradient are each read once (windows that overlap re-read x from cache, not
    counted again)."""
    expect_inputs(op, 2, 2, "grad (N, C, *pooled), x (N, C, *spatial)")
    grad, x = op.inputs
    if ceil_mode:
        raise RecordError(f"{where(op)} does not take ceil_mode; give the padding that produced the pooled size")
    sizes, pooled = _window(op, x, kernel, stride, dilation, lhs_dilation, padding, False)
    if grad != pooled:
        raise ShapeError(
            f"{where(op)}: grad {grad} is not the pooled shape of x {x}: expected {pooled} ({_POOLED_SIZE})"
        )
    expect_output(op, x, "the gradient has x's shape")
    return default_cost(op, math.prod(grad) * math.prod(sizes))
