"""Sequence-model kernels the basic rules do not cover: fused attention's backward,
multi-head attention's bias-and-rescale of q, k, v, and a recurrent cell's gate backward."""

from __future__ import annotations

import math
from typing import Literal

from ..core.errors import ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation
from .catalog import PerElement, composed
from .linalg import CausalAlignment
from .registry import NonNegative, Positive, cost_rule, default_cost, expect_inputs, where


@cost_rule(
    "attention_backward",
    "q (B,Hq,Sq,D), k, v (B,Hkv,Sk,Dv), then what the kernel reads (dO, O, log-sum-exp, mask): "
    "2·B·Hq·pairs·(3D+2Dv) FLOPs (recompute S = QKᵀ, dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q) over the "
    "pairs the forward executes (same attrs as attention: causal, skips_masked, causal_alignment, "
    "causal_blocks); dense_flops over all Sq·Sk pairs; one exponential per executed pair",
)
def attention_backward(
    op: Operation,
    *,
    causal: bool = False,
    skips_masked: bool = False,
    causal_alignment: CausalAlignment = "top_left",
    causal_blocks: tuple[Positive, Positive] | None = None,
    window: tuple[int, ...] | None = None,
    sliding_window_length: NonNegative | None = None,
    dropout_p: float = 0.0,
    varlen_upper_bound: bool = False,
) -> OpCost:
    """A flash-style backward: 2.5× the forward's FLOPs when D = Dv (FlashAttention-2's
    figure); ``dense_flops`` is FlopCounterMode's sdpa backward formula. The softmax's
    elementwise gradient (dS = P·(dP - rowsum(dO·O))) is not counted, but its exponentials
    are. Unlike the forward, no decomposition equals this kernel: it recomputes S = QKᵀ,
    which JAX's autodiff of the einsum/softmax path saves instead (4 matmuls, not 5), so
    the backward stays FlashAttention-2's matmul count. Every input is read once and dQ, dK, dV (and a bias
    gradient) written once. It takes the forward's attributes: those that say which pairs
    run are passed to the forward's rule, the rest (a window, dropout, a variable-length
    bound) are kept for readers, as on the forward."""
    expect_inputs(op, 3, 12, "q, k, v[, grad_out, out, log-sum-exp, mask...]")
    q, k, v = op.inputs[:3]
    if len(q) != 4 or len(v) != 4:
        raise ShapeError(f"{where(op)} needs q, k, v as (batch, heads, sequence, head_dim); got {q}, {k}, {v}")
    attrs: dict[str, object] = {"causal": causal, "skips_masked": skips_masked, "causal_alignment": causal_alignment}
    if causal_blocks is not None:
        attrs["causal_blocks"] = causal_blocks
    # The forward's rule validates the shapes and counts the executed pairs (its transcendentals).
    forward = Operation(op.name, "attention", (q, k, v), (*q[:3], v[3]), op.input_dtype(0), attrs=attrs)
    pairs = forward.cost.transcendentals  # Σ over the B·Hq heads of the executed query-key pairs
    per_pair = 2 * (3 * q[3] + 2 * v[3])
    dense = math.prod(q[:3]) * k[2] * per_pair
    return default_cost(op, pairs * per_pair, pairs, dense_flops=dense)


@cost_rule(
    "qkv_bias_rescale",
    "qkv (*rows, 3D) and its bias (3D,) → q, k, v (any head layout, as one output or three): the bias "
    "added to all three and q scaled by 1/√head_dim, 3D adds + D multiplies = 4D per row",
)
def qkv_bias_rescale(op: Operation) -> OpCost:
    """PyTorch's ``_transform_bias_rescale_qkv`` (native multi-head attention): the split into
    heads is a layout change written with the result, not counted as arithmetic."""
    expect_inputs(op, 2, 2, "qkv (*rows, 3D), bias (3D,)")
    qkv, bias = op.inputs
    if not qkv or qkv[-1] % 3:
        raise ShapeError(f"{where(op)}: qkv {qkv} must end in 3·embed_dim")
    if math.prod(bias) != qkv[-1]:
        raise ShapeError(f"{where(op)}: bias {bias} must hold one value per qkv feature ({qkv[-1]})")
    written = math.prod(op.output) + sum(math.prod(s) for s in op.extra_outputs)
    if written != math.prod(qkv):
        raise ShapeError(
            f"{where(op)}: q, k, v {(op.output, *op.extra_outputs)} hold {written} elements; qkv {qkv} has "
            f"{math.prod(qkv)}"
        )
    return default_cost(op, 4 * math.prod(qkv[:-1]) * (qkv[-1] // 3))


#: Gates per hidden unit, and the gate backward per hidden unit, batch row and time step (the
#: matmuls are separate records), counted as the catalog's own ops: a sigmoid's derivative is
#: sigmoid_backward dy·(1 - s)·s (3), tanh's tanh_backward dy·(1 - t²) (3), relu's
#: threshold_backward (compare, select: 2), each from the saved activation (no exponential).
RNN_GATE_BACKWARD: dict[str, tuple[int, PerElement]] = {
    "lstm": (
        4,
        composed(
            "combine the output and recurrent gradients (add), recompute tanh(c'), do = dh·tanh(c') (mul), "
            "dc = dc_next + tanh_backward(dh·o) (mul, tanh_backward, add), di, dg, df, dc_prev (4 mul), "
            "the derivatives of sigmoid i, f, o and tanh g",
            (2, "add"),
            (6, "mul"),
            (1, "tanh"),
            (2, "tanh_backward"),
            (3, "sigmoid_backward"),
        ),
    ),
    "gru": (
        3,
        composed(
            "combine (add), dn = dh·(1 - z) (sub, mul), dz = dh·(h - n) (sub, mul), dh·z (mul), da_n = "
            "tanh_backward, dr = da_n·h_n (mul), da_n·r (mul), the derivatives of sigmoid r and z",
            (1, "add"),
            (2, "sub"),
            (5, "mul"),
            (1, "tanh_backward"),
            (2, "sigmoid_backward"),
        ),
    ),
    "rnn_tanh": (1, composed("combine (add), the derivative of tanh", (1, "add"), (1, "tanh_backward"))),
    "rnn_relu": (1, composed("combine (add), the derivative of relu", (1, "add"), (1, "threshold_backward"))),
}


@cost_rule(
    "rnn_gate_backward",
    "one time step of a recurrent cell's pointwise backward, (saved gates and states, incoming gradients) → "
    "gate gradients (B, G·H) (+ state gradients): per hidden unit and row, "
    + ", ".join(f"{mode} {entry.flops}" for mode, (_, entry) in RNN_GATE_BACKWARD.items())
    + " FLOPs (attrs['mode']; the lstm's recomputed tanh(c') its 1 transcendental)",
)
def rnn_gate_backward(op: Operation, *, mode: Literal["lstm", "gru", "rnn_tanh", "rnn_relu"] = "lstm") -> OpCost:
    """The recomputed tanh(c') of an LSTM is its one transcendental per unit; the sigmoid and
    tanh derivatives are written from the saved activations (s·(1-s), 1-t²), no exponentials.
    Each count is derived from the catalog in ``RNN_GATE_BACKWARD`` (its ``why``)."""
    gates, per_unit = RNN_GATE_BACKWARD[mode]
    expect_inputs(op, 1, 6, "saved gates or workspace, incoming gradients, states")
    if len(op.output) != 2 or op.output[1] % gates:
        raise ShapeError(f"{where(op)} output={op.output} must be the gate gradients (batch, {gates}·hidden)")
    units = op.output[0] * (op.output[1] // gates)
    return default_cost(op, per_unit.flops * units, per_unit.transcendentals * units)
