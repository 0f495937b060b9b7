"""Resampling: interpolation (resize/upsample), its gradient, and grid sampling.

Conventions, per output element (one value of one channel), the weights precomputed:

- A weighted sum of t values is t multiplies and t-1 adds: 2t-1 FLOPs. A separable
  stencil of t taps along each of d dims is evaluated as PyTorch's CPU and CUDA kernels do
  it, one dim at a time from the innermost: t^(d-1) sums of t along the last dim, then
  t^(d-2) of those along the next, ..., one along the first — (t^d-1)/(t-1) sums in all.
  linear (t=2) is 3·(2^d-1): linear 3, bilinear 9 (two lerps along the width, one along the
  height: 3 lerps × (2 multiplies + 1 add)), trilinear 21; bicubic (t=4, d=2) 5 sums × 7 = 35.
- nearest copies one input value: 0 FLOPs (the source index of each output coordinate is
  computed once per row or column, not per element; not counted).
- area averages the adaptive window [⌊i·n/m⌋, ⌈(i+1)·n/m⌉) of each output: a window's
  elements in adds and one divide, as ``adaptive_pooling`` counts it.
- The per-axis weights and indices (O(Σ output sizes) work) are not counted: they are
  computed per output coordinate along an axis and shared by every channel and row.
- antialias (PyTorch's ``_upsample_*_aa``): two separable passes, along the width then the
  height, each a weighted sum over the filter's support widened by the downscale factor:
  2·⌈(t/2)·max(in/out, 1)⌉+1 taps (PyTorch's ``max_interp_size``; the kernel loops over the
  taps inside the input, at most that: an upper bound at the borders).

Traffic: nearest reads the input elements it touches, min(in, out) along each spatial dim
(every source index is hit once its scale is ≤ 1; a downscale touches ``out`` of them); the
other modes read the whole input once (an upper bound for a strong downscale, where the
taps miss input rows). The output is written once.
"""

from __future__ import annotations

import math
from typing import Literal

from ..core.dtypes import dtype_info
from ..core.errors import ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation, Shape
from .intmath import adaptive_window_elements
from .registry import cost_rule, default_cost, expect_inputs, read_inputs, where

Mode = Literal["nearest", "linear", "bilinear", "trilinear", "bicubic", "area"]
#: Taps per spatial dim of each mode, and the number of spatial dims a named mode requires.
_TAPS: dict[str, int] = {"nearest": 1, "linear": 2, "bilinear": 2, "trilinear": 2, "bicubic": 4, "area": 0}
_DIMS: dict[str, int] = {"linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2}


def stencil_flops(taps: int, dims: int) -> int:
    """FLOPs of one output element of a separable stencil: (t^d-1)/(t-1) weighted sums of 2t-1."""
    if taps <= 1:
        return 0
    sums = (int(taps**dims) - 1) // (taps - 1)
    return sums * (2 * taps - 1)


def antialias_taps(taps: int, size_in: int, size_out: int) -> int:
    """PyTorch's ``max_interp_size``: 2·⌈support⌉+1, the support (t/2)·scale when downscaling,
    ⌈t·max(in, out) / (2·out)⌉ in integers (sizes beyond a float's range included)."""
    if not size_out:
        return 2 * -(-taps // 2) + 1
    return 2 * -(-taps * max(size_in, size_out) // (2 * size_out)) + 1


def _spatial(op: Operation, x: Shape, out: Shape, mode: str) -> tuple[Shape, Shape]:
    """(input spatial, output spatial) of x (N, C, *in) → (N, C, *out), checked against the mode."""
    if len(x) < 3 or len(out) != len(x) or out[:2] != x[:2]:
        raise ShapeError(
            f"{where(op)}: x {x} and the output {op.output} must be (N, C, *spatial) with the same N, C and rank"
        )
    dims = len(x) - 2
    if mode in _DIMS and dims != _DIMS[mode]:
        raise ShapeError(f"{where(op)}: mode {mode!r} resamples {_DIMS[mode]} spatial dims; x {x} has {dims}")
    return x[2:], out[2:]


@cost_rule(
    "interpolate",
    "x (N, C, *in) → (N, C, *out), per output element by attrs['mode']: nearest 0 (a copy), linear 3, "
    "bilinear 9, trilinear 21 (3 per lerp, 2^d-1 lerps), bicubic 35 (5 cubic sums of 7), area a window's "
    "elements (adaptive windows); attrs['antialias']: two separable passes over widened filters; nearest reads "
    "min(in, out) per dim, the others the whole input",
)
def interpolate(op: Operation, *, mode: Mode, antialias: bool = False) -> OpCost:
    """Resize/upsample (PyTorch ``upsample_*``, TensorFlow ``Resize*``). ``align_corners`` and
    the coordinate transform change the weights, not their number, so they are not attributes.
    The derivations are in the module docstring; the known inaccuracy is the uncounted per-axis
    weight computation and, for strong downscales, the traffic of untouched input rows."""
    expect_inputs(op, 1, 1, "x (N, C, *spatial)")
    x = op.inputs[0]
    size_in, size_out = _spatial(op, x, op.output, mode)
    channels = x[0] * x[1]
    outputs = math.prod(op.output)
    if mode == "area":
        windows = adaptive_window_elements(size_in, size_out)
        return default_cost(op, channels * windows)
    taps = _TAPS[mode]
    if antialias:
        if mode not in ("bilinear", "bicubic"):
            raise ShapeError(f"{where(op)}: attrs['antialias'] is for bilinear and bicubic, not {mode!r}")
        # pass 1 along the width: (N, C, H_in, W_out); pass 2 along the height: (N, C, H_out, W_out)
        (h_in, w_in), (h_out, w_out) = size_in, size_out
        width_taps, height_taps = antialias_taps(taps, w_in, w_out), antialias_taps(taps, h_in, h_out)
        flops = channels * (h_in * w_out * (2 * width_taps - 1) + h_out * w_out * (2 * height_taps - 1))
        return default_cost(op, flops)
    if mode == "nearest":
        touched = channels * math.prod(min(i, o) for i, o in zip(size_in, size_out, strict=True))
        read = dtype_info(op.input_dtype(0)).nbytes(touched)
        return OpCost({}, read, op.output_bytes)
    return default_cost(op, outputs * stencil_flops(taps, len(size_in)))


@cost_rule(
    "interpolate_backward",
    "grad (N, C, *out) → grad of x (N, C, *in): each output gradient times each of its taps' weights, added "
    "into the input gradient: 2·t^d per grad element (nearest 1 add; bilinear 8, trilinear 16, bicubic 32); "
    "area 2 per window element (a divide shared, an add); the input gradient is written whole",
)
def interpolate_backward(op: Operation, *, mode: Mode) -> OpCost:
    """The scatter-add a backward kernel runs (PyTorch's ``upsample_*_backward``): zeroing the
    input gradient is its write; the adds into it are counted per tap."""
    expect_inputs(op, 1, 1, "grad (N, C, *out)")
    grad = op.inputs[0]
    size_in, size_out = _spatial(op, op.output, grad, mode)
    grads = math.prod(grad)
    if mode == "area":
        channels = grad[0] * grad[1]
        windows = adaptive_window_elements(size_in, size_out)
        return default_cost(op, grads + channels * windows)  # one divide per grad, one add per window element
    taps = _TAPS[mode] ** len(size_in)
    return default_cost(op, grads if mode == "nearest" else 2 * taps * grads)


GridMode = Literal["nearest", "bilinear", "bicubic"]
#: Per point and spatial dim: unnormalising the coordinate, ((g + 1)·size - 1)/2, is 4 FLOPs.
_UNNORMALIZE = 4
#: Per point and dim, the bicubic weights: t = x - ⌊x⌋ (1), then PyTorch's four cubic-convolution
#: coefficients with A folded in: cc2(t+1) 1+6, cc1(t) 5, 1-t 1, cc1(1-t) 5, cc2(2-t) 1+6 = 25.
_CUBIC_WEIGHTS = 26


def grid_point_flops(mode: str, dims: int) -> int:
    """FLOPs per sampling point, shared by its channels: the coordinate and the tap weights.
    bilinear: per dim the fraction and its complement (2), then 2^d corner weights, each a
    product of d factors (d-1 multiplies)."""
    flops = _UNNORMALIZE * dims
    if mode == "bilinear":
        flops += 2 * dims + (1 << dims) * (dims - 1)
    elif mode == "bicubic":
        flops += _CUBIC_WEIGHTS * dims
    return flops


def grid_channel_flops(mode: str, dims: int) -> int:
    """FLOPs per sampling point and channel: nearest 0 (a copy); bilinear the 2^d weighted corner
    values summed (2·2^d - 1; its weights are per point); bicubic the separable stencil (35 in 2-D)."""
    if mode == "nearest":
        return 0
    if mode == "bilinear":
        return 2 * (1 << dims) - 1
    return stencil_flops(4, dims)


@cost_rule(
    "grid_sample",
    "x (N, C, *in), grid (N, *out, d) → (N, C, *out), by attrs['mode']: per point 4·d to unnormalise "
    "its coordinates, + bilinear 2·d + 2^d·(d-1) corner weights (2-D 16), bicubic 26·d; per point and channel "
    "bilinear 2·2^d - 1 (2-D 7), bicubic 35, nearest 0; reads the whole input and the grid",
)
def grid_sample(op: Operation, *, mode: GridMode = "bilinear") -> OpCost:
    """PyTorch's ``grid_sampler_2d``/``3d`` as its CPU kernel evaluates it: a point's weights
    are computed once and applied to every channel. Padding modes (border, reflection) clip
    or reflect the coordinate, a few comparisons per point, not counted. The input is counted
    as read once, whole: an upper bound when the grid samples a small part of it."""
    expect_inputs(op, 2, 2, "x (N, C, *in), grid (N, *out, d)")
    x, grid = op.inputs
    dims = len(x) - 2
    if dims not in (2, 3) or len(grid) != dims + 2 or grid[-1] != dims or grid[0] != x[0]:
        raise ShapeError(
            f"{where(op)}: x {x} must be (N, C, H, W) or (N, C, D, H, W) and grid {grid} (N, *out, {max(dims, 0)})"
        )
    if mode == "bicubic" and dims != 2:
        raise ShapeError(f"{where(op)}: bicubic grid sampling is 2-D; x {x} has {dims} spatial dims")
    out = (x[0], x[1], *grid[1:-1])
    if op.output != out:
        raise ShapeError(f"{where(op)} output={op.output} does not fit its inputs: expected {out}")
    points = math.prod(grid[:-1])
    flops = points * grid_point_flops(mode, dims) + points * x[1] * grid_channel_flops(mode, dims)
    return OpCost({op.compute_dtype: flops} if flops else {}, read_inputs(op), op.output_bytes)
