"""Table entries for norm, softmax and pooling aten ops, forward and backward.

Each builder turns one aten call into ONE record of an existing kind (the tracer counts a
call as modeled once, whatever it returns); the arithmetic lives in ``neural_cost.costs``
except where a record is ``custom`` and the builder states the derived count. Conventions:

- Norm backward (``custom``), per row of L elements (E elements in all, P parameters):
  x̂ = (x-mean)·rstd recomputed, 2E (RMS: x·rstd, E); grad_input = rstd·(g - mean(g) -
  x̂·mean(g·x̂)) with g = dy·γ: Σg and Σg·x̂ over each row, two means, 4 per element = 7E
  (+E for g with a weight; RMS: 5E); grad_weight Σ dy·x̂ = 2E - P; grad_bias Σ dy = E - P.
  Batch norm in eval: grad_input = dy·γ·rstd, (1 + weight)·E + 2C to get rstd (C roots).
- Softmax backward (``custom``): y·(g - Σ g·y) and g - exp(y)·Σ g: 4L - 1 per row of L
  (log: L exponentials).
- Pooling: the ``pooling`` rule. PyTorch's max-pool backward scatters each gradient to the
  index its forward saved: 1 add per gradient element, reads the gradient and the indices,
  writes the whole input gradient (``custom``); avg-pool backward: 1 divide + k adds per
  gradient element. Adaptive pooling whose windows tile the input evenly is a ``pooling``
  record; uneven windows (start ⌊i·n/m⌋, end ⌈(i+1)·n/m⌉) are ``custom`` with the exact sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ...core.records import Operation, Shape
from .calls import _bound, _custom, _inputs, _ints, _numel
from .table import EMPTY_REASONS, AtenCall, TorchContext, lowers

# -- normalisation ----------------------------------------------------------------------------


def _present(*values: Any) -> list[torch.Tensor]:
    return [v for v in values if isinstance(v, torch.Tensor)]


@lowers("native_layer_norm", "layer_norm")
def _layer_norm(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    x = bound["input"]
    inputs = [x, *_present(bound.get("weight"), bound.get("bias"))]
    attrs = {"normalized_dims": len(bound["normalized_shape"])}
    outputs = call.outputs  # output, then mean and rstd (native_layer_norm)
    return [ctx.op(call, "layernorm", inputs, outputs[0], attrs=attrs, extra_outputs=outputs[1:])]


@lowers("_fused_rms_norm", "rms_norm")
def _rms_norm(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    inputs = [bound["input"], *_present(bound.get("weight"))]
    attrs = {"normalized_dims": len(bound["normalized_shape"])}
    outputs = call.outputs  # output, then rstd (_fused_rms_norm)
    return [ctx.op(call, "rmsnorm", inputs, outputs[0], attrs=attrs, extra_outputs=outputs[1:])]


@lowers("native_group_norm", "group_norm")
def _group_norm(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    inputs = [bound["input"], *_present(bound.get("weight"), bound.get("bias"))]
    groups = int(bound["group"] if "group" in bound else bound["num_groups"])
    outputs = call.outputs  # output, then mean and rstd (native_group_norm)
    return [ctx.op(call, "groupnorm", inputs, outputs[0], attrs={"groups": groups}, extra_outputs=outputs[1:])]


_BATCH_NORM_TRAINING = {"_native_batch_norm_legit_no_training": False, "_batch_norm_with_update": True,
                        "_batch_norm_with_update_functional": True}  # fmt: skip
_BATCH_NORMS = ("native_batch_norm", "batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
                "_native_batch_norm_legit_functional", "_batch_norm_with_update", "_batch_norm_with_update_functional",
                "_batch_norm_no_update", "cudnn_batch_norm", "miopen_batch_norm")  # fmt: skip


@lowers(*_BATCH_NORMS)
def _batch_norm(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """Inputs: x and the per-channel tensors present; outputs: y, then the saved statistics
    (and reserve, functional running stats). Training updates running stats in place:
    they are written too (extra outputs)."""
    bound = _bound(call)
    x = bound["input"]
    channels = int(x.shape[1])
    running = _present(bound.get("running_mean"), bound.get("running_var"))
    running = [t for t in running if t.numel() == channels]
    if call.name == "_batch_norm_no_update":
        training = not running  # without running statistics it normalises by the batch's own
    else:
        training = bool(bound.get("training", _BATCH_NORM_TRAINING.get(call.name, True)))
    affine = _present(bound.get("weight"), bound.get("bias"))
    per_channel = [t for t in (*affine, *running) if t.numel() == channels]
    outputs = call.outputs
    extra = list(outputs[1:])
    if training and "functional" not in call.name:
        extra += running
    attrs = {"training": training, "affine": bool(affine)}
    return [ctx.op(call, "batchnorm", [x, *per_channel], outputs[0], attrs=attrs, extra_outputs=extra)]


@lowers("instance_norm")
def _instance_norm(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # batch statistics per (sample, channel): a group norm with one channel per group
    bound = _bound(call)
    x = bound["input"]
    affine = _present(bound.get("weight"), bound.get("bias"))
    if bound.get("use_input_stats", True):
        attrs: dict[str, Any] = {"groups": int(x.shape[1])}
        return [ctx.op(call, "groupnorm", [x, *affine], call.outputs[0], attrs=attrs)]
    running = _present(bound.get("running_mean"), bound.get("running_var"))
    attrs = {"training": False, "affine": bool(affine)}
    return [ctx.op(call, "batchnorm", [x, *affine, *running], call.outputs[0], attrs=attrs)]


def norm_backward_flops(elements: int, params: int, mask: Sequence[bool], *, weight: bool, centred: bool = True) -> int:
    """FLOPs of a normalisation's backward over ``elements`` values sharing ``params``
    parameters (see the module docstring): x̂ 2E (RMS: E) when grad_input or grad_weight is
    asked for; grad_input 7E (RMS: 5E), + E with a weight; grad_weight 2E - P; grad_bias E - P."""
    grad_input, grad_weight = bool(mask[0]), len(mask) > 1 and bool(mask[1])
    grad_bias = len(mask) > 2 and bool(mask[2])
    flops = 0
    if grad_input or grad_weight:
        flops += (2 if centred else 1) * elements
    if grad_input:
        flops += (7 if centred else 5) * elements + (elements if weight else 0)
    if grad_weight:
        flops += 2 * elements - params
    if grad_bias:
        flops += elements - params
    return flops


def _mask(bound: dict[str, Any], size: int) -> list[bool]:
    mask = bound.get("output_mask")
    return [True] * size if mask is None else [bool(m) for m in mask]


def _norm_backward(
    call: AtenCall, ctx: TorchContext, flops: int, transcendentals: int = 0, unread: Sequence[str] = ("bias",)
) -> list[Operation]:
    outputs = call.outputs
    if not outputs:
        return []  # output_mask asked for nothing: see EMPTY_REASONS
    return _custom(call, ctx, _inputs(call, skip=unread), outputs, flops, transcendentals)


_NOTHING_ASKED = "output_mask asks for no gradient: nothing is computed"


@lowers("native_layer_norm_backward")
def _layer_norm_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    params = _numel(bound["normalized_shape"])
    weighted = isinstance(bound.get("weight"), torch.Tensor)
    flops = norm_backward_flops(bound["input"].numel(), params, _mask(bound, 3), weight=weighted)
    return _norm_backward(call, ctx, flops)


@lowers("_fused_rms_norm_backward")
def _rms_norm_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    params = _numel(bound["normalized_shape"])
    weighted = isinstance(bound.get("weight"), torch.Tensor)
    flops = norm_backward_flops(bound["input"].numel(), params, _mask(bound, 2), weight=weighted, centred=False)
    return _norm_backward(call, ctx, flops)


@lowers("native_group_norm_backward")
def _group_norm_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    weighted = isinstance(bound.get("weight"), torch.Tensor)
    flops = norm_backward_flops(bound["input"].numel(), int(bound["C"]), _mask(bound, 3), weight=weighted)
    return _norm_backward(call, ctx, flops)


@lowers("native_batch_norm_backward", "batch_norm_backward", "cudnn_batch_norm_backward", "miopen_batch_norm_backward")
def _batch_norm_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    x = bound["input"]
    elements, channels = x.numel(), int(x.shape[1])
    weighted = isinstance(bound.get("weight"), torch.Tensor)
    mask = _mask(bound, 3)
    if bool(bound.get("train", bound.get("update", True))):  # batch statistics; running ones unread
        flops = norm_backward_flops(elements, channels, mask, weight=weighted)
        return _norm_backward(call, ctx, flops, unread=("running_mean", "running_var"))
    # eval: rstd from the running variance (+eps, rsqrt per channel); grad_input = dy·γ·rstd
    flops = 2 * channels + (1 + weighted) * elements if mask[0] else 0
    if mask[1]:
        flops += 2 * elements + 2 * elements - channels  # x̂, then Σ dy·x̂
    if mask[2]:
        flops += elements - channels
    unread = ("save_mean", "save_invstd", "save_var")
    return _norm_backward(call, ctx, flops, channels if mask[0] else 0, unread=unread)


# -- softmax ----------------------------------------------------------------------------------


@lowers("_softmax", "_log_softmax", "softmax", "log_softmax")
def _softmax(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    x, out = bound["self"], call.outputs[0]
    if x.dim() == 0:  # a scalar is a row of one
        attrs = {"axis": 0, "log": "log" in call.name}
        return [ctx.op(call, "softmax", [(1,)], (1,), dtype=ctx.dtype(out), attrs=attrs)]
    attrs = {"axis": int(bound["dim"]), "log": "log" in call.name}
    return [ctx.op(call, "softmax", [x], out, attrs=attrs)]


@lowers("_safe_softmax")
def _safe_softmax(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """softmax, then rows whose inputs are all -inf set to 0 (attention's math path): 5L-2 per
    row as softmax, + L compares, L-1 ands and L selects = 8L-3 and L exponentials per row."""
    bound = _bound(call)
    x = bound["self"]
    length = int(x.shape[int(bound["dim"])]) if x.dim() else 1
    rows = x.numel() // length if length else 0
    return _custom(call, ctx, [x], call.outputs, rows * max(8 * length - 3, 0), rows * length)


@lowers("_softmax_backward_data", "_log_softmax_backward_data")
def _softmax_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # softmax: y·(g - Σ g·y); log_softmax: g - exp(y)·Σ g — 4L - 1 per row (log: L exps)
    bound = _bound(call)
    grad = bound["grad_output"]
    length = int(grad.shape[int(bound["dim"])]) if grad.dim() else 1
    rows = grad.numel() // length if length else 0
    transcendentals = rows * length if "log" in call.name else 0
    return _custom(call, ctx, _inputs(call), call.outputs, rows * max(4 * length - 1, 0), transcendentals)


# -- pooling ----------------------------------------------------------------------------------

_POOL_DIMS = {"max_pool1d": 1, "max_pool1d_with_indices": 1, "max_pool2d": 2, "max_pool2d_with_indices": 2,
              "max_pool3d": 3, "max_pool3d_with_indices": 3, "avg_pool1d": 1, "avg_pool2d": 2, "avg_pool3d": 3,
              "mkldnn_max_pool2d": 2, "mkldnn_max_pool3d": 3}  # fmt: skip


def _window_attrs(bound: dict[str, Any], ndim: int) -> dict[str, Any]:
    kernel = _ints(bound["kernel_size"], ndim, 1)
    return {
        "kernel": kernel,
        "stride": _ints(bound.get("stride"), ndim, 0) if bound.get("stride") else kernel,
        "padding": _ints(bound.get("padding"), ndim, 0),
        "dilation": _ints(bound.get("dilation"), ndim, 1),
        "ceil_mode": bool(bound.get("ceil_mode", False)),
    }


@lowers(*_POOL_DIMS)
def _pool(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    attrs = {"mode": "max" if call.name.startswith(("max", "mkldnn")) else "avg"}
    attrs |= _window_attrs(bound, _POOL_DIMS[call.name])
    outputs = call.outputs  # pooled values, then int64 indices (*_with_indices)
    return [ctx.op(call, "pooling", [bound["self"]], outputs[0], attrs=attrs, extra_outputs=outputs[1:])]


@lowers("max_pool2d_with_indices_backward", "max_pool3d_with_indices_backward", "adaptive_max_pool2d_backward",
        "adaptive_max_pool3d_backward")  # fmt: skip
def _max_pool_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # one add per incoming gradient at its saved index; x is passed for its shape only
    bound = _bound(call)
    grad = bound["grad_output"]
    return _custom(call, ctx, [grad, bound["indices"]], call.outputs, grad.numel())


@lowers("avg_pool2d_backward", "avg_pool3d_backward")
def _avg_pool_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # per incoming gradient: one divide by the window's divisor, one add per window position
    bound = _bound(call)
    grad = bound["grad_output"]
    window = _numel(_ints(bound["kernel_size"], 2 if "2d" in call.name else 3, 1))
    return _custom(call, ctx, [grad], call.outputs, grad.numel() * (window + 1))


def adaptive_windows(size: int, out: int) -> list[int]:
    """Window lengths of adaptive pooling along one dim: [⌊i·n/m⌋, ⌈(i+1)·n/m⌉)."""
    return [-(-(i + 1) * size // out) - (i * size // out) for i in range(out)]


def _adaptive(call: AtenCall, ctx: TorchContext, x: torch.Tensor, pooled: Shape, mode: str) -> list[Operation]:
    ndim = len(pooled)
    spatial = tuple(int(d) for d in x.shape[x.dim() - ndim :])
    outputs = call.outputs
    if all(out and size % out == 0 for size, out in zip(spatial, pooled, strict=True)):
        kernel = tuple(size // out for size, out in zip(spatial, pooled, strict=True))
        attrs = {"mode": mode, "kernel": kernel, "stride": kernel}
        return [ctx.op(call, "pooling", [x], outputs[0], attrs=attrs, extra_outputs=outputs[1:])]
    lead = _numel(x.shape[: x.dim() - ndim])
    window_sum = _numel([sum(adaptive_windows(s, o)) for s, o in zip(spatial, pooled, strict=True)])
    # avg: per output its window's adds and one divide = window elements; max: window - 1
    flops = lead * (window_sum if mode == "avg" else window_sum - _numel(pooled))
    return _custom(call, ctx, [x], outputs, flops)


@lowers("_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
        "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d")  # fmt: skip
def _adaptive_pool(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    x = bound["self"]
    pooled = tuple(int(d) for d in bound["output_size"])
    return _adaptive(call, ctx, x, pooled, "max" if "max" in call.name else "avg")


@lowers("_adaptive_avg_pool2d_backward", "_adaptive_avg_pool3d_backward")
def _adaptive_avg_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # per incoming gradient: one divide, one add per position of its window
    bound = _bound(call)
    grad, x = bound["grad_output"], bound["self"]
    ndim = 2 if "2d" in call.name else 3
    pooled = tuple(int(d) for d in grad.shape[grad.dim() - ndim :])
    spatial = tuple(int(d) for d in x.shape[x.dim() - ndim :])
    lead = _numel(grad.shape[: grad.dim() - ndim])
    window_sum = _numel([sum(adaptive_windows(s, o)) for s, o in zip(spatial, pooled, strict=True)])
    return _custom(call, ctx, [grad], call.outputs, lead * (window_sum + _numel(pooled)))


for _name in ("native_layer_norm_backward", "native_group_norm_backward", "_fused_rms_norm_backward",
              "native_batch_norm_backward", "batch_norm_backward"):  # fmt: skip
    EMPTY_REASONS[_name] = _NOTHING_ASKED
