"""Normalisations: layer, RMS, group and batch norm, and their backward.

Counts per normalised row of L elements (stated once, used by every norm):
mean = L-1 adds + 1 divide = L; centre = L subtracts; variance = L squares + L-1 adds
+ 1 divide = 2L; rstd = 1 eps add + 1 rsqrt = 2 (1 transcendental); normalise = L
multiplies. Statistics and normalisation: 5L + 2. An affine weight adds L multiplies,
a bias L adds.

Backward, over E elements sharing P parameters: x̂ = (x-mean)·rstd recomputed, 2E (RMS:
x·rstd, E); grad_input = rstd·(g - mean(g) - x̂·mean(g·x̂)) with g = dy·γ: Σg and Σg·x̂ over
each row, two means, 4 per element = 7E (+E for g with a weight; RMS: 5E); grad_weight
Σ dy·x̂ = 2E - P; grad_bias Σ dy = E - P.
"""

from __future__ import annotations

import math
from typing import Literal

from ..core.errors import RecordError, ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation
from .registry import Positive, cost_rule, default_cost, expect_inputs, expect_output, where


def _stats_flops(rows: int, length: int) -> int:
    return rows * (5 * length + 2) if length else 0


def _affine_inputs(op: Operation, first: int, expected: tuple[int, ...], label: str) -> int:
    """Check optional per-feature inputs (weight, bias) and return how many there are."""
    extra = op.inputs[first:]
    for i, shape in enumerate(extra):
        if math.prod(shape) != math.prod(expected):
            raise ShapeError(
                f"{where(op)}: inputs[{first + i}] {shape} should hold one value per {label} ({math.prod(expected)})"
            )
    return len(extra)


@cost_rule("layernorm", "per row of L (attrs['normalized_dims'] trailing dims, default 1): 5L+2, + L per affine input")
def layernorm(op: Operation, *, normalized_dims: Positive = 1) -> OpCost:
    expect_inputs(op, 1, 3, "x[, weight[, bias]]")
    x = op.inputs[0]
    expect_output(op, x, "a norm keeps the input's shape")
    dims = normalized_dims
    if dims > len(x):
        raise ShapeError(f"{where(op)} attrs['normalized_dims']={dims} exceeds the rank of x {x}")
    length = math.prod(x[-dims:])
    rows = math.prod(x[:-dims])
    affine = _affine_inputs(op, 1, x[-dims:], "normalized feature")
    return default_cost(op, _stats_flops(rows, length) + affine * rows * length, rows)


@cost_rule("rmsnorm", "per row of L: 3L+2 (squares, sum, mean divide, eps add, rsqrt, scale), + L with a weight")
def rmsnorm(op: Operation, *, normalized_dims: Positive = 1) -> OpCost:
    expect_inputs(op, 1, 2, "x[, weight]")
    x = op.inputs[0]
    expect_output(op, x, "a norm keeps the input's shape")
    dims = normalized_dims
    if dims > len(x):
        raise ShapeError(f"{where(op)} attrs['normalized_dims']={dims} exceeds the rank of x {x}")
    length, rows = math.prod(x[-dims:]), math.prod(x[:-dims])
    affine = _affine_inputs(op, 1, x[-dims:], "normalized feature")
    flops = rows * (3 * length + 2) if length else 0
    return default_cost(op, flops + affine * rows * length, rows)


@cost_rule(
    "groupnorm",
    "x (N, C, *spatial) in attrs['groups'] groups: 5L+2 per (sample, group), + 1 per element per affine input",
)
def groupnorm(op: Operation, *, groups: Positive = 1) -> OpCost:
    expect_inputs(op, 1, 3, "x[, weight[, bias]]")
    x = op.inputs[0]
    expect_output(op, x, "a norm keeps the input's shape")
    if len(x) < 2:
        raise ShapeError(f"{where(op)} needs x (N, C, *spatial), got {x}")
    if x[1] % groups:
        raise ShapeError(f"{where(op)}: {x[1]} channels are not divisible by groups={groups}")
    rows = x[0] * groups
    length = math.prod(x) // rows if rows else 0
    affine = _affine_inputs(op, 1, (x[1],), "channel")
    return default_cost(op, _stats_flops(rows, length) + affine * math.prod(x), rows)


@cost_rule(
    "batchnorm",
    "x (N, C, *spatial): inference with a scale and shift (attrs['affine']) folds them per channel, "
    "scale = γ·rsqrt(var+eps), shift = β - mean·scale (5 per channel), then y = x·scale + shift (2 per "
    "element); inference without: 2 per element (subtract mean, scale by rstd) + 2 per channel; training "
    "(attrs['training']) 5L+2 per channel over L = N·spatial, + 4 per channel for running stats, + 2 per "
    "element with a scale and shift; 1 rsqrt per channel",
)
def batchnorm(op: Operation, *, affine: bool | None = None, training: bool = False) -> OpCost:
    """Inputs: x, then the per-channel tensors the kernel reads (running mean and variance,
    weight, bias) in any order. Whether a scale and shift are applied cannot be told from
    their count (``F.batch_norm(x, mean, var)`` also has three inputs), so ``attrs['affine']``
    must say so whenever there are per-channel inputs; with x alone it is False.

    Inference with a scale and shift is counted as PyTorch's CPU kernel and TensorFlow's
    ``FusedBatchNorm`` (Keras) evaluate it: the statistics and parameters folded once per
    channel (add eps, rsqrt, ·γ, mean·scale, β - that), then one multiply-add per element.
    A composite that normalises element by element (Flax's ``BatchNorm``) does more."""
    expect_inputs(op, 1, 5, "x[, weight, bias, running_mean, running_var]")
    x = op.inputs[0]
    expect_output(op, x, "a norm keeps the input's shape")
    if len(x) < 2:
        raise ShapeError(f"{where(op)} needs x (N, C, *spatial), got {x}")
    channels = x[1]
    _affine_inputs(op, 1, (channels,), "channel")
    if len(op.inputs) > 1 and affine is None:
        raise RecordError(
            f"{where(op)} has {len(op.inputs) - 1} per-channel inputs; say whether they include a scale and "
            f"shift with attrs['affine']=True or False"
        )
    elements = math.prod(x)
    length = elements // channels if channels else 0
    if training:
        flops = _stats_flops(channels, length) + 4 * channels + (2 * elements if affine else 0)
    elif affine:
        flops = 2 * elements + 5 * channels  # y = x·scale + shift; eps add, rsqrt, ·γ, mean·scale, β - it
    else:
        flops = 2 * elements + 2 * channels  # (x - mean)·rstd; eps add, rsqrt
    return default_cost(op, flops, channels)


Norm = Literal["layer", "rms", "group", "batch"]


def _sums(work: int, params: int) -> int:
    """A per-parameter gradient: ``work`` ops that end in P sums, work - P; none with no elements
    (E = 0 gives P empty sums, 0 ops, not -P)."""
    return max(work - params, 0)


def _norm_parameters(op: Operation, norm: Norm, x: tuple[int, ...], dims: int) -> int:
    """P: the values one parameter is shared over are E / P."""
    if norm in ("layer", "rms"):
        if dims > len(x):
            raise ShapeError(f"{where(op)} attrs['normalized_dims']={dims} exceeds the rank of x {x}")
        return math.prod(x[-dims:])
    if len(x) < 2:
        raise ShapeError(f"{where(op)} needs x (N, C, *spatial) for a {norm} norm, got {x}")
    return x[1]


@cost_rule(
    "norm_backward",
    "(dy, x, saved statistics and parameters read) → the gradients asked for (attrs['grad_input'], "
    "['grad_weight'], ['grad_bias'], default all): x̂ 2E (rms: E) when grad_input or grad_weight; grad_input "
    "7E (rms: 5E) + E with attrs['affine']; grad_weight 2E-P; grad_bias E-P (P per-feature parameters: "
    "attrs['normalized_dims'] trailing dims for layer/rms, channels for group/batch; attrs['norm']); "
    "batch norm in eval (attrs['training']=False): grad_input (1+affine)·E + 2C and C rsqrt",
)
def norm_backward(
    op: Operation,
    *,
    norm: Norm = "layer",
    grad_input: bool = True,
    grad_weight: bool = True,
    grad_bias: bool | None = None,
    affine: bool = False,
    training: bool = True,
    normalized_dims: Positive = 1,
) -> OpCost:
    """The backward of layer, RMS, group and batch norm (``attrs['norm']``), from the
    forward's statistics saved (mean, rstd; batch norm in eval reads the running ones).
    ``attrs['affine']`` says whether a weight γ scales the gradient (the bias is never read).
    Counted as the two-reduction formula above; a kernel that fuses the reductions of
    grad_input and grad_weight shares x̂ between them, as counted, but may recompute rstd
    (not counted). Instance norm is a group norm with one channel per group."""
    expect_inputs(op, 2, 7, "dy, x[, saved statistics, weight, running statistics]")
    dy, x = op.inputs[:2]
    if dy != x:
        raise ShapeError(f"{where(op)}: dy {dy} must have x's shape {x}")
    if grad_bias is None:
        grad_bias = norm != "rms"
    if norm == "rms" and grad_bias:
        raise RecordError(f"{where(op)}: an RMS norm has no bias; set attrs['grad_bias']=False")
    if grad_input:
        expect_output(op, x, "grad_input, the first gradient asked for, has x's shape")
    elements, params = math.prod(x), _norm_parameters(op, norm, x, normalized_dims)
    if norm == "batch" and not training:
        # eval: rstd from the running variance (+eps, rsqrt per channel); grad_input = dy·γ·rstd
        flops = 2 * params + (1 + affine) * elements if grad_input else 0
        if grad_weight:
            flops += 2 * elements + _sums(2 * elements, params)  # x̂, then Σ dy·x̂
        if grad_bias:
            flops += _sums(elements, params)
        return default_cost(op, flops, params if grad_input else 0)
    centred = norm != "rms"
    flops = 0
    if grad_input or grad_weight:
        flops += (2 if centred else 1) * elements
    if grad_input:
        flops += (7 if centred else 5) * elements + (elements if affine else 0)
    if grad_weight:
        flops += _sums(2 * elements, params)
    if grad_bias:
        flops += _sums(elements, params)
    return default_cost(op, flops)
