"""Table entries for PyTorch's recurrent kernels: LSTM/GRU/RNN stacks and cells, mkldnn,
cuDNN and the fused cells, forward and backward.

Each builder turns one executed aten call into records of existing kinds, permuting
PyTorch's layouts into the ones the rules expect; the FLOP and byte arithmetic stays in
``neural_cost.costs``. Conventions beyond ARCHITECTURE.md, each stated where it is used:

- Recurrent kernels (LSTM/GRU/RNN, mkldnn, cuDNN, fused cells): per layer and direction an
  input-projection ``matmul`` over all time steps at once, a hidden ``matmul`` per step
  (``count`` = the steps) and ``elementwise`` gate records per step; see ``_gate_records``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .common import Ops, Spec, _arguments, _is_tensor, _matmul, _record, _spec
from .table import AtenCall, TorchContext, lowers

# --- recurrent layers -------------------------------------------------------------------

_RNN_MODES = {0: "rnn_relu", 1: "rnn_tanh", 2: "lstm", 3: "gru"}  # cuDNN's and oneDNN's numbering
_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


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
    """The elementwise work of ``count`` time steps of ``rows`` rows, each record naming the
    catalog entry that counts it from the catalog's own sigmoid, tanh, relu, add and mul
    (``_biased``: b_ih and b_hh added too):

    - LSTM: gates (rows, 4H) = x-part + h-part (+ b_ih + b_hh): 1 per gate element, 3 with
      biases (``lstm_gates``); cell from the summed gates: i, f, o = sigmoid, g = tanh,
      c' = f·c + i·g, h = o·tanh(c'): 3·4 + 2·1 + 4 = 18 per unit (``lstm_cell``). 30H per
      row and step with biases, 22H without; 5H transcendentals.
    - GRU: r, z (rows, 2H) = sigmoid(x-part + h-part (+ b_ih + b_hh)): 5 per element, 7 with
      biases (``gru_gates``); candidate and state: n = tanh(x_n (+ b_in) + r·(h_n (+ b_hn))),
      h' = n + z·(h - n): 6 per unit, 8 with biases. 22H with biases, 16H without; 3H
      transcendentals.
    - RNN: act(x-part + h-part (+ b_ih + b_hh)): 2 per unit, 4 with biases (``rnn_tanh``,
      ``rnn_relu``; tanh transcendental, relu not).
    """
    hidden, spec = layer.hidden, layer.spec
    biases = 2 if layer.biases else 0
    biased = "_biased" if layer.biases else ""  # the catalog entry with b_ih and b_hh added
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
                attrs={"op": f"lstm_gates{biased}"},
                count=count,
            ),
            _record(
                ctx,
                f"{name}.cell",
                "elementwise",
                [unit] * 5,  # c and the four summed gates
                unit,
                attrs={"op": "lstm_cell"},
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
                attrs={"op": f"gru_gates{biased}"},
                count=count,
            ),
            _record(
                ctx,
                f"{name}.candidate",
                "elementwise",
                [unit, unit] + [spec(hidden)] * biases + [unit] * 3,  # x_n, h_n, biases, r, z, h
                unit,
                attrs={"op": f"gru_candidate{biased}"},
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
            attrs={"op": layer.mode + biased},  # rnn_tanh or rnn_relu
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
    """Per step: the gate backward (``rnn_gate_backward``), an LSTM projection's gradient
    (rows, P)@(P, H), and the recurrent gradient (rows, G·H)@(G·H, R). Then the input
    gradient (N, G·H)@(G·H, I) and, with ``weights``, the weight gradients (G·H, N)@(N, I)
    and (G·H, N)@(N, R) (and (P, N)@(N, H)) and the bias gradient, a ``reduce`` over the N
    rows (b_hh's gradient equals b_ih's: written twice)."""
    spec, gates, hidden = layer.spec, layer.gates, layer.hidden
    lstm = layer.mode == "lstm"
    records: Ops = []
    for batch, count in layer.steps:
        unit = spec(batch, hidden)
        records.append(
            _record(
                ctx,
                f"{name}.gate_backward",
                "rnn_gate_backward",
                [spec(batch, gates), unit] + ([unit] if lstm else []),  # saved gates, dh, c
                spec(batch, gates),
                attrs={"mode": layer.mode},
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
    """The fused cells' backward: the gate backward of one step (``rnn_gate_backward``)
    reading the saved workspace and incoming gradients, writing the gate and state
    gradients, and with ``has_bias`` the bias gradients as a ``reduce`` over the batch."""
    a = _arguments(call)
    mode = "lstm" if "lstm" in call.name else "gru"
    outputs = [t for t in call.outputs if t.numel() > 0]
    saved = (a.get("grad_hy"), a.get("grad_cy"), a.get("cx"), a.get("cy"), a["workspace"])
    reads = [_spec(ctx, t) for t in saved if _is_tensor(t)]
    has_bias = bool(a["has_bias"])
    n_bias = (1 if mode == "lstm" else 2) if has_bias else 0
    grads = outputs[: len(outputs) - n_bias]
    records = [
        _record(
            ctx,
            f"{call.name}",
            "rnn_gate_backward",
            reads,
            _spec(ctx, grads[0]),
            attrs={"mode": mode},
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
