"""Table entries for PyTorch's contractions, convolutions, attention and recurrent kernels,
and its data movement: embedding, gather/scatter and indexing, copies, pads, sorts, scans.

Each builder turns one executed aten call into records of existing kinds, permuting
PyTorch's layouts into the ones the rules expect; the FLOP and byte arithmetic stays in
``neural_cost.costs``. Conventions beyond ARCHITECTURE.md, each stated where it is used:

- ``addmm``/``baddbmm``/``addmv``/``addbmm``: the product is a ``matmul`` record, exactly
  FlopCounterMode's count; ``beta·self + alpha·product`` is a separate ``elementwise``
  record ``<op>.bias``: 1 add, +1 multiply when beta ≠ 1, +1 when alpha ≠ 1 (none at all
  when beta = 0 and alpha = 1).
- ``convolution_backward``: grad_input is a transposed conv of grad_output with the weight,
  grad_weight a conv of the input with grad_output (XLA's batch_group form for groups > 1),
  grad_bias a reduction. FlopCounterMode charges the weight gradient of a grouped conv
  ``groups`` times its work (its shape swap loses the group division; pytorch/pytorch#183405
  fixes that upstream): ours is the work, so for groups > 1 we report less.
- Attention kernels: one ``attention`` record with q, k, v in (B, H, S, D); the flash,
  memory-efficient and cuDNN kernels skip fully masked blocks (``skips_masked``). Causal
  alignment follows the kernel: top-left for PyTorch's CPU flash, memory-efficient and cuDNN
  kernels, bottom-right for FlashAttention-2 (``_flash_attention_forward`` and the CUDA
  ``_scaled_dot_product_flash_attention``, which sdpa calls only with Sq = Sk, where the two
  agree). PyTorch's CPU flash kernel skips whole tiles (32-256 queries by 512 keys), not
  pairs: every pair of a tile the mask touches is computed (``causal_blocks``), so a causal
  sequence up to 512 long costs what a dense one does. ``dense_flops`` equals
  FlopCounterMode's sdpa count. Backward kernels are ``custom`` records: recompute S = QKᵀ,
  dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q, i.e. 2·B·Hq·pairs·(3D + 2Dv) FLOPs
  (FlopCounterMode's backward formula over all Sq·Sk pairs is our ``dense_flops``), one
  exponential per executed pair recomputed.
- Recurrent kernels (LSTM/GRU/RNN, mkldnn, cuDNN, fused cells): per layer and direction an
  input-projection ``matmul`` over all time steps at once, a hidden ``matmul`` per step
  (``count`` = the steps) and ``elementwise`` gate records per step; see ``_gate_records``.
- Scatters write only the touched elements; out-of-place forms first copy ``self``
  (a ``<op>.copy`` record), as the kernels do.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from ...core.records import Operation, Shape
from .table import EMPTY_REASONS, AtenCall, TorchContext, lowers

Ops = list[Operation]
Spec = tuple[Shape, str]  # a (shape, dtype) the builder has worked out, when no tensor has it


# --- helpers ----------------------------------------------------------------------------


def _spec(ctx: TorchContext, tensor: Any) -> Spec:
    return ctx.shape(tensor), ctx.dtype(tensor)


def _record(
    ctx: TorchContext,
    name: str,
    kind: str,
    inputs: Sequence[Spec],
    output: Spec,
    *,
    attrs: dict[str, Any] | None = None,
    extra: Sequence[Spec] = (),
    count: int = 1,
) -> Operation:
    """A record from (shape, dtype) pairs: for layouts a builder rearranged, and for work
    that runs ``count`` times within one call (a recurrent layer's time steps)."""
    return Operation(
        name,
        kind,
        tuple(shape for shape, _ in inputs),
        output[0],
        output[1],
        scope=ctx.scope,
        attrs=attrs or {},
        input_dtypes=tuple(dtype for _, dtype in inputs),
        extra_outputs=tuple(shape for shape, _ in extra),
        extra_output_dtypes=tuple(dtype for _, dtype in extra) if extra else None,
        count=count,
    )


_SCHEMAS: dict[Any, tuple[tuple[str, Any], ...]] = {}


def _arguments(call: AtenCall) -> dict[str, Any]:
    """Every argument of the call by its schema name, defaults filled in: robust to
    keyword-only arguments and to overloads that number their arguments differently."""
    schema = _SCHEMAS.get(call.func)
    if schema is None:
        schema = tuple(
            (a.name, a.default_value if a.has_default_value() else None) for a in call.func._schema.arguments
        )
        _SCHEMAS[call.func] = schema
    values: dict[str, Any] = {}
    for i, (name, default) in enumerate(schema):
        if i < len(call.args):
            values[name] = call.args[i]
        else:
            values[name] = call.kwargs.get(name, default)
    return values


def _is_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor)


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _per_dim(values: Any, ndim: int) -> tuple[int, ...]:
    """A per-spatial-dim parameter; aten accepts one value for every dim."""
    ints = _ints(values)
    return ints * ndim if len(ints) == 1 and ndim > 1 else ints


def _broadcasts(shape: Shape, target: Shape) -> bool:
    if len(shape) > len(target):
        return False
    offset = len(target) - len(shape)
    return all(d == 1 or d == target[offset + i] for i, d in enumerate(shape))


def _broadcast_elements(shapes: Sequence[Shape]) -> int:
    """Elements of the shape ``shapes`` broadcast to (they are known to broadcast)."""
    rank = max((len(s) for s in shapes), default=0)
    total = 1
    for axis in range(rank):
        sizes = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0} - {1}
        total *= sizes.pop() if sizes else 1
    return total


def _nonzero_count(mask: Any) -> int:
    """How many elements of a boolean mask are set; its size when the values cannot be read
    (meta or fake tensors): an upper bound."""
    try:
        return int(torch.count_nonzero(mask))
    except (RuntimeError, NotImplementedError):
        return int(mask.numel())


# --- matrix products --------------------------------------------------------------------


@lowers("mm", "bmm", "mv", "dot", "vdot", "matmul")
def _product(call: AtenCall, ctx: TorchContext) -> Ops:
    """``matmul`` with numpy semantics: mm (M,K)@(K,N), bmm (B,M,K)@(B,K,N), mv (M,K)@(K,),
    dot (K,)@(K,): 2·output elements·K, FlopCounterMode's mm/bmm count exactly (it has no
    formula for mv and dot: 0). The ``.dtype`` overloads write another output type; the
    FLOPs are charged to the inputs' type. (``matmul`` itself normally decomposes.)"""
    return [ctx.op(call, "matmul", [call.args[0], call.args[1]], call.out)]


def _scale_and_bias(call: AtenCall, ctx: TorchContext, product: Operation, bias: Any) -> Operation | None:
    """``beta·bias + alpha·product`` as its own elementwise record: 1 add, +1 multiply when
    beta ≠ 1, +1 when alpha ≠ 1. beta = 0 ignores the bias (PyTorch does not read it); with
    alpha = 1 too there is nothing left to do."""
    beta = call.kwargs.get("beta", 1)
    alpha = call.kwargs.get("alpha", 1)
    inputs: list[Spec] = [(product.output, product.dtype)]
    flops = 0 if alpha == 1 else 1
    if beta != 0:
        inputs.append(_spec(ctx, bias))
        flops += 1 if beta == 1 else 2
    if flops == 0:
        return None
    return _record(
        ctx,
        f"{call.name}.bias",
        "elementwise",
        inputs,
        _spec(ctx, call.out),
        attrs={"op": "add", "flops_per_element": flops},
    )


@lowers("addmm", "addmm_", "baddbmm", "baddbmm_", "addmv", "addmv_", "addbmm", "addbmm_")
def _product_plus(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, a, b, beta, alpha): the product as ``matmul`` — exactly FlopCounterMode's
    addmm/baddbmm count, which leaves the bias out — then ``<op>.bias``. addbmm sums the
    batch of products into one (M, N): a contraction over the batch and K together,
    2·M·N·B·K FLOPs (the batch sum is the accumulation)."""
    bias, a, b = call.args[:3]
    attrs = {"dimension_numbers": (((0, 2), (0, 1)), ((), ()))} if call.name.startswith("addbmm") else None
    product = ctx.op(call, "matmul", [a, b], call.out, attrs=attrs)
    scaled = _scale_and_bias(call, ctx, product, bias)
    return [product] if scaled is None else [product, scaled]


def _bias_record(ctx: TorchContext, name: str, out: Any, bias: Any, channel_dim: int) -> Operation:
    """An elementwise bias add over ``out``, the bias laid along ``channel_dim``."""
    out_shape = ctx.shape(out)
    shape = tuple(int(bias.numel()) if d == channel_dim else 1 for d in range(channel_dim, len(out_shape)))
    return _record(
        ctx,
        name,
        "elementwise",
        [(out_shape, ctx.dtype(out)), (shape, ctx.dtype(bias))],
        _spec(ctx, out),
        attrs={"op": "add"},
    )


@lowers("linear")
def _linear(call: AtenCall, ctx: TorchContext) -> Ops:
    """(input, weight (N, K), bias): ``linear`` (normally linear decomposes to addmm before
    dispatch), the bias a separate record."""
    x, weight = call.args[:2]
    bias = call.arg(2, "bias")
    records = [ctx.op(call, "linear", [x, weight], call.out, attrs={"weight_layout": "out_in"})]
    if bias is not None:
        records.append(_bias_record(ctx, "linear.bias", call.out, bias, call.out.dim() - 1))
    return records


@lowers("_scaled_mm")
def _scaled_mm(call: AtenCall, ctx: TorchContext) -> Ops:
    """fp8 (a, b, scale_a, scale_b, bias, scale_result, out_dtype): ``matmul`` charged to the
    fp8 inputs (FlopCounterMode's count exactly), then the dequantisation as ``custom`` work:
    2 multiplies per output element (by scale_a and scale_b), +1 with a bias, +1 with
    scale_result; the scales (any blocking) are read once."""
    a = _arguments(call)
    out = call.out
    product = ctx.op(call, "matmul", [a["self"], a["mat2"]], out)
    extras = [t for t in (a["scale_a"], a["scale_b"], a["bias"], a["scale_result"]) if _is_tensor(t)]
    per_element = 2 + sum(1 for t in (a["bias"], a["scale_result"]) if _is_tensor(t))
    scale = _record(
        ctx,
        "_scaled_mm.scale",
        "custom",
        [(product.output, product.dtype), *(_spec(ctx, t) for t in extras)],
        _spec(ctx, out),
        attrs={"flops": per_element * int(out.numel())},
    )
    return [product, scale]


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
                "convolution_backward.grad_weight",
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


# --- fused attention --------------------------------------------------------------------


class _Kernel(NamedTuple):
    """How to read one attention kernel's arguments."""

    layout: str  # "bhsd" (batch, heads, seq, dim) or "bshd" (batch, seq, heads, dim)
    alignment: str  # of its causal mask
    skips: bool  # skips fully masked blocks
    mask: str | None  # the argument holding an additive mask / bias
    varlen: tuple[str, str, str, str] | None = None  # cumulative offsets q, k; max lengths q, k
    grad: str = "grad_out"
    blocks: bool = False  # skips masked tiles of _cpu_flash_blocks, not single pairs


_FLASH_VARLEN = ("cum_seq_q", "cum_seq_k", "max_q", "max_k")
_EFFICIENT_VARLEN = ("cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q", "max_seqlen_k")

_FORWARD_KERNELS = {
    "_scaled_dot_product_flash_attention_for_cpu": _Kernel("bhsd", "top_left", True, "attn_mask", blocks=True),
    "_scaled_dot_product_flash_attention": _Kernel("bhsd", "bottom_right", True, None),
    "_scaled_dot_product_efficient_attention": _Kernel("bhsd", "top_left", True, "attn_bias"),
    "_scaled_dot_product_cudnn_attention": _Kernel("bhsd", "top_left", True, "attn_bias"),
    # an out-of-tree backend's kernel: whether it skips masked blocks is unknown, so it is dense
    "_scaled_dot_product_fused_attention_overrideable": _Kernel("bhsd", "top_left", False, "attn_bias"),
    "_flash_attention_forward": _Kernel("bshd", "bottom_right", True, None, _FLASH_VARLEN),
    "_efficient_attention_forward": _Kernel("bshd", "top_left", True, "bias", _EFFICIENT_VARLEN),
}

_BACKWARD_KERNELS = {
    "_scaled_dot_product_flash_attention_for_cpu_backward": _Kernel("bhsd", "top_left", True, "attn_mask", blocks=True),
    "_scaled_dot_product_flash_attention_backward": _Kernel("bhsd", "bottom_right", True, None),
    "_scaled_dot_product_efficient_attention_backward": _Kernel(
        "bhsd", "top_left", True, "attn_bias", grad="grad_out_"
    ),
    "_scaled_dot_product_cudnn_attention_backward": _Kernel("bhsd", "top_left", True, "attn_bias"),
    "_scaled_dot_product_fused_attention_overrideable_backward": _Kernel("bhsd", "top_left", False, "attn_bias"),
    "_flash_attention_backward": _Kernel("bshd", "bottom_right", True, None, _FLASH_VARLEN),
    "_efficient_attention_backward": _Kernel("bshd", "top_left", True, "bias", _EFFICIENT_VARLEN, "grad_out_"),
}


def _bhsd(shape: Shape, layout: str) -> Shape:
    return (shape[0], shape[2], shape[1], shape[3]) if layout == "bshd" and len(shape) == 4 else shape


def _cpu_flash_blocks(q_len: int) -> tuple[int, int]:
    """PyTorch's CPU flash kernel (forward and backward) works in tiles of q_split queries by
    512 keys, q_split 256 from 768 queries, 64 from 192, else 32 (FlashAttentionKernel.cpp);
    causal, it skips the tiles past the diagonal but computes every pair of the others."""
    return (256 if q_len >= 768 else 64 if q_len >= 192 else 32), 512


def _attention_attrs(a: dict[str, Any], kernel: _Kernel) -> dict[str, Any]:
    """causal (and its alignment) from ``is_causal``, or the memory-efficient kernel's
    ``custom_mask_type`` (1: causal from the top left, 2: from the bottom right); a sliding
    window or dropout is kept visible (the rule counts every causal pair, an upper bound
    with a window; dropout's random numbers are not counted)."""
    if "custom_mask_type" in a:
        mask_type = int(a["custom_mask_type"] or 0)
        causal, alignment = mask_type != 0, "bottom_right" if mask_type == 2 else "top_left"
    else:
        causal, alignment = bool(a.get("is_causal") or False), kernel.alignment
    attrs: dict[str, Any] = {"causal": causal, "skips_masked": kernel.skips}
    if causal:
        attrs["causal_alignment"] = alignment
        if kernel.blocks:
            attrs["causal_blocks"] = _cpu_flash_blocks(int(a["query"].shape[2]))
    window = [a.get(n) for n in ("window_size", "window_size_left", "window_size_right")]
    if any(w is not None and int(w) >= 0 for w in window):
        attrs["window"] = tuple(-1 if w is None else int(w) for w in window)
    dropout = float(a.get("dropout_p") or 0.0)
    if dropout:
        attrs["dropout_p"] = dropout
    return attrs


def _mask_spec(ctx: TorchContext, mask: Any, scores: Shape) -> Spec | None:
    """An additive mask or bias as the kernel reads it: any shape broadcasting to the scores
    (B, H, Sq, Sk); a 3-D (B, Sq, Sk) one gains a head dim."""
    if not _is_tensor(mask) or mask.numel() == 0:
        return None
    shape, dtype = _spec(ctx, mask)
    if _broadcasts(shape, scores):
        return shape, dtype
    if len(shape) == 3 and _broadcasts((shape[0], 1, shape[1], shape[2]), scores):
        return (shape[0], 1, shape[1], shape[2]), dtype
    return None


def _lengths(offsets: Any, maximum: Any) -> tuple[list[int], bool]:
    """Per-sequence lengths from cumulative offsets, and whether they are exact; for
    offsets whose values cannot be read, every sequence at the maximum (an upper bound, as
    FlopCounterMode assumes for fake tensors)."""
    try:
        values = [int(v) for v in offsets.tolist()]
    except (RuntimeError, NotImplementedError):
        return [int(maximum)] * (int(offsets.numel()) - 1), False
    return [b - a for a, b in itertools.pairwise(values)], True


Group = tuple[Spec, Spec, Spec, int]


def _varlen(a: dict[str, Any], kernel: _Kernel) -> bool:
    """Variable-length (nested) inputs: (total, H, D) with cumulative offsets."""
    return kernel.varlen is not None and a.get(kernel.varlen[0]) is not None and a["query"].dim() == 3


def _attention_groups(ctx: TorchContext, a: dict[str, Any], kernel: _Kernel) -> tuple[list[Group], bool]:
    """(q, k, v) specs in (B, H, S, D) with how many times each occurs, and whether exact.

    Dense inputs are one group; variable-length inputs one group per distinct (query
    length, key length), batch 1."""
    q_spec, k_spec, v_spec = _spec(ctx, a["query"]), _spec(ctx, a["key"]), _spec(ctx, a["value"])
    offsets = kernel.varlen
    if offsets is None or not _varlen(a, kernel):
        specs = [(_bhsd(s, kernel.layout), d) for s, d in (q_spec, k_spec, v_spec)]
        if _is_tensor(a.get("block_table")):  # paged k, v (blocks, block size, H, D): max_k keys per sequence
            batch, length = specs[0][0][0], int(a["max_k"])
            specs[1:] = [((batch, s[1], length, s[3]), d) for s, d in specs[1:]]
        return [(specs[0], specs[1], specs[2], 1)], True
    q_lengths, q_exact = _lengths(a[offsets[0]], a[offsets[2]])
    k_lengths, k_exact = _lengths(a[offsets[1]], a[offsets[3]])
    heads_q, dim = q_spec[0][1:]
    heads_k, value_dim = k_spec[0][1], v_spec[0][2]
    groups: list[Group] = []
    for (sq, sk), n in sorted(Counter(zip(q_lengths, k_lengths, strict=True)).items()):
        groups.append(
            (
                ((1, heads_q, sq, dim), q_spec[1]),
                ((1, heads_k, sk, dim), k_spec[1]),
                ((1, heads_k, sk, value_dim), v_spec[1]),
                n,
            )
        )
    return groups, q_exact and k_exact


for _name, _kernel in {**_FORWARD_KERNELS, **_BACKWARD_KERNELS}.items():
    if _kernel.varlen is not None:
        EMPTY_REASONS[_name] = "a variable-length batch of no sequences: nothing to attend"


@lowers(*_FORWARD_KERNELS)
def _fused_attention(call: AtenCall, ctx: TorchContext) -> Ops:
    """``attention`` over (B, H, S, D) — the CPU flash kernel supports grouped-query heads
    (k, v with fewer heads) — reading the mask or bias when one is given and writing the
    output and the log-sum-exp statistics. Dense FLOPs are FlopCounterMode's sdpa count;
    for ``_flash_attention_forward``/``_efficient_attention_forward`` on dense (B, S, H, D)
    inputs FlopCounterMode reads heads as the sequence (pytorch/pytorch#184348, #196132),
    so the two agree only when S = H. Variable-length inputs: one record per distinct pair
    of lengths (``count`` sequences), as FlopCounterMode sums per sequence."""
    kernel = _FORWARD_KERNELS[call.name]
    a = _arguments(call)
    attrs = _attention_attrs(a, kernel)
    out, *rest = call.outputs
    groups, exact = _attention_groups(ctx, a, kernel)
    if not exact:
        attrs["varlen_upper_bound"] = True
    if _varlen(a, kernel):
        out_dtype = ctx.dtype(out)
        return [
            _record(ctx, call.name, "attention", [q, k, v], ((*q[0][:3], v[0][3]), out_dtype), attrs=attrs, count=n)
            for q, k, v, n in groups
        ]
    q, k, v, _ = groups[0]
    inputs = [q, k, v]
    mask = _mask_spec(ctx, a.get(kernel.mask) if kernel.mask else None, (*q[0][:3], k[0][2]))
    if mask is not None:
        inputs.append(mask)
    statistics = [_spec(ctx, t) for t in rest[:1] if t.numel() > 0]  # the log-sum-exp
    output = (_bhsd(ctx.shape(out), kernel.layout), ctx.dtype(out))
    return [_record(ctx, call.name, "attention", inputs, output, attrs=attrs, extra=statistics)]


def _backward_record(
    ctx: TorchContext,
    name: str,
    qkv: tuple[Spec, Spec, Spec],
    reads: Sequence[Spec],
    grads: Sequence[Spec],
    attrs: dict[str, Any],
    count: int = 1,
) -> Operation:
    """The backward of a flash-style kernel as ``custom`` work derived from the forward's
    count on the same shapes (the attention rule counts the executed query-key pairs P):
    recompute S = QKᵀ (P·D multiply-adds), dV = Pᵀ·dO (P·Dv), dP = dO·Vᵀ (P·Dv), dQ = dS·K
    (P·D), dK = dSᵀ·Q (P·D): 2·P·(3D + 2Dv) FLOPs per head against the forward's
    2·P·(D + Dv), and P exponentials recomputed. ``dense_flops`` is the same over every pair:
    FlopCounterMode's sdpa backward formula."""
    q, k, v = qkv
    forward = Operation(f"{name}.forward", "attention", (q[0], k[0], v[0]), (*q[0][:3], v[0][3]), q[1], attrs=attrs)
    head_dim, value_dim = q[0][3], v[0][3]
    per_pair, backward = head_dim + value_dim, 3 * head_dim + 2 * value_dim
    cost = forward.cost
    flops = cost.flops // per_pair * backward if per_pair else 0
    dense = (cost.dense_flops or 0) // per_pair * backward if per_pair else 0
    custom = {**attrs, "flops": flops, "dense_flops": dense, "transcendentals": cost.transcendentals}
    return _record(ctx, name, "custom", [*reads, q, k, v], grads[0], attrs=custom, extra=grads[1:], count=count)


@lowers(*_BACKWARD_KERNELS)
def _fused_attention_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """(grad_out, q, k, v, [bias], out, logsumexp, ...) → (dq, dk, dv[, dbias]): one
    ``custom`` record (see ``_backward_record``) reading grad_out, out, the log-sum-exp, the
    mask if any, q, k and v, and writing the gradients."""
    kernel = _BACKWARD_KERNELS[call.name]
    a = _arguments(call)
    attrs = _attention_attrs(a, kernel)
    groups, exact = _attention_groups(ctx, a, kernel)
    if not exact:
        attrs["varlen_upper_bound"] = True
    if _varlen(a, kernel):
        # per sequence: grad_out and out (1, H, Sq, Dv) read, dq, dk, dv of its q, k, v written
        grad_dtype = ctx.dtype(a[kernel.grad])
        records = []
        for q, k, v, n in groups:
            seq_out = ((*q[0][:3], v[0][3]), grad_dtype)
            records.append(_backward_record(ctx, call.name, (q, k, v), [seq_out, seq_out], [q, k, v], attrs, n))
        return records
    q, k, v, _ = groups[0]
    reads = [_spec(ctx, t) for t in (a[kernel.grad], a["out"], a["logsumexp"]) if _is_tensor(t)]
    mask = _mask_spec(ctx, a.get(kernel.mask) if kernel.mask else None, (*q[0][:3], k[0][2]))
    if mask is not None:
        reads.append(mask)
    grads = [_spec(ctx, t) for t in call.outputs if t.numel() > 0]
    return [_backward_record(ctx, call.name, (q, k, v), reads, grads, attrs)]


@lowers("_scaled_dot_product_attention_math")
def _attention_math(call: AtenCall, ctx: TorchContext) -> Ops:
    """The math fallback, when it reaches dispatch whole (it normally decomposes): it
    materialises the scores, so it is the chain it runs — q·kᵀ ``matmul``, the mask or
    causal mask added (``elementwise``), ``softmax``, then ·v — every query-key pair
    computed, masked ones included. Grouped-query k and v are read at the query's head
    count (the math path repeats them)."""
    a = _arguments(call)
    q, k, v = a["query"], a["key"], a["value"]
    (q_shape, dtype), k_shape, v_shape = _spec(ctx, q), ctx.shape(k), ctx.shape(v)
    lead = q_shape[:-2]
    scores: Spec = ((*lead, q_shape[-2], k_shape[-2]), dtype)
    key_t: Spec = ((*lead, k_shape[-1], k_shape[-2]), ctx.dtype(k))
    values: Spec = ((*lead, v_shape[-2], v_shape[-1]), ctx.dtype(v))
    out, *_ = call.outputs
    records = [_record(ctx, f"{call.name}.scores", "matmul", [_spec(ctx, q), key_t], scores)]
    mask = a.get("attn_mask")
    if _is_tensor(mask) or a.get("is_causal"):
        masks = [_spec(ctx, mask)] if _is_tensor(mask) else [(scores[0][-2:], dtype)]
        records.append(_record(ctx, f"{call.name}.mask", "elementwise", [scores, *masks], scores, attrs={"op": "add"}))
    records.append(_record(ctx, f"{call.name}.softmax", "softmax", [scores], scores, attrs={"axis": -1}))
    records.append(_record(ctx, call.name, "matmul", [scores, values], _spec(ctx, out)))
    return records


def _matmul(ctx: TorchContext, name: str, lhs: Spec, rhs: Spec, out: Spec, count: int = 1) -> Operation:
    return _record(ctx, name, "matmul", [lhs, rhs], out, count=count)


def _mha(
    ctx: TorchContext,
    name: str,
    a: dict[str, Any],
    query: Any,
    key: Any,
    value: Any,
    out: Spec,
    *,
    need_weights: bool,
) -> Ops:
    """PyTorch's native multi-head attention kernel (the nn.MultiheadAttention fast path),
    as it runs on the CPU: the q, k, v projections (one (D, 3D) product for self-attention,
    (D, D) and (D, 2D) when key is value, three (D, D) otherwise, then a concatenation);
    bias add and 1/√d scaling of q as ``custom`` work (3D adds + D multiplies per row);
    the scores (B, H, T, T) materialised by a ``matmul``, a mask applied (``elementwise``),
    ``softmax``, the ``matmul`` with v, the output projection and its bias; averaging the
    weights over heads when they are returned (``reduce``, one divide per output)."""
    batch, length, embed = ctx.shape(query)
    dtype = ctx.dtype(query)
    heads = int(a["num_head"] if "num_head" in a else a["num_heads"])
    head_dim = embed // heads

    def spec(*shape: int) -> Spec:
        return tuple(shape), dtype

    rows = spec(batch, length, embed)
    records: Ops = []
    if query is key and key is value:
        records.append(_matmul(ctx, f"{name}.qkv_proj", rows, spec(embed, 3 * embed), spec(batch, length, 3 * embed)))
    else:
        parts = [(query, embed), (key, 2 * embed)] if key is value else [(query, embed), (key, embed), (value, embed)]
        for tensor, width in parts:
            records.append(
                _matmul(ctx, f"{name}.qkv_proj", _spec(ctx, tensor), spec(embed, width), spec(batch, length, width))
            )
        pieces = [spec(batch, length, width) for _, width in parts]
        records.append(_record(ctx, f"{name}.qkv_cat", "copy", pieces, spec(batch, length, 3 * embed)))
    records.append(
        _record(
            ctx,
            f"{name}.qkv_bias",
            "custom",
            [spec(batch, length, 3 * embed), _spec(ctx, a["qkv_bias"])],
            spec(3, batch, heads, length, head_dim),
            attrs={"flops": 4 * batch * length * embed},
        )
    )
    scores = spec(batch, heads, length, length)
    per_head = spec(batch, heads, length, head_dim)
    records.append(_matmul(ctx, f"{name}.scores", per_head, spec(batch, heads, head_dim, length), scores))
    mask = a.get("mask")
    if _is_tensor(mask):
        shape, mask_dtype = _spec(ctx, mask)
        if not _broadcasts(shape, scores[0]) and len(shape) == 2:  # a key padding mask (B, T)
            shape = (shape[0], 1, 1, shape[1])
        if _broadcasts(shape, scores[0]):
            records.append(
                _record(
                    ctx, f"{name}.mask", "elementwise", [scores, (shape, mask_dtype)], scores, attrs={"op": "where"}
                )
            )
    records.append(_record(ctx, f"{name}.softmax", "softmax", [scores], scores, attrs={"axis": -1}))
    records.append(_matmul(ctx, f"{name}.context", scores, per_head, per_head))
    records.append(_matmul(ctx, f"{name}.out_proj", rows, spec(embed, embed), rows))
    bias = _spec(ctx, a["proj_bias"])
    records.append(_record(ctx, f"{name}.out_proj.bias", "elementwise", [rows, bias], out, attrs={"op": "add"}))
    if need_weights and a.get("average_attn_weights", True):
        averaged = spec(batch, length, length)
        records.append(
            _record(
                ctx,
                f"{name}.average_weights",
                "reduce",
                [scores],
                averaged,
                attrs={"axes": (1,), "flops_per_output": 1},
            )
        )
    return records


@lowers("_native_multi_head_attention")
def _native_multi_head_attention(call: AtenCall, ctx: TorchContext) -> Ops:
    """(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight,
    proj_bias, mask, need_weights, average_attn_weights, mask_type) → (out, weights):
    see ``_mha``. FlopCounterMode has no formula for it (0)."""
    a = _arguments(call)
    out = call.outputs[0]
    need_weights = bool(a["need_weights"])
    return _mha(ctx, call.name, a, a["query"], a["key"], a["value"], _spec(ctx, out), need_weights=need_weights)


@lowers("_transform_bias_rescale_qkv")
def _transform_bias_rescale_qkv(call: AtenCall, ctx: TorchContext) -> Ops:
    """(qkv (B, T, 3D), qkv_bias, num_heads) → q, k, v (B, H, T, D/H): the bias added to
    all three and q scaled by 1/√(D/H), 4D FLOPs per row, as ``custom`` work."""
    qkv, bias = call.args[:2]
    batch, length, width = ctx.shape(qkv)
    q, k, v = call.outputs
    return [
        _record(
            ctx,
            call.name,
            "custom",
            [_spec(ctx, qkv), _spec(ctx, bias)],
            _spec(ctx, q),
            attrs={"flops": batch * length * width * 4 // 3},
            extra=[_spec(ctx, k), _spec(ctx, v)],
        )
    ]


#: FLOPs per element of the feed-forward activation: relu a compare-select; exact gelu
#: x·½·(1 + erf(x/√2)) a divide, erf, add and two multiplies, erf transcendental.
_FFN_ACTIVATION = {False: ("relu", 1, False), True: ("gelu", 5, True)}


@lowers("_transformer_encoder_layer_fwd")
def _transformer_encoder_layer(call: AtenCall, ctx: TorchContext) -> Ops:
    """nn.TransformerEncoderLayer's fused inference kernel: self-attention (``_mha``, no
    weights returned), two residual adds, two ``layernorm``s (before or after their block
    as ``norm_first`` says), and the feed-forward block: ``matmul`` D→F, bias, activation,
    ``matmul`` F→D, bias. FlopCounterMode has no formula for it (0)."""
    a = _arguments(call)
    src = a["src"]
    batch, length, embed = ctx.shape(src)
    dtype = ctx.dtype(src)
    rows: Spec = ((batch, length, embed), dtype)  # also the output's
    norm_first = bool(a["norm_first"])
    hidden = int(a["ffn_weight_1"].shape[0])
    wide: Spec = ((batch, length, hidden), dtype)

    def norm(index: int) -> Operation:
        weight, bias = _spec(ctx, a[f"norm_weight_{index}"]), _spec(ctx, a[f"norm_bias_{index}"])
        return _record(ctx, f"{call.name}.norm{index}", "layernorm", [rows, weight, bias], rows)

    def add(part: str, inputs: Sequence[Spec]) -> Operation:
        return _record(ctx, f"{call.name}.{part}", "elementwise", inputs, rows, attrs={"op": "add"})

    records = [norm(1)] if norm_first else []
    records += _mha(ctx, call.name, a, src, src, src, rows, need_weights=False)
    records.append(add("residual1", [rows, rows]))
    records.append(norm(2 if norm_first else 1))
    activation, per_element, transcendental = _FFN_ACTIVATION[bool(a["use_gelu"])]
    records += [
        _matmul(ctx, f"{call.name}.ffn1", rows, ((embed, hidden), dtype), wide),
        _record(ctx, f"{call.name}.ffn1.bias", "elementwise", [wide, _spec(ctx, a["ffn_bias_1"])], wide),
        _record(
            ctx,
            f"{call.name}.{activation}",
            "elementwise",
            [wide],
            wide,
            attrs={"op": activation, "flops_per_element": per_element, "transcendental": transcendental},
        ),
        _matmul(ctx, f"{call.name}.ffn2", wide, ((hidden, embed), dtype), rows),
        add("ffn2.bias", [rows, _spec(ctx, a["ffn_bias_2"])]),
        add("residual2", [rows, rows]),
    ]
    if not norm_first:
        records.append(norm(2))
    return records


# --- recurrent layers -------------------------------------------------------------------

_RNN_MODES = {0: "rnn_relu", 1: "rnn_tanh", 2: "lstm", 3: "gru"}  # cuDNN's and oneDNN's numbering
_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}
#: Gradient FLOPs per hidden unit, batch row and time step of the gate backward (the
#: matmuls are separate records). LSTM 24: combine the output and recurrent gradients (1),
#: recompute tanh(c') (1), do = dh·tanh(c') (1), dc = dc_next + dh·o·(1 - tanh²) (5),
#: di, dg, df, dc_prev (4 multiplies), three sigmoid derivatives s·(1-s)·x (9), one tanh
#: derivative (1-g²)·x (3). GRU 17: combine (1), dn = dh·(1-z) (2), dz = dh·(h-n) (2),
#: dh·z (1), tanh derivative (3), dr = da_n·hn (1), da_n·r (1), two sigmoid derivatives
#: (6). RNN: combine (1) + tanh derivative (3) = 4, or relu's select (1) = 2.
_BACKWARD_PER_UNIT = {"lstm": 24, "gru": 17, "rnn_tanh": 4, "rnn_relu": 2}


@dataclass(frozen=True, slots=True)
class _Layer:
    """One direction of one recurrent layer."""

    mode: str
    input_size: int
    hidden: int
    proj: int  # 0 without an LSTM projection
    biases: bool
    steps: tuple[tuple[int, int], ...]  # (batch rows, time steps with that many rows)
    dtype: str

    @property
    def gates(self) -> int:
        return _GATES[self.mode] * self.hidden

    @property
    def recurrent(self) -> int:
        return self.proj or self.hidden

    @property
    def rows(self) -> int:
        return sum(rows * count for rows, count in self.steps)

    def spec(self, *shape: int) -> Spec:
        return tuple(shape), self.dtype


def _sequence_steps(x: Any, batch_sizes: Any, batch_first: bool) -> tuple[tuple[int, int], ...]:
    """Time steps grouped by their batch size: a packed sequence's batch shrinks as its
    sequences end (``batch_sizes``); a padded batch runs every row at every step."""
    sizes = [int(b) for b in (batch_sizes.tolist() if _is_tensor(batch_sizes) else batch_sizes or ())]
    if sizes:
        return tuple(sorted(Counter(sizes).items(), reverse=True))
    shape = tuple(int(d) for d in x.shape)
    if len(shape) == 2:  # unbatched (T, I)
        return ((1, shape[0]),)
    length, batch = (shape[1], shape[0]) if batch_first else (shape[0], shape[1])
    return ((batch, length),)


def _gate_records(ctx: TorchContext, name: str, layer: _Layer, rows: int, count: int) -> Ops:
    """The elementwise work of ``count`` time steps of ``rows`` rows, sigmoid and tanh each
    1 FLOP and 1 transcendental:

    - LSTM: gates (rows, 4H) = x-part + h-part (+ b_ih + b_hh), then the activation: 2 per
      gate element, 4 with biases; cell: c' = f·c + i·g, h = o·tanh(c'): 5 per unit. 21H
      per row and step with biases, 13H without; 5H transcendentals.
    - GRU: r, z (rows, 2H) as the LSTM gates (4 per element with biases, 2 without);
      candidate and state: n = tanh(x_n (+ b_in) + r·(h_n (+ b_hn))), h' = n + z·(h - n):
      6 per unit, 8 with biases. 16H with biases, 10H without; 3H transcendentals.
    - RNN: act(x-part + h-part (+ b_ih + b_hh)): 2 per unit, 4 with biases (tanh
      transcendental, relu not).
    """
    hidden, spec = layer.hidden, layer.spec
    biases = 2 if layer.biases else 0
    if layer.mode == "lstm":
        gates = 4 * hidden
        inputs = [spec(rows, gates), spec(rows, gates)] + [spec(gates)] * biases
        unit = spec(rows, hidden)
        return [
            _record(
                ctx,
                f"{name}.gates",
                "elementwise",
                inputs,
                spec(rows, gates),
                attrs={"op": "lstm_gates", "flops_per_element": 2 + biases, "transcendental": True},
                count=count,
            ),
            _record(
                ctx,
                f"{name}.cell",
                "elementwise",
                [unit] * 5,  # c and the four activated gates
                unit,
                attrs={"op": "lstm_cell", "flops_per_element": 5, "transcendental": True},
                extra=[unit],  # c'
                count=count,
            ),
        ]
    if layer.mode == "gru":
        pair, unit = spec(rows, 2 * hidden), spec(rows, hidden)
        return [
            _record(
                ctx,
                f"{name}.gates",
                "elementwise",
                [pair, pair] + [spec(2 * hidden)] * biases,
                pair,
                attrs={"op": "gru_gates", "flops_per_element": 2 + biases, "transcendental": True},
                count=count,
            ),
            _record(
                ctx,
                f"{name}.candidate",
                "elementwise",
                [unit, unit] + [spec(hidden)] * biases + [unit] * 3,  # x_n, h_n, biases, r, z, h
                unit,
                attrs={"op": "gru_candidate", "flops_per_element": 6 + biases, "transcendental": True},
                count=count,
            ),
        ]
    unit = spec(rows, hidden)
    return [
        _record(
            ctx,
            f"{name}.cell",
            "elementwise",
            [unit, unit] + [spec(hidden)] * biases,
            unit,
            attrs={"op": layer.mode, "flops_per_element": 2 + biases, "transcendental": layer.mode == "rnn_tanh"},
            count=count,
        )
    ]


def _layer_forward(ctx: TorchContext, name: str, layer: _Layer) -> Ops:
    """The input projection of every time step as one ``matmul`` (N rows, N = Σ steps'
    rows), then per step the hidden ``matmul`` (rows, R)@(R, G·H), the gates, and an LSTM's
    projection (rows, H)@(H, P): 2·N·(I + R)·G·H matmul FLOPs in all (+ 2·N·H·P)."""
    spec, gates = layer.spec, layer.gates
    rows = layer.rows
    size = layer.input_size
    records = [_matmul(ctx, f"{name}.input_matmul", spec(rows, size), spec(size, gates), spec(rows, gates))]
    for batch, count in layer.steps:
        records.append(
            _matmul(
                ctx,
                f"{name}.hidden_matmul",
                spec(batch, layer.recurrent),
                spec(layer.recurrent, gates),
                spec(batch, gates),
                count,
            )
        )
        records += _gate_records(ctx, name, layer, batch, count)
        if layer.proj:
            records.append(
                _matmul(
                    ctx,
                    f"{name}.projection",
                    spec(batch, layer.hidden),
                    spec(layer.hidden, layer.proj),
                    spec(batch, layer.proj),
                    count,
                )
            )
    return records


def _layer_backward(ctx: TorchContext, name: str, layer: _Layer, *, weights: bool) -> Ops:
    """Per step: the gate backward (``custom``, ``_BACKWARD_PER_UNIT`` FLOPs per hidden
    unit), an LSTM projection's gradient (rows, P)@(P, H), and the recurrent gradient
    (rows, G·H)@(G·H, R). Then the input gradient (N, G·H)@(G·H, I) and, with ``weights``,
    the weight gradients (G·H, N)@(N, I) and (G·H, N)@(N, R) (and (P, N)@(N, H)) and the
    bias gradient, a ``reduce`` over the N rows (b_hh's gradient equals b_ih's: written
    twice)."""
    spec, gates, hidden = layer.spec, layer.gates, layer.hidden
    lstm = layer.mode == "lstm"
    records: Ops = []
    for batch, count in layer.steps:
        unit = spec(batch, hidden)
        records.append(
            _record(
                ctx,
                f"{name}.gate_backward",
                "custom",
                [spec(batch, gates), unit] + ([unit] if lstm else []),  # saved gates, dh, c
                spec(batch, gates),
                attrs={
                    "flops": _BACKWARD_PER_UNIT[layer.mode] * batch * hidden,
                    "transcendentals": batch * hidden if lstm else 0,
                },
                extra=[unit] if lstm else [],  # dc_prev
                count=count,
            )
        )
        if layer.proj:
            records.append(
                _matmul(ctx, f"{name}.projection_grad", spec(batch, layer.proj), spec(layer.proj, hidden), unit, count)
            )
        records.append(
            _matmul(
                ctx,
                f"{name}.hidden_grad_matmul",
                spec(batch, gates),
                spec(gates, layer.recurrent),
                spec(batch, layer.recurrent),
                count,
            )
        )
    rows, size = layer.rows, layer.input_size
    records.append(_matmul(ctx, f"{name}.input_grad_matmul", spec(rows, gates), spec(gates, size), spec(rows, size)))
    if weights:
        records.append(_matmul(ctx, f"{name}.weight_ih_grad", spec(gates, rows), spec(rows, size), spec(gates, size)))
        recurrent = layer.recurrent
        records.append(
            _matmul(ctx, f"{name}.weight_hh_grad", spec(gates, rows), spec(rows, recurrent), spec(gates, recurrent))
        )
        if layer.proj:
            records.append(
                _matmul(
                    ctx, f"{name}.weight_hr_grad", spec(layer.proj, rows), spec(rows, hidden), spec(layer.proj, hidden)
                )
            )
        if layer.biases:
            records.append(
                _record(
                    ctx,
                    f"{name}.bias_grad",
                    "reduce",
                    [spec(rows, gates)],
                    spec(gates),
                    attrs={"axes": (0,)},
                    extra=[spec(gates)],
                )
            )
    return records


@lowers("mkldnn_rnn_layer")
def _mkldnn_rnn_layer(call: AtenCall, ctx: TorchContext) -> Ops:
    """oneDNN's one-layer, one-direction RNN (nn.LSTM on this CPU): (input, w_ih, w_hh,
    b_ih, b_hh, hx, cx, reverse, batch_sizes, mode, hidden_size, num_layers, has_biases,
    bidirectional, batch_first, train) → ``_layer_forward``. The input is always (T, B, I)
    (mkldnn_rnn transposes a batch-first input before the call; ``batch_first`` is passed
    along but not used for the shapes). Without biases the two bias arguments are zero
    placeholders, not read. FlopCounterMode has no formula (0)."""
    a = _arguments(call)
    x = a["input"]
    layer = _Layer(
        _RNN_MODES[int(a["mode"])],
        int(a["weight0"].shape[1]),
        int(a["hidden_size"]),
        0,
        bool(a["has_biases"]),
        _sequence_steps(x, a["batch_sizes"], False),  # always (T, B, I): mkldnn_rnn transposes first
        ctx.dtype(x),
    )
    return _layer_forward(ctx, call.name, layer)


@lowers("mkldnn_rnn_layer_backward")
def _mkldnn_rnn_layer_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """oneDNN's layer backward: every gradient (input, weights, biases, states):
    ``_layer_backward`` with the weight gradients."""
    a = _arguments(call)
    x = a["input"]
    layer = _Layer(
        _RNN_MODES[int(a["mode"])],
        int(a["weight1"].shape[1]),
        int(a["hidden_size"]),
        0,
        bool(a["has_biases"]),
        _sequence_steps(x, a["batch_sizes"], False),
        ctx.dtype(x),
    )
    return _layer_backward(ctx, call.name, layer, weights=True)


def _stack(
    ctx: TorchContext,
    name: str,
    mode: str,
    weights: Sequence[Any],
    layers: int,
    bidirectional: bool,
    steps: tuple[tuple[int, int], ...],
    *,
    backward: bool | None = None,
) -> Ops:
    """Every layer and direction of a stacked RNN from its flat weight list, grouped per
    (layer, direction) as [w_ih, w_hh, (b_ih, b_hh), (w_hr)]: the hidden size and a
    projection are read from the weights' shapes. ``backward``: None for the forward,
    else the backward with (True) or without the weight gradients."""
    directions = 2 if bidirectional else 1
    stride = len(weights) // (layers * directions)
    records: Ops = []
    for index in range(layers * directions):
        group = weights[index * stride : (index + 1) * stride]
        w_ih, w_hh = group[0], group[1]
        hidden = int(w_ih.shape[0]) // _GATES[mode]
        proj = int(w_hh.shape[1]) if int(w_hh.shape[1]) != hidden else 0
        biases = stride - (1 if proj else 0) == 4
        layer = _Layer(mode, int(w_ih.shape[1]), hidden, proj, biases, steps, ctx.dtype(w_ih))
        label = f"{name}.layer{index // directions}" + (".reverse" if index % directions else "")
        if backward is None:
            records += _layer_forward(ctx, label, layer)
        else:
            records += _layer_backward(ctx, label, layer, weights=backward)
    return records


@lowers("_cudnn_rnn")
def _cudnn_rnn(call: AtenCall, ctx: TorchContext) -> Ops:
    """cuDNN's whole stacked RNN, (input, weight list, weight_stride0, weight_buf, hx, cx,
    mode, hidden_size, proj_size, num_layers, batch_first, dropout, train, bidirectional,
    batch_sizes, dropout_state): ``_layer_forward`` for every layer and direction (a packed
    input (N, I) runs its steps at their own batch sizes). Dropout between layers is not
    counted. FlopCounterMode has no formula (0)."""
    a = _arguments(call)
    steps = _sequence_steps(a["input"], a["batch_sizes"], bool(a["batch_first"]))
    mode = _RNN_MODES[int(a["mode"])]
    return _stack(ctx, call.name, mode, a["weight"], int(a["num_layers"]), bool(a["bidirectional"]), steps)


@lowers("_cudnn_rnn_backward")
def _cudnn_rnn_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """cuDNN's backward: the data gradients of every layer (cuDNN always runs them), the
    weight gradients when output_mask[3] asks."""
    a = _arguments(call)
    steps = _sequence_steps(a["input"], a["batch_sizes"], bool(a["batch_first"]))
    mode = _RNN_MODES[int(a["mode"])]
    weights = bool(list(a["output_mask"])[3])
    layers, bidirectional = int(a["num_layers"]), bool(a["bidirectional"])
    return _stack(ctx, call.name, mode, a["weight"], layers, bidirectional, steps, backward=weights)


_STACK_MODES = {"lstm": "lstm", "gru": "gru", "rnn_tanh": "rnn_tanh", "rnn_relu": "rnn_relu"}


@lowers(*_STACK_MODES)
def _rnn_stack(call: AtenCall, ctx: TorchContext) -> Ops:
    """aten.lstm/gru/rnn_tanh/rnn_relu, when one reaches dispatch whole (on this CPU they
    run as mkldnn_rnn_layer or decompose): ``.input`` (input, hx, params, has_biases,
    num_layers, dropout, train, bidirectional, batch_first) or ``.data`` (packed data,
    batch_sizes, ...)."""
    a = _arguments(call)
    if call.overload == "data":
        steps = _sequence_steps(a["data"], a["batch_sizes"], False)
    else:
        steps = _sequence_steps(a["input"], (), bool(a["batch_first"]))
    mode = _STACK_MODES[call.name]
    return _stack(ctx, call.name, mode, a["params"], int(a["num_layers"]), bool(a["bidirectional"]), steps)


_CELL_MODES = {"lstm_cell": "lstm", "gru_cell": "gru", "rnn_tanh_cell": "rnn_tanh", "rnn_relu_cell": "rnn_relu"}


@lowers(*_CELL_MODES)
def _rnn_cell(call: AtenCall, ctx: TorchContext) -> Ops:
    """One step of a cell, (input, hx, w_ih, w_hh, b_ih, b_hh), when it reaches dispatch
    whole (it normally decomposes to addmm and pointwise ops): ``_layer_forward`` of one
    step."""
    a = _arguments(call)
    x, w_ih, w_hh = a["input"], a["w_ih"], a["w_hh"]
    batch = int(x.shape[0]) if x.dim() == 2 else 1
    mode = _CELL_MODES[call.name]
    layer = _Layer(mode, int(w_ih.shape[1]), int(w_hh.shape[1]), 0, a["b_ih"] is not None, ((batch, 1),), ctx.dtype(x))
    return _layer_forward(ctx, call.name, layer)


def _cell_layer(mode: str, state: Any, biased: bool, dtype: str) -> _Layer:
    return _Layer(mode, 0, int(state.shape[-1]), 0, biased, ((int(state.numel() // state.shape[-1]), 1),), dtype)


@lowers("_thnn_fused_lstm_cell", "_thnn_fused_gru_cell")
def _fused_cell(call: AtenCall, ctx: TorchContext) -> Ops:
    """CUDA's fused cell pointwise kernel, (input_gates, hidden_gates, cx or hx,
    input_bias, hidden_bias): the gate records of one step (the products ran before it as
    mm/addmm)."""
    a = _arguments(call)
    state = a["cx"] if "cx" in a else a["hx"]
    mode = "lstm" if "lstm" in call.name else "gru"
    layer = _cell_layer(mode, state, a["input_bias"] is not None, ctx.dtype(state))
    return _gate_records(ctx, call.name, layer, layer.steps[0][0], 1)


@lowers("_thnn_fused_lstm_cell_backward_impl", "_thnn_fused_gru_cell_backward")
def _fused_cell_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """The fused cells' backward: the gate backward of one step (``custom``,
    ``_BACKWARD_PER_UNIT``) reading the saved workspace and incoming gradients, writing the
    gate and state gradients, and with ``has_bias`` the bias gradients as a ``reduce`` over
    the batch."""
    a = _arguments(call)
    mode = "lstm" if "lstm" in call.name else "gru"
    outputs = [t for t in call.outputs if t.numel() > 0]
    saved = (a.get("grad_hy"), a.get("grad_cy"), a.get("cx"), a.get("cy"), a["workspace"])
    reads = [_spec(ctx, t) for t in saved if _is_tensor(t)]
    batch, gates = (int(d) for d in outputs[0].shape)
    hidden = gates // _GATES[mode]
    has_bias = bool(a["has_bias"])
    n_bias = (1 if mode == "lstm" else 2) if has_bias else 0
    grads = outputs[: len(outputs) - n_bias]
    records = [
        _record(
            ctx,
            f"{call.name}",
            "custom",
            reads,
            _spec(ctx, grads[0]),
            attrs={
                "flops": _BACKWARD_PER_UNIT[mode] * batch * hidden,
                "transcendentals": batch * hidden if mode == "lstm" else 0,
            },
            extra=[_spec(ctx, t) for t in grads[1:]],
        )
    ]
    # the input bias sums the input-gate gradients; a GRU's hidden bias its hidden-gate ones
    for source, bias_grad in zip(outputs, outputs[len(outputs) - n_bias :], strict=False):
        records.append(
            _record(
                ctx,
                f"{call.name}.bias_grad",
                "reduce",
                [_spec(ctx, source)],
                _spec(ctx, bias_grad),
                attrs={"axes": (0,)},
            )
        )
    return records


# --- embedding, gather, indexing --------------------------------------------------------


@lowers("embedding")
def _embedding(call: AtenCall, ctx: TorchContext) -> Ops:
    """(weight (V, D), indices) → ``embedding``: the touched rows and the indices read."""
    return [ctx.op(call, "embedding", [call.args[0], call.args[1]], call.out)]


def _indices_spec(ctx: TorchContext, indices: Sequence[Any]) -> Spec:
    """Advanced-indexing tensors (None for a full slice) as one input: a single index
    keeps its shape; several are read as one flat run of their elements (int64 when their
    types differ)."""
    tensors = [t for t in indices if _is_tensor(t)]
    if len(tensors) == 1:
        return _spec(ctx, tensors[0])
    if not tensors:
        return (0,), "int64"
    dtypes = {ctx.dtype(t) for t in tensors}
    if len(dtypes) == 1:
        return (sum(int(t.numel()) for t in tensors),), dtypes.pop()
    total = sum(int(t.numel()) * t.element_size() for t in tensors)
    return (-(-total // 8),), "int64"


@lowers("index_select", "gather", "take", "index", "_unsafe_index", "masked_select")
def _gather(call: AtenCall, ctx: TorchContext) -> Ops:
    """``gather``: as many elements of ``self`` read as the output has, plus the indices
    (index_select's, gather's, take's index; ``x[i, j]``'s index tensors; masked_select's
    whole mask). torch.gather's output has the index's shape."""
    x = call.args[0]
    if call.name in ("index", "_unsafe_index"):
        index = _indices_spec(ctx, call.args[1])
    elif call.name in ("index_select", "gather"):
        index = _spec(ctx, call.arg(2, "index"))
    else:
        index = _spec(ctx, call.args[1])
    return [_record(ctx, call.name, "gather", [_spec(ctx, x), index], _spec(ctx, call.out))]


def _scatter(
    call: AtenCall,
    ctx: TorchContext,
    index: Spec,
    updates: Spec,
    mode: str,
    touched: int,
) -> Ops:
    """A scatter into ``self`` (in place for a trailing-underscore op; an out-of-place one
    first copies ``self`` to its output, as the kernel does): the touched elements written,
    the indices and updates read, a combining mode also reading the old touched values."""
    x, out = call.args[0], call.out
    records: Ops = []
    if not call.name.endswith("_"):
        records.append(_record(ctx, f"{call.name}.copy", "copy", [_spec(ctx, x)], _spec(ctx, out)))
    attrs: dict[str, Any] = {"mode": mode}
    if touched != math.prod(updates[0]):
        attrs["touched"] = touched
    records.append(_record(ctx, call.name, "scatter", [_spec(ctx, out), index, updates], _spec(ctx, out), attrs=attrs))
    return records


def _updates(ctx: TorchContext, value: Any, shape: Shape, like: Any) -> Spec:
    """The updates as read: a tensor's first ``shape`` elements, or one scalar."""
    if _is_tensor(value):
        return (shape if value.numel() >= math.prod(shape) else ctx.shape(value)), ctx.dtype(value)
    return (), ctx.dtype(like)


_REDUCE_MODES = {
    "sum": "add",
    "add": "add",
    "prod": "mul",
    "multiply": "mul",
    "mean": "add",
    "amax": "max",
    "amin": "min",
}


@lowers("scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_")
def _scatter_dim(call: AtenCall, ctx: TorchContext) -> Ops:
    """torch.scatter family, (self, dim, index, src or value[, reduce]): one update per
    index element (src is read only where the index reaches, a scalar value once);
    scatter_add and reduce='sum'/'add' add, 'prod'/'multiply' multiply, 'amax'/'amin'
    compare. reduce='mean' also counts the contributions (a scatter-add of ones) and
    divides the whole output by the counts (one divide per element)."""
    a = _arguments(call)
    x, index = a["self"], a["index"]
    index_shape = ctx.shape(index)
    source = a["src"] if "src" in a else a.get("value")
    reduce = a.get("reduce")
    mode = "add" if call.name.startswith("scatter_add") else _REDUCE_MODES.get(str(reduce), "update")
    touched = math.prod(index_shape)
    records = _scatter(call, ctx, _spec(ctx, index), _updates(ctx, source, index_shape, x), mode, touched)
    if reduce == "mean":
        out = _spec(ctx, call.out)
        counts = ((), out[1])
        records.append(
            _record(
                ctx,
                f"{call.name}.count",
                "scatter",
                [out, _spec(ctx, index), counts],
                out,
                attrs={"mode": "add", "touched": touched},
            )
        )
        records.append(_record(ctx, f"{call.name}.mean", "elementwise", [out], out, attrs={"op": "div"}))
    return records


def _indexed_elements(ctx: TorchContext, x: Any, indices: Sequence[Any]) -> int:
    """How many elements ``x[indices]`` has: the index tensors' broadcast shape (a boolean
    mask counts its set elements and consumes as many dims as it has) times the dims they
    leave whole."""
    shape = ctx.shape(x)
    dim, index_shapes, whole = 0, list[Shape](), 1
    for index in indices:
        if index is None:
            whole *= shape[dim]
            dim += 1
        elif index.dtype in (torch.bool, torch.uint8):
            index_shapes.append((_nonzero_count(index),))
            dim += index.dim()
        else:
            index_shapes.append(tuple(index.shape))
            dim += 1
    whole *= math.prod(shape[dim:])
    return _broadcast_elements(index_shapes) * whole


@lowers("index_put", "index_put_", "_index_put_impl_")
def _index_put(call: AtenCall, ctx: TorchContext) -> Ops:
    """``x[indices] = values`` (accumulate: ``+=``): a ``scatter`` of the indexed elements
    (a boolean mask's set elements), the values read once each (one scalar for
    ``x[mask] = 0``)."""
    a = _arguments(call)
    x, indices, values = a["self"], a["indices"], a["values"]
    touched = _indexed_elements(ctx, x, indices)
    mode = "add" if a["accumulate"] else "update"
    return _scatter(call, ctx, _indices_spec(ctx, indices), _spec(ctx, values), mode, touched)


@lowers("index_add", "index_add_", "index_copy", "index_copy_", "index_fill", "index_fill_")
def _index_dim(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, dim, index, source or value): index_add adds each slice of source into the
    slices of self the index names (alpha ≠ 1 scales source first: an ``elementwise``
    record), index_copy writes them, index_fill writes one value into them."""
    a = _arguments(call)
    x, dim, index = a["self"], int(a["dim"]), a["index"]
    if "source" in a:
        source = a["source"]
        records = _scatter(
            call,
            ctx,
            _spec(ctx, index),
            _spec(ctx, source),
            "add" if call.name.startswith("index_add") else "update",
            int(source.numel()),
        )
        if a.get("alpha", 1) != 1:
            scaled = _spec(ctx, source)
            records.insert(0, _record(ctx, f"{call.name}.alpha", "elementwise", [scaled], scaled, attrs={"op": "mul"}))
        return records
    shape = ctx.shape(x)
    per_slice = math.prod(shape) // shape[dim] if shape and shape[dim] else 1
    touched = int(index.numel()) * per_slice
    return _scatter(call, ctx, _spec(ctx, index), _updates(ctx, a["value"], (), x), "update", touched)


@lowers("put", "put_")
def _put(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, index, source, accumulate): flat-index scatter of source, one element per index."""
    a = _arguments(call)
    index, source = a["index"], a["source"]
    mode = "add" if a["accumulate"] else "update"
    return _scatter(call, ctx, _spec(ctx, index), _spec(ctx, source), mode, int(index.numel()))


@lowers("masked_scatter", "masked_scatter_")
def _masked_scatter(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, mask, source): the mask read whole, source's first n elements written where
    it is set (n = set elements of the mask broadcast to self)."""
    x, mask, source = call.args[:3]
    touched = _nonzero_count(torch.broadcast_to(mask, x.shape)) if mask.shape != x.shape else _nonzero_count(mask)
    updates = ((touched,), ctx.dtype(source))
    return _scatter(call, ctx, _spec(ctx, mask), updates, "update", touched)


@lowers("embedding_dense_backward")
def _embedding_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """(grad_output (..., D), indices, num_weights, padding_idx, scale_grad_by_freq) → (V, D):
    the gradient table zeroed (written whole), then a scatter-add of every grad row into
    the row its index names (padding_idx rows counted too: an upper bound). With
    scale_grad_by_freq each grad element is also divided by its row's count."""
    a = _arguments(call)
    grad, indices = a["grad_output"], a["indices"]
    out = _spec(ctx, call.out)
    updates = _spec(ctx, grad)
    records = [_record(ctx, f"{call.name}.zero", "elementwise", [], out, attrs={"op": "zeros"})]
    if a["scale_grad_by_freq"]:
        records.append(_record(ctx, f"{call.name}.scale", "elementwise", [updates], updates, attrs={"op": "div"}))
    records.append(_record(ctx, call.name, "scatter", [out, _spec(ctx, indices), updates], out, attrs={"mode": "add"}))
    return records


@lowers("_embedding_bag", "_embedding_bag_forward_only")
def _embedding_bag(call: AtenCall, ctx: TorchContext) -> Ops:
    """nn.EmbeddingBag, (weight (V, D), indices (N,), offsets, scale_grad_by_freq, mode,
    sparse, per_sample_weights, ...) → ((bags, D), bookkeeping): ``custom`` work reading the
    N rows it looks up (never the table), the indices and offsets; combining a bag of n rows
    takes n-1 adds (mode 0, sum; 1, mean, then one divide per output) or comparisons (2,
    max) per feature, and per_sample_weights one multiply per row element."""
    a = _arguments(call)
    weight, indices, offsets = a["weight"], a["indices"], a["offsets"]
    out, *rest = call.outputs
    rows, width = int(indices.numel()), int(weight.shape[1])
    bags = int(out.shape[0])
    flops = max(rows - bags, 0) * width + (bags * width if int(a["mode"]) == 1 else 0)
    inputs = [((rows, width), ctx.dtype(weight)), _spec(ctx, indices), _spec(ctx, offsets)]
    weights = a["per_sample_weights"]
    if _is_tensor(weights):
        flops += rows * width
        inputs.append(_spec(ctx, weights))
    extra = [_spec(ctx, t) for t in rest if t.numel() > 0]
    return [_record(ctx, call.name, "custom", inputs, _spec(ctx, out), attrs={"flops": flops}, extra=extra)]


@lowers("_embedding_bag_backward", "_embedding_bag_dense_backward")
def _embedding_bag_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """(grad (bags, D), indices (N,), ...) → (V, D): the gradient table zeroed, then each of
    the N looked-up rows receives its bag's gradient (a scatter-add of N rows); a mean bag's
    or a weighted row's gradient is scaled first (one multiply per row element)."""
    a = _arguments(call)
    grad, indices = a["grad"], a["indices"]
    out = _spec(ctx, call.out)
    updates: Spec = ((int(indices.numel()), int(grad.shape[-1])), ctx.dtype(grad))
    records = [_record(ctx, f"{call.name}.zero", "elementwise", [], out, attrs={"op": "zeros"})]
    if int(a["mode"]) == 1 or _is_tensor(a["per_sample_weights"]):
        records.append(_record(ctx, f"{call.name}.scale", "elementwise", [updates], updates, attrs={"op": "mul"}))
    records.append(_record(ctx, call.name, "scatter", [out, _spec(ctx, indices), updates], out, attrs={"mode": "add"}))
    return records


# --- copies, pads, selects --------------------------------------------------------------


@lowers("cat", "stack")
def _concatenate(call: AtenCall, ctx: TorchContext) -> Ops:
    """``copy``: every input read once, the output written once."""
    return [ctx.op(call, "copy", [t for t in call.args[0] if _is_tensor(t)], call.out)]


_COPIES = (
    "clone",
    "_to_copy",
    "lift_fresh_copy",
    "expand_copy",
    "permute_copy",
    "transpose_copy",
    "t_copy",
    "view_copy",
    "alias_copy",
    "detach_copy",
    "unsqueeze_copy",
    "squeeze_copy",
    "repeat",
    "repeat_interleave",
    "flip",
    "roll",
    "tril",
    "triu",
    "tril_",
    "triu_",
    "nonzero",
    "reflection_pad1d",
    "reflection_pad2d",
    "reflection_pad3d",
    "replication_pad1d",
    "replication_pad2d",
    "replication_pad3d",
    "_copy_from",
    "_copy_from_and_resize",
)


@lowers(*_COPIES)
def _copy(call: AtenCall, ctx: TorchContext) -> Ops:
    """``copy`` of the first tensor argument into the output: casts and device moves
    (_to_copy, _copy_from), materialised views (clone of a transpose, expand_copy,
    repeat, repeat_interleave, flip, roll), pads that reflect or replicate, tril/triu (the
    kept triangle copied, the rest written as zeros; the in-place forms are counted the
    same, an upper bound), nonzero (the input scanned, the indices written)."""
    out = call.outputs[0] if call.name == "_copy_from_and_resize" else call.out
    if call.name == "_copy_from":
        out = call.args[1]
    return [ctx.op(call, "copy", [call.args[0]], out)]


@lowers("copy_")
def _copy_into(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, src): ``copy`` of src (which may broadcast: read once) into self; the scalar
    overloads fill self (written, nothing read)."""
    dst, src = call.args[:2]
    if _is_tensor(src):
        return [ctx.op(call, "copy", [src], dst)]
    return [ctx.op(call, "elementwise", [], dst, attrs={"op": "fill"})]


@lowers("to")
def _to(call: AtenCall, ctx: TorchContext) -> Ops:
    """aten.to, when it reaches dispatch (it is normally resolved to _to_copy or to
    nothing): free when it returns its input, else a ``copy``."""
    x = call.args[0]
    if call.out is x:
        return []
    return [ctx.op(call, "copy", [x], call.out)]


EMPTY_REASONS["to"] = "the tensor already has the dtype, device and layout asked for: it is returned as is"


@lowers("constant_pad_nd")
def _constant_pad(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, pad, value): ``copy`` reading the elements that survive (a negative pad
    crops) and writing the padded output."""
    x = call.args[0]
    pad = _ints(call.arg(1, "pad"))
    shape = list(ctx.shape(x))
    for i in range(len(pad) // 2):
        dim = len(shape) - 1 - i
        shape[dim] = max(0, shape[dim] + min(pad[2 * i], 0) + min(pad[2 * i + 1], 0))
    return [_record(ctx, call.name, "copy", [(tuple(shape), ctx.dtype(x))], _spec(ctx, call.out))]


_PAD_BACKWARDS = tuple(f"{kind}_pad{n}d_backward" for kind in ("reflection", "replication") for n in (1, 2, 3))


@lowers(*_PAD_BACKWARDS)
def _pad_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """(grad_output, self, padding) → grad of self: each padded position's gradient added
    into the element it copied: grad_output read, the gradient written, one add per
    element of grad_output beyond the input's size (``custom``)."""
    grad = call.args[0]
    extra = max(int(grad.numel()) - int(call.out.numel()), 0)
    return [ctx.op(call, "custom", [grad], call.out, attrs={"flops": extra})]


@lowers("where")
def _where(call: AtenCall, ctx: TorchContext) -> Ops:
    """where(condition, self, other): ``elementwise`` select, 1 per element, reading the
    boolean condition and the tensor operands (scalars are free). where(condition) alone
    is nonzero as a tuple: a ``copy`` scanning the condition and writing the indices."""
    if call.overload == "default":
        outputs = call.outputs
        if not outputs:
            return []
        return [ctx.op(call, "copy", [call.args[0]], outputs[0], extra_outputs=outputs[1:])]
    inputs = [t for t in call.args[:3] if _is_tensor(t)]
    return [ctx.op(call, "elementwise", inputs, call.out, attrs={"op": "where"})]


EMPTY_REASONS["where"] = "where(condition) of a 0-d condition returns no index tensors"


@lowers("masked_fill", "masked_fill_")
def _masked_fill(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, mask, value): ``elementwise`` select, 1 per element, reading self, the
    boolean mask and a tensor value."""
    inputs = [t for t in call.args[:3] if _is_tensor(t)]
    return [ctx.op(call, "elementwise", inputs, call.out, attrs={"op": "masked_fill"})]


# --- sorting, selection, scans ----------------------------------------------------------


@lowers("sort", "topk")
def _sort(call: AtenCall, ctx: TorchContext) -> Ops:
    """``sort`` along dim: ⌈L·log2 L⌉ comparisons per row; topk the rule's top-k form
    (L-1 for k = 1, else ⌈L·log2 k⌉); values written, indices an extra output. A 0-d input
    is a copy."""
    a = _arguments(call)
    x = a["self"]
    values, indices = call.outputs
    if x.dim() == 0:
        return [ctx.op(call, "copy", [x], values, extra_outputs=[indices])]
    attrs: dict[str, Any] = {"axis": int(a["dim"])}
    if call.name == "topk":
        attrs["k"] = int(a["k"])
    return [ctx.op(call, "sort", [x], values, attrs=attrs, extra_outputs=[indices])]


@lowers("argmax", "argmin")
def _arg_reduction(call: AtenCall, ctx: TorchContext) -> Ops:
    """``reduce``: n-1 comparisons per reduced row of n (all elements when dim is None).
    (max/min, whose packets also hold the binary and whole-tensor forms, are ops_pointwise's.)"""
    x, dim = call.args[0], call.arg(1, "dim")
    attrs = {} if dim is None or x.dim() == 0 else {"axes": (int(dim),)}
    return [ctx.op(call, "reduce", [x], call.out, attrs=attrs)]


#: logcumsumexp combines with PyTorch's log-add-exp: min, max, a finiteness test, the
#: difference, exp, log1p and the add — 7 FLOPs, 2 of them transcendental.
_LOG_ADD_EXP = {"flops_per_combine": 7, "transcendentals_per_combine": 2}


@lowers("cumsum", "cumsum_", "cumprod", "cumprod_", "cummax", "cummin", "logcumsumexp")
def _cumulative(call: AtenCall, ctx: TorchContext) -> Ops:
    """``cumulative`` along dim: L-1 combining steps per row (cummax/cummin also write
    the indices); a 0-d input is a copy."""
    x = call.args[0]
    outputs = call.outputs
    if x.dim() == 0:
        return [ctx.op(call, "copy", [x], outputs[0], extra_outputs=outputs[1:])]
    attrs: dict[str, Any] = {"axis": int(call.arg(1, "dim")), "op": call.name}
    if call.name == "logcumsumexp":
        attrs.update(_LOG_ADD_EXP)
    return [ctx.op(call, "cumulative", [x], outputs[0], attrs=attrs, extra_outputs=outputs[1:])]


# --- materialising the backward of views ------------------------------------------------


@lowers("slice_backward", "select_backward", "diagonal_backward")
def _view_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """(grad_output, input_sizes, ...): a zero gradient of the input's size with
    grad_output copied into the viewed part: a ``copy`` writing it whole."""
    return [ctx.op(call, "copy", [call.args[0]], call.out)]


@lowers("slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter")
def _view_scatter(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, src, ...): self copied with src written into a view of it: a ``copy`` of
    both into the output."""
    return [ctx.op(call, "copy", [call.args[0], call.args[1]], call.out)]
