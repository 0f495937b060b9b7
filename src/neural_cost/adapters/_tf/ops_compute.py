"""Table entries for TensorFlow's contractions, convolutions, pooling, norms, softmax,
reductions, gathers and scatters, scans, top-k and random ops.

Each builder turns one graph op into records of an existing kind; the arithmetic lives in
``neural_cost.costs``. What the builders decide (checked against graphs Keras 3 traces):

- ``MatMul`` is a ``matmul`` record with lax-style ``dimension_numbers`` (transpose_a/b say
  which dim is contracted). ``BatchMatMulV2/V3`` is numpy matmul with broadcast batch dims;
  adj_x/adj_y swap the last two dims of the recorded shape (same elements, same bytes).
- ``Einsum`` of two operands whose every letter is a batch letter (both inputs and the
  output), a contracted letter (both inputs, not the output) or a free letter (one input and
  the output) is a ``matmul`` with ``dimension_numbers``; its recorded output is in
  dot_general order (batch, lhs free, rhs free): the same elements as TensorFlow's, permuted.
  Any other equation (one or three operands, a letter summed out of one operand alone, a
  repeated letter, batch sizes that broadcast) raises ``UnmodeledOp``: the walker counts it
  as unmodeled, by name.
- Convolutions are ``conv`` records in the canonical layout (x (N, C, *spatial); weight
  (C_out, C_in/groups, *kernel), transposed (C_in, C_out/groups, *kernel)), from NHWC/NCHW
  (NDHWC/NCDHW) and HWIO filters. SAME padding is TensorFlow's: total = max((out-1)·stride +
  dilation·(k-1) + 1 - in, 0), the smaller half before. ``DepthwiseConv2dNative`` is
  groups = C with C·multiplier outputs. ``Conv2DBackpropInput``/``Conv3DBackpropInputV2``
  (the transposed conv Keras emits) take the forward conv's padding and the output_padding
  that makes the requested output size.
- ``FusedBatchNorm*`` always applies its scale and offset: ``batchnorm`` with affine=True.
- Reductions: axes from the Const reduction indices (omitted when not constant: the rule
  then checks only the element counts); ``Mean`` adds 1 divide per output.
- ``GatherV2`` of a 2-D table along axis 0 is an ``embedding`` record (Keras ``Embedding``),
  other gathers ``gather``; ``ResourceGather`` takes the variable's shape from the resource
  handle's shape data (the op reads the touched rows straight from the variable).
- Random ops are ``rng`` records with TensorFlow's Philox4x32-10, one 32-bit draw per
  element at least (64 for 64-bit types; half types also consume a 32-bit draw). Shaping
  the bits, per element: uniform 3 (mantissa bits | exponent, then - 1.0: shift, or,
  subtract), integer uniform 2 (modulo, add), normal 10 and 2 transcendentals (Box-Muller as
  in the torch table), truncated normal 11 and 2 (one more range compare; the ~4.6% of draws
  redrawn are not counted). ``StatelessRandomGetKeyCounter`` runs one Philox block to turn
  the seed into a key and counter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...core.errors import AdapterError
from ...core.records import Operation, Shape
from .table import TfContext, attr, constant_value, lowers


class UnmodeledOp(AdapterError):
    """A builder met a form of its op it cannot describe; the walker counts it as unmodeled."""


def const_ints(tensor: Any) -> tuple[int, ...] | None:
    """A Const integer tensor as a flat tuple, or None when it is not a constant."""
    value = constant_value(tensor)
    if value is None:
        return None
    return tuple(int(v) for v in value.reshape(-1))


# -- contractions ---------------------------------------------------------------------------


@lowers("MatMul")
def _matmul(op: Any, ctx: TfContext) -> Sequence[Operation]:
    lhs_contract = 0 if attr(op, "transpose_a", False) else 1
    rhs_contract = 1 if attr(op, "transpose_b", False) else 0
    numbers = ((lhs_contract,), (rhs_contract,)), ((), ())
    return [ctx.op(op, "matmul", attrs={"dimension_numbers": numbers})]


def _swap_last(shape: Shape, swap: bool) -> Shape:
    return (*shape[:-2], shape[-1], shape[-2]) if swap and len(shape) >= 2 else shape


@lowers("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def _batch_matmul(op: Any, ctx: TfContext) -> Sequence[Operation]:
    lhs, rhs = (ctx.shape(t) for t in op.inputs[:2])
    shapes = (_swap_last(lhs, bool(attr(op, "adj_x", False))), _swap_last(rhs, bool(attr(op, "adj_y", False))))
    return [ctx.op(op, "matmul", input_shapes=shapes)]


def _expand_ellipsis(term: str, count: int, fresh: str) -> str:
    """``term`` with its "..." replaced by ``count`` fresh letters, aligned right as numpy broadcasts."""
    return term.replace("...", fresh[len(fresh) - count :] if count else "")


@lowers("Einsum")
def _einsum(op: Any, ctx: TfContext) -> Sequence[Operation]:
    equation = str(attr(op, "equation", "")).replace(" ", "")
    shapes = [ctx.shape(t) for t in op.inputs]
    if "->" not in equation or len(shapes) != 2:
        raise UnmodeledOp(f"Einsum {equation!r}: only two-operand equations with an explicit output are modeled")
    sources, target = equation.split("->")
    terms = sources.split(",")
    fresh = "".join(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in equation)
    ellipsis = [len(shape) - (len(term) - 3) if "..." in term else 0 for term, shape in zip(terms, shapes, strict=True)]
    lhs, rhs = (_expand_ellipsis(term, count, fresh) for term, count in zip(terms, ellipsis, strict=True))
    target = _expand_ellipsis(target, max(ellipsis), fresh)
    sizes: dict[str, int] = {}
    for term, shape in ((lhs, shapes[0]), (rhs, shapes[1])):
        if len(term) != len(shape) or len(set(term)) != len(term):
            raise UnmodeledOp(f"Einsum {equation!r}: a repeated letter or a rank mismatch (shapes {shapes})")
        for letter, size in zip(term, shape, strict=True):
            if sizes.setdefault(letter, size) != size:
                raise UnmodeledOp(f"Einsum {equation!r}: letter {letter!r} broadcasts ({sizes[letter]} vs {size})")
    batch = [c for c in lhs if c in rhs and c in target]
    contract = [c for c in lhs if c in rhs and c not in target]
    summed = [c for c in lhs + rhs if c not in target and not (c in lhs and c in rhs)]
    if summed or any(c not in lhs and c not in rhs for c in target):
        raise UnmodeledOp(f"Einsum {equation!r}: a letter is summed out of one operand alone or appears from nowhere")
    numbers = (
        (tuple(lhs.index(c) for c in contract), tuple(rhs.index(c) for c in contract)),
        (tuple(lhs.index(c) for c in batch), tuple(rhs.index(c) for c in batch)),
    )
    out = tuple(sizes[c] for c in batch + [c for c in lhs if c not in rhs] + [c for c in rhs if c not in lhs])
    return [ctx.op(op, "matmul", attrs={"dimension_numbers": numbers}, output_shape=out)]


# -- convolution and pooling -----------------------------------------------------------------


def _channels_last(op: Any) -> bool:
    return not str(attr(op, "data_format", "NHWC")).startswith("NC")


def _canonical(shape: Shape, channels_last: bool) -> Shape:
    return (shape[0], shape[-1], *shape[1:-1]) if channels_last else shape


def _spatial(values: Sequence[int], channels_last: bool, ndim: int) -> tuple[int, ...]:
    """The spatial entries of a per-dim attribute written in the op's layout."""
    values = list(values)
    if len(values) != ndim + 2:
        values = [1] * (ndim + 2)
    return tuple(values[1:-1] if channels_last else values[2:])


def _same_padding(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    out = -(-size // stride)
    total = max((out - 1) * stride + dilation * (kernel - 1) + 1 - size, 0)
    return total // 2, total - total // 2


def _paddings(
    op: Any, sizes: Shape, kernel: Shape, stride: Shape, dilation: Shape, channels_last: bool
) -> tuple[tuple[int, int], ...]:
    """(low, high) per spatial dim for SAME, VALID or EXPLICIT padding, sizes being the input's."""
    mode = str(attr(op, "padding", "VALID"))
    ndim = len(sizes)
    if mode == "VALID":
        return ((0, 0),) * ndim
    if mode == "SAME":
        return tuple(_same_padding(sizes[i], kernel[i], stride[i], dilation[i]) for i in range(ndim))
    if mode == "EXPLICIT":
        flat = list(attr(op, "explicit_paddings", []))
        pairs = [(int(flat[2 * i]), int(flat[2 * i + 1])) for i in range(len(flat) // 2)]
        return tuple(pairs[1:-1] if channels_last else pairs[2:])
    raise UnmodeledOp(f"{op.type} with padding {mode!r}")


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


# -- reductions ------------------------------------------------------------------------------

_PER_OUTPUT = {"Mean": 1}


@lowers("Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin", "EuclideanNorm")
def _reduce(op: Any, ctx: TfContext) -> Sequence[Operation]:
    x = ctx.shape(op.inputs[0])
    attrs: dict[str, Any] = {}
    axes = const_ints(op.inputs[1])
    if axes is not None and all(-len(x) <= a < len(x) for a in axes):
        attrs["axes"] = axes
    if op.type == "EuclideanNorm":  # L squares and one root per output (sqrt of the sum of squares)
        length = math.prod(x) // max(math.prod(ctx.shape(op.outputs[0])), 1)
        attrs["flops_per_output"] = length + 1
        attrs["transcendentals_per_output"] = 1
    elif op.type in _PER_OUTPUT:
        attrs["flops_per_output"] = _PER_OUTPUT[op.type]
    return [ctx.op(op, "reduce", op.inputs[:1], attrs=attrs)]


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


# -- scans, top-k, random --------------------------------------------------------------------


@lowers("Cumsum", "Cumprod")
def _cumulative(op: Any, ctx: TfContext) -> Sequence[Operation]:
    axis = const_ints(op.inputs[1])
    if axis is None or len(axis) != 1:
        raise UnmodeledOp(f"{op.type} with an axis that is not a constant")
    return [ctx.op(op, "cumulative", op.inputs[:1], attrs={"axis": axis[0]})]


@lowers("TopKV2", "TopK")
def _top_k(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """``tf.sort``/``tf.argsort`` lower to TopKV2 with k = the row length: a full sort's count."""
    values = ctx.shape(op.outputs[0])
    return [ctx.op(op, "sort", op.inputs[:1], attrs={"axis": -1, "k": values[-1]}, extra_outputs=op.outputs[1:2])]


_RNG_SHAPING: dict[str, tuple[int, int]] = {
    # op type: (FLOPs, transcendentals) per element turning the bits into values
    "RandomUniform": (3, 0),
    "StatelessRandomUniform": (3, 0),
    "StatelessRandomUniformV2": (3, 0),
    "RandomUniformInt": (2, 0),
    "StatelessRandomUniformInt": (2, 0),
    "StatelessRandomUniformIntV2": (2, 0),
    "StatelessRandomUniformFullInt": (0, 0),
    "StatelessRandomUniformFullIntV2": (0, 0),
    "RandomStandardNormal": (10, 2),
    "StatelessRandomNormal": (10, 2),
    "StatelessRandomNormalV2": (10, 2),
    "TruncatedNormal": (11, 2),
    "StatelessTruncatedNormal": (11, 2),
    "StatelessTruncatedNormalV2": (11, 2),
}


@lowers(*_RNG_SHAPING)
def _random(op: Any, ctx: TfContext) -> Sequence[Operation]:
    flops, transcendentals = _RNG_SHAPING[op.type]
    out = op.outputs[0]
    attrs = {
        "generator": "philox4x32-10",
        "bits_per_element": max(32, out.dtype.size * 8),
        "flops_per_element": flops,
        "transcendentals_per_element": transcendentals,
    }
    return [ctx.op(op, "rng", (), attrs=attrs)]


@lowers("StatelessRandomGetKeyCounter")
def _key_counter(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """One Philox block (128 bits) hashes the seed into the key (1 word) and counter (2 words)."""
    attrs = {"generator": "philox4x32-10", "bits_per_element": 128}
    return [ctx.op(op, "rng", (), attrs=attrs, extra_outputs=op.outputs[1:2])]
