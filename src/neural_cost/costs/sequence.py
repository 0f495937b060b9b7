"""Sequence-model kernels the basic rules do not cover: fused attention's backward,
multi-head attention's bias-and-rescale of q, k, v, and a recurrent cell's gate backward."""

from __future__ import annotations

import math

from ..core.errors import ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation
from .choice import choice_attr
from .registry import cost_rule, default_cost, expect_inputs, where

#: The attrs of an ``attention_backward`` record that say which query-key pairs run.
_PAIR_ATTRS = ("causal", "skips_masked", "causal_alignment", "causal_blocks")


@cost_rule(
    "attention_backward",
    "q (B,Hq,Sq,D), k, v (B,Hkv,Sk,Dv), then what the kernel reads (dO, O, log-sum-exp, mask): "
    "2·B·Hq·pairs·(3D+2Dv) FLOPs (recompute S = QKᵀ, dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q) over the "
    "pairs the forward executes (same attrs as attention: causal, skips_masked, causal_alignment, "
    "causal_blocks); dense_flops over all Sq·Sk pairs; one exponential per executed pair",
)
def attention_backward(op: Operation) -> OpCost:
    """A flash-style backward: 2.5× the forward's FLOPs when D = Dv (FlashAttention-2's
    figure); ``dense_flops`` is FlopCounterMode's sdpa backward formula. The softmax's
    elementwise gradient (dS = P·(dP - rowsum(dO·O))) is not counted, as in the forward,
    but its exponentials are. Every input is read once and dQ, dK, dV (and a bias
    gradient) written once."""
    expect_inputs(op, 3, 12, "q, k, v[, grad_out, out, log-sum-exp, mask...]")
    q, k, v = op.inputs[:3]
    if len(q) != 4 or len(v) != 4:
        raise ShapeError(f"{where(op)} needs q, k, v as (batch, heads, sequence, head_dim); got {q}, {k}, {v}")
    attrs = {name: op.attrs[name] for name in _PAIR_ATTRS if name in op.attrs}
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


#: Gates per hidden unit, and gradient FLOPs per hidden unit, batch row and time step of the
#: gate backward (the matmuls are separate records). LSTM 24: combine the output and
#: recurrent gradients (1), recompute tanh(c') (1), do = dh·tanh(c') (1), dc = dc_next +
#: dh·o·(1 - tanh²) (5), di, dg, df, dc_prev (4 multiplies), three sigmoid derivatives
#: s·(1-s)·x (9), one tanh derivative (1-g²)·x (3). GRU 17: combine (1), dn = dh·(1-z) (2),
#: dz = dh·(h-n) (2), dh·z (1), tanh derivative (3), dr = da_n·hn (1), da_n·r (1), two sigmoid
#: derivatives (6). RNN: combine (1) + tanh derivative (3) = 4, or relu's select (1) = 2.
RNN_GATE_BACKWARD = {"lstm": (4, 24), "gru": (3, 17), "rnn_tanh": (1, 4), "rnn_relu": (1, 2)}


@cost_rule(
    "rnn_gate_backward",
    "one time step of a recurrent cell's pointwise backward, (saved gates and states, incoming gradients) → "
    "gate gradients (B, G·H) (+ state gradients): per hidden unit and row, lstm 24 (and 1 tanh), gru 17, "
    "rnn_tanh 4, rnn_relu 2 (attrs['mode'])",
)
def rnn_gate_backward(op: Operation) -> OpCost:
    """The recomputed tanh(c') of an LSTM is its one transcendental per unit; the sigmoid and
    tanh derivatives are written from the saved activations (s·(1-s), 1-t²), no exponentials.
    The derivation of each count is in ``RNN_GATE_BACKWARD``'s comment."""
    mode = choice_attr(op, "mode", tuple(RNN_GATE_BACKWARD), "lstm")
    gates, per_unit = RNN_GATE_BACKWARD[mode]
    expect_inputs(op, 1, 6, "saved gates or workspace, incoming gradients, states")
    if len(op.output) != 2 or op.output[1] % gates:
        raise ShapeError(f"{where(op)} output={op.output} must be the gate gradients (batch, {gates}·hidden)")
    units = op.output[0] * (op.output[1] // gates)
    return default_cost(op, per_unit * units, units if mode == "lstm" else 0)
