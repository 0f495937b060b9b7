"""Table entries for PyTorch's attention kernels: the sdpa kernels and their backward, the
math fallback, fused multi-head attention and the fused transformer encoder layer.

Each builder turns one executed aten call into records of existing kinds, permuting
PyTorch's layouts into the ones the rules expect; the FLOP and byte arithmetic stays in
``neural_cost.costs``. Conventions beyond ARCHITECTURE.md, each stated where it is used:

- Attention kernels: one ``attention`` record with q, k, v in (B, H, S, D); the flash,
  memory-efficient and cuDNN kernels skip fully masked blocks (``skips_masked``). Causal
  alignment follows the kernel: top-left for PyTorch's CPU flash, memory-efficient and cuDNN
  kernels, bottom-right for FlashAttention-2 (``_flash_attention_forward`` and the CUDA
  ``_scaled_dot_product_flash_attention``, which sdpa calls only with Sq = Sk, where the two
  agree). PyTorch's CPU flash kernel skips whole tiles (32-256 queries by 512 keys), not
  pairs: every pair of a tile the mask touches is computed (``causal_blocks``), so a causal
  sequence up to 512 long costs what a dense one does. ``dense_flops`` equals
  FlopCounterMode's sdpa count. Backward kernels are ``attention_backward`` records over
  the same q, k, v and attrs (its ``dense_flops`` is FlopCounterMode's backward formula).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

from ...core.records import Operation, Shape
from .attention_math import math_attention
from .common import Ops, Spec, _arguments, _broadcasts, _is_tensor, _matmul, _record, _spec
from .table import EMPTY_REASONS, AtenCall, TorchContext, lowers

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
    """Variable-length (nested) inputs: cumulative offsets with (total, H, D) — the flash
    layout — or (1, total, H, D), as nested-tensor sdpa calls the memory-efficient kernel."""
    if kernel.varlen is None or a.get(kernel.varlen[0]) is None:
        return False
    shape = a["query"].shape
    return len(shape) == 3 or (len(shape) == 4 and int(shape[0]) == 1)


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
    heads_q, dim = q_spec[0][-2:]  # (…, total, H, D) in either layout
    heads_k, value_dim = k_spec[0][-2], v_spec[0][-1]
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
    """The backward of a flash-style kernel: ``attention_backward`` over q, k, v (B, H, S, D)
    and what else it reads, writing the gradients."""
    return _record(ctx, name, "attention_backward", [*qkv, *reads], grads[0], attrs=attrs, extra=grads[1:], count=count)


@lowers(*_BACKWARD_KERNELS)
def _fused_attention_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """(grad_out, q, k, v, [bias], out, logsumexp, ...) → (dq, dk, dv[, dbias]): one
    ``attention_backward`` record reading grad_out, out, the log-sum-exp, the
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
    """The math fallback, when it reaches dispatch whole (under ``inference_mode``; under
    ``no_grad`` it decomposes): the chain it runs, the records its decomposition gives
    (``attention_math``), so both modes count the same — the scores materialised, every
    query-key pair computed, masked ones included."""
    return math_attention(call, ctx)


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
    bias add and 1/√d scaling of q (``qkv_bias_rescale``);
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
            "qkv_bias_rescale",
            [spec(batch, length, 3 * embed), _spec(ctx, a["qkv_bias"])],
            spec(3, batch, heads, length, head_dim),
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
    all three and q scaled by 1/√(D/H): ``qkv_bias_rescale``."""
    qkv, bias = call.args[:2]
    q, k, v = call.outputs
    return [
        _record(
            ctx,
            call.name,
            "qkv_bias_rescale",
            [_spec(ctx, qkv), _spec(ctx, bias)],
            _spec(ctx, q),
            extra=[_spec(ctx, k), _spec(ctx, v)],
        )
    ]


#: FLOPs per element of the feed-forward activation: relu a compare-select; exact gelu
#: x·½·(1 + erf(x/√2)) a divide, erf, add and two multiplies, erf transcendental.
_FFN_ACTIVATION = {False: "relu", True: "gelu"}  # catalog entries


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
    activation = _FFN_ACTIVATION[bool(a["use_gelu"])]
    records += [
        _matmul(ctx, f"{call.name}.ffn1", rows, ((embed, hidden), dtype), wide),
        _record(ctx, f"{call.name}.ffn1.bias", "elementwise", [wide, _spec(ctx, a["ffn_bias_1"])], wide),
        _record(
            ctx,
            f"{call.name}.{activation}",
            "elementwise",
            [wide],
            wide,
            attrs={"op": activation},
        ),
        _matmul(ctx, f"{call.name}.ffn2", wide, ((hidden, embed), dtype), rows),
        add("ffn2.bias", [rows, _spec(ctx, a["ffn_bias_2"])]),
        add("residual2", [rows, rows]),
    ]
    if not norm_first:
        records.append(norm(2))
    return records
