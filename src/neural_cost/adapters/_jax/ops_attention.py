"""Table entries for the fused attention primitives some backends substitute for
``jax.nn.dot_product_attention``: jax's cuDNN path (``dot_product_attention_fwd``/``_bwd``
and their fp8 and ``_wrapper`` forms) and a Metal plugin's ``sdpa``. Each becomes an
``attention`` record in (batch, heads, sequence, head_dim) order, or an
``attention_backward`` record for a backward pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.records import Operation, Shape
from .table import LowerContext, lowers

Ops = list[Operation]

# --- fused attention --------------------------------------------------------------------

# jax._src.cudnn.fused_attention_stablehlo.AttentionLayout: BTNH = 0, BNTH = 1.
_BNTH = 1


def to_bhsd(shape: Shape, layout: int) -> Shape:
    """A cuDNN attention operand in (batch, heads, sequence, head_dim) order: BNTH already
    is; BTNH (jax.nn.dot_product_attention's (B, T, N, H)) swaps its middle dims."""
    if len(shape) != 4 or layout == _BNTH:
        return shape
    return (shape[0], shape[2], shape[1], shape[3])


def _mask_is_causal(mask_type: Any) -> bool:
    """MaskType CAUSAL / PADDING_CAUSAL (cuDNN's top-left causal mask); NO_MASK, PADDING and
    ALIBI keep every query-key pair (padding is known only at run time)."""
    return getattr(mask_type, "name", str(mask_type)) in ("CAUSAL", "PADDING_CAUSAL")


def _attention_attrs(causal: bool, params: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {"causal": causal, "skips_masked": True}
    window = params.get("sliding_window_length")
    if window is not None:
        # The rule has no local window: it counts every causal pair, an upper bound on what
        # cuDNN executes with a sliding window. Kept visible on the record.
        attrs["sliding_window_length"] = int(window)
    return attrs


def _cudnn_forward(eqn: Any, ctx: LowerContext, causal: bool, extra_inputs: Sequence[Any]) -> Operation:
    layout = int(eqn.params["layout"])
    q, k, v = eqn.invars[:3]
    out, *extra = eqn.outvars
    inputs = [q, k, v, *extra_inputs]
    shapes = [to_bhsd(ctx.shape(a), layout) for a in (q, k, v)] + [ctx.shape(a) for a in extra_inputs]
    return ctx.op(
        eqn,
        "attention",
        inputs,
        out,
        attrs=_attention_attrs(causal, eqn.params),
        input_shapes=shapes,
        output_shape=to_bhsd(ctx.shape(out), layout),
        extra_outputs=extra,
    )


@lowers("dot_product_attention_fwd", "dot_product_attention_fwd_wrapper")
def _cudnn_attention(eqn: Any, ctx: LowerContext) -> Ops:
    """cuDNN flash attention, (q, k, v, bias, q_seqlen, kv_seqlen, q_offsets, kv_offsets,
    page_table_k, page_table_v) in BTNH or BNTH (params['layout']): ``attention`` over
    (B, H, S, D), causal per params['mask_type'], the bias read as a fourth input when
    params['variadic_args'][0] says there is one (absent ones are (0,) placeholders; the
    sequence lengths and offsets, a few ints, are left out). In training it also writes the
    softmax statistics (B, H, T) float32, an extra output."""
    has_bias = bool(eqn.params["variadic_args"][0])
    bias = [eqn.invars[3]] if has_bias else []
    return [_cudnn_forward(eqn, ctx, _mask_is_causal(eqn.params["mask_type"]), bias)]


@lowers("dot_product_attention_fp8_fwd", "dot_product_attention_fp8_fwd_wrapper")
def _cudnn_fp8_attention(eqn: Any, ctx: LowerContext) -> Ops:
    """cuDNN fp8 attention, (q, k, v, descale/scale scalars...): ``attention`` charged to the
    fp8 dtype; the amax outputs (and the softmax statistics in training) are extra outputs."""
    return [_cudnn_forward(eqn, ctx, bool(eqn.params["use_causal_mask"]), ())]


def _attention_backward(eqn: Any, ctx: LowerContext, causal: bool, reads: Sequence[Any]) -> Operation:
    """The backward of a flash attention kernel: ``attention_backward`` over q, k, v in
    (B, H, S, D) and what else it reads (the bias, softmax statistics, output and its
    gradient), writing dQ, dK, dV (and dbias)."""
    layout = int(eqn.params["layout"])
    q, k, v = eqn.invars[:3]
    shapes = [to_bhsd(ctx.shape(a), layout) for a in (q, k, v)] + [ctx.shape(a) for a in reads]
    dq, *grads = eqn.outvars
    attrs = _attention_attrs(causal, eqn.params)
    return ctx.op(
        eqn, "attention_backward", [q, k, v, *reads], dq, attrs=attrs, input_shapes=shapes, extra_outputs=grads
    )


@lowers("dot_product_attention_bwd", "dot_product_attention_bwd_wrapper")
def _cudnn_attention_backward(eqn: Any, ctx: LowerContext) -> Ops:
    """(q, k, v, bias, q_seqlen, kv_seqlen, q_offsets, kv_offsets, page_table_k,
    page_table_v, softmax_stats, fwd_output, grad_output) → (dq, dk, dv[, dbias])."""
    has_bias = bool(eqn.params["variadic_args"][0])
    reads = ([eqn.invars[3]] if has_bias else []) + list(eqn.invars[10:13])
    return [_attention_backward(eqn, ctx, _mask_is_causal(eqn.params["mask_type"]), reads)]


@lowers("dot_product_attention_fp8_bwd", "dot_product_attention_fp8_bwd_wrapper")
def _cudnn_fp8_attention_backward(eqn: Any, ctx: LowerContext) -> Ops:
    """(q, k, v, fwd_output, grad_output, softmax_stats, scale scalars...) → (dq, dk, dv,
    amax_dq, amax_dk, amax_dv, amax_dp)."""
    return [_attention_backward(eqn, ctx, bool(eqn.params["use_causal_mask"]), eqn.invars[3:6])]


@lowers("sdpa", "mps.sdpa")
def _metal_attention(eqn: Any, ctx: LowerContext) -> Ops:
    """A Metal plugin's fused attention, (q, k, v[, mask]) in (B, H, S, D). Read from the
    shapes only: its params are not verified here, so it is recorded without a causal mask
    (every query-key pair, an upper bound for a causal call); a mask operand is read."""
    q, k, v, *rest = eqn.invars
    return [ctx.op(eqn, "attention", [q, k, v, *rest[:1]], attrs={"causal": False, "skips_masked": True})]
