"""The records of PyTorch's math attention (``_scaled_dot_product_attention_math``) when it
reaches dispatch whole: the chain its C++ body runs (aten/src/ATen/native/transformers/
attention.cpp), the same records its decomposition gives when it runs op by op.

Under ``no_grad`` the composite runs as its parts; under ``inference_mode`` it reaches the
recorder whole (``ops_attention``'s entry calls this). One program must count the same in
both modes, so this chain is the decomposition, op for op (a test compares the two):

- q and kᵀ each scaled by √scale (the scale is split between them for stability), one
  multiply per element, kᵀ at the query's head count;
- a causal mask is built: a (Sq, Sk) boolean fill, ``tril``, two scalar fills and a
  ``where`` turning it into 0 / -inf (``convert_boolean_attn_mask``);
- grouped-query k and v (``enable_gqa``) are copied out to the query's heads
  (``repeat_interleave``);
- q·kᵀ ``matmul``; the mask added (``elementwise``); ``safe_softmax`` (softmax, then rows
  with no unmasked key set to 0); dropout as ``at::dropout`` decomposes (a bernoulli draw, a
  divide by 1-p, a multiply); ·v ``matmul`` — every query-key pair computed, masked ones too.
"""

from __future__ import annotations

from typing import Any

import torch

from .common import Ops, Spec, _arguments, _is_tensor, _record, _spec
from .ops_random_optim import _bernoulli
from .table import AtenCall, TorchContext

aten = torch.ops.aten


def math_attention(call: AtenCall, ctx: TorchContext) -> Ops:
    """(query, key, value, attn_mask, dropout_p, is_causal, dropout_mask, scale, enable_gqa)
    → (output, attention weights): the chain above, in the order the kernel runs it."""
    a = _arguments(call)
    q, k, v = a["query"], a["key"], a["value"]
    if _is_tensor(a.get("dropout_mask")) and float(a.get("dropout_p") or 0.0) > 0.0:
        raise ValueError("a given dropout_mask (PyTorch's testing path) is not modeled")
    (q_shape, dtype), k_shape, v_shape = _spec(ctx, q), ctx.shape(k), ctx.shape(v)
    lead, length, keys = q_shape[:-2], q_shape[-2], k_shape[-2]
    name = call.name

    def record(part: str, kind: str, inputs: list[Spec], output: Spec, **attrs: Any) -> Any:
        return _record(ctx, f"{name}.{part}", kind, inputs, output, attrs=attrs)

    records: Ops = [record("scale_q", "elementwise", [(q_shape, dtype)], (q_shape, dtype), op="mul")]
    mask: Spec | None = _spec(ctx, a["attn_mask"]) if _is_tensor(a.get("attn_mask")) else None
    if a.get("is_causal"):
        square: Spec = ((length, keys), "bool")
        scalar: Spec = ((), dtype)
        mask = ((length, keys), dtype)
        records += [
            record("causal_ones", "elementwise", [], square, op="fill"),
            _record(ctx, f"{name}.causal_tril", "copy", [square], square),
            record("causal_zero", "elementwise", [], scalar, op="fill"),
            record("causal_inf", "elementwise", [], scalar, op="fill"),
            record("causal_mask", "elementwise", [square, scalar, scalar], mask, op="where"),
        ]
    heads = q_shape[-3] if len(q_shape) >= 3 else 1
    if a.get("enable_gqa") and len(k_shape) >= 3 and k_shape[-3] != heads:
        for part, tensor in (("repeat_k", k), ("repeat_v", v)):
            shape = ctx.shape(tensor)
            grouped: Spec = ((*shape[:-2], heads // shape[-3], *shape[-2:]), ctx.dtype(tensor))
            records.append(_record(ctx, f"{name}.{part}", "copy", [grouped], grouped))
    key_t: Spec = ((*lead, k_shape[-1], keys), ctx.dtype(k))
    scores: Spec = ((*lead, length, keys), dtype)
    values: Spec = ((*lead, keys, v_shape[-1]), ctx.dtype(v))
    records.append(record("scale_k", "elementwise", [key_t], key_t, op="mul"))
    records.append(_record(ctx, f"{name}.scores", "matmul", [(q_shape, dtype), key_t], scores))
    if mask is not None:
        records.append(record("mask", "elementwise", [scores, mask], scores, op="add"))
    records.append(record("softmax", "safe_softmax", [scores], scores, op="_safe_softmax", axis=-1))
    dropout = float(a.get("dropout_p") or 0.0)
    weights = call.outputs[1] if len(call.outputs) > 1 else None
    if dropout > 0.0 and weights is not None:
        # at::dropout: a bernoulli(1-p) mask drawn on the weights' device, divided by 1-p, multiplied in
        draw = AtenCall(aten.bernoulli_.float, (weights, 1.0 - dropout), {}, weights)
        records += [
            *_bernoulli(draw, ctx),
            record("dropout_scale", "elementwise", [scores], scores, op="div"),
            record("dropout", "elementwise", [scores, scores], scores, op="mul"),
        ]
    records.append(_record(ctx, name, "matmul", [scores, values], _spec(ctx, call.outputs[0])))
    return records
