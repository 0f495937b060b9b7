"""Table entries for norm, softmax and pooling aten ops, forward and backward.

Each builder turns one aten call into ONE record (the tracer counts a call as modeled once,
whatever it returns); the arithmetic lives in ``neural_cost.costs``: ``layernorm``,
``rmsnorm``, ``groupnorm``, ``batchnorm`` and ``norm_backward``; ``softmax``,
``safe_softmax`` and ``softmax_backward``; ``pooling`` (adaptive pooling whose windows tile
the input evenly too), ``adaptive_pooling`` (uneven windows) and ``pooling_gradient``
(PyTorch's max-pool backward scatters each gradient to the index its forward saved; the
average-pool backwards spread it over its window). ``weight_norm``'s interface and its backward are
``elementwise`` records over the weight, their per-element work stated (``_weight_norm``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ...core.records import Operation, Shape
from .calls import _bound, _elementwise, _inputs, _ints
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


def _mask(bound: dict[str, Any], size: int) -> dict[str, bool]:
    """output_mask as the ``norm_backward`` attrs grad_input, grad_weight (and grad_bias)."""
    mask = bound.get("output_mask")
    values = [True] * size if mask is None else [bool(m) for m in mask]
    return dict(zip(("grad_input", "grad_weight", "grad_bias"), values, strict=False))


def _norm_backward(
    call: AtenCall, ctx: TorchContext, attrs: dict[str, Any], unread: Sequence[str] = ("bias",)
) -> list[Operation]:
    """A ``norm_backward`` record: dy, x, then the statistics and weight the kernel reads."""
    outputs = call.outputs
    if not outputs:
        return []  # output_mask asked for nothing: see EMPTY_REASONS
    bound = _bound(call)
    attrs = {"op": call.name, **attrs, "affine": isinstance(bound.get("weight"), torch.Tensor)}
    return [
        ctx.op(call, "norm_backward", _inputs(call, skip=unread), outputs[0], attrs=attrs, extra_outputs=outputs[1:])
    ]


_NOTHING_ASKED = "output_mask asks for no gradient: nothing is computed"


@lowers("native_layer_norm_backward")
def _layer_norm_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    attrs = {"norm": "layer", "normalized_dims": len(bound["normalized_shape"]), **_mask(bound, 3)}
    return _norm_backward(call, ctx, attrs)


@lowers("_fused_rms_norm_backward")
def _rms_norm_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    attrs = {"norm": "rms", "normalized_dims": len(bound["normalized_shape"]), **_mask(bound, 2), "grad_bias": False}
    return _norm_backward(call, ctx, attrs)


@lowers("native_group_norm_backward")
def _group_norm_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    return _norm_backward(call, ctx, {"norm": "group", **_mask(bound, 3)})


@lowers("native_batch_norm_backward", "batch_norm_backward", "cudnn_batch_norm_backward", "miopen_batch_norm_backward")
def _batch_norm_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """Training reads the batch statistics saved by the forward (running ones unread); eval
    reads the running variance and computes rstd from it."""
    bound = _bound(call)
    training = bool(bound.get("train", bound.get("update", True)))
    attrs = {"norm": "batch", "training": training, **_mask(bound, 3)}
    unread = ("running_mean", "running_var") if training else ("save_mean", "save_invstd", "save_var")
    return _norm_backward(call, ctx, attrs, unread)


@lowers("_weight_norm_interface")
def _weight_norm(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """``torch.nn.utils.weight_norm``'s w = v · g / ‖v‖, the norm over every dim but ``dim`` (a wav2vec2
    positional convolution's): one ``elementwise`` record over v and g, 3 FLOPs per element of v (a square,
    an add into its norm, the scale's multiply); each norm's root and g's divide, two per norm (v.shape[dim]
    of them, against v's elements), are left out. The norms are its second output."""
    return _elementwise(call, ctx, (3, 0), inputs=[_bound(call)["v"], _bound(call)["g"]])


@lowers("_weight_norm_interface_backward")
def _weight_norm_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """Its backward (grad_w, v, g, norms → grad_v, grad_g): per element of v, a = Σ grad_w · v (2: a
    multiply and an add) and grad_v = g/‖v‖ · (grad_w − v · a/‖v‖²) (3: two multiplies and a subtract),
    5 in all; the per-norm scalars are left out. grad_g is its second output."""
    bound = _bound(call)
    inputs = [bound[name] for name in ("grad_w", "saved_v", "saved_g", "saved_norms")]
    return _elementwise(call, ctx, (5, 0), inputs=inputs)


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


def _row_inputs(tensors: Sequence[torch.Tensor]) -> list[Any]:
    """Tensors as the row rules read them: a scalar is a row of one."""
    return [t if t.dim() else (1,) for t in tensors]


@lowers("_safe_softmax")
def _safe_softmax(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """softmax, then rows whose inputs are all -inf set to 0 (attention's math path)."""
    bound = _bound(call)
    x, out = bound["self"], call.outputs[0]
    attrs = {"op": call.name, "axis": int(bound["dim"]) if x.dim() else 0}
    output = out if out.dim() else (1,)
    return [ctx.op(call, "safe_softmax", _row_inputs([x]), output, dtype=ctx.dtype(out), attrs=attrs)]


@lowers("_softmax_backward_data", "_log_softmax_backward_data")
def _softmax_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    grad, out = bound["grad_output"], call.outputs[0]
    attrs = {"op": call.name, "axis": int(bound["dim"]) if grad.dim() else 0, "log": "log" in call.name}
    inputs = _row_inputs(_inputs(call))
    output = out if out.dim() else (1,)
    return [ctx.op(call, "softmax_backward", inputs, output, dtype=ctx.dtype(out), attrs=attrs)]


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
    # reads the gradient and the saved indices; x is passed for its shape only
    bound = _bound(call)
    attrs = {"op": call.name, "mode": "max", "spatial_dims": 3 if "3d" in call.name else 2}
    grad, outputs = bound["grad_output"], call.outputs
    return [ctx.op(call, "pooling_gradient", [grad, bound["indices"]], outputs[0], attrs=attrs)]


@lowers("avg_pool2d_backward", "avg_pool3d_backward")
def _avg_pool_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    ndim = 2 if "2d" in call.name else 3
    attrs = {"op": call.name, "mode": "avg", "spatial_dims": ndim, "kernel": _ints(bound["kernel_size"], ndim, 1)}
    return [ctx.op(call, "pooling_gradient", [bound["grad_output"]], call.outputs[0], attrs=attrs)]


def _adaptive(call: AtenCall, ctx: TorchContext, x: torch.Tensor, pooled: Shape, mode: str) -> list[Operation]:
    ndim = len(pooled)
    spatial = tuple(int(d) for d in x.shape[x.dim() - ndim :])
    outputs = call.outputs
    if all(out and size % out == 0 for size, out in zip(spatial, pooled, strict=True)):
        kernel = tuple(size // out for size, out in zip(spatial, pooled, strict=True))
        attrs: dict[str, Any] = {"mode": mode, "kernel": kernel, "stride": kernel}
        return [ctx.op(call, "pooling", [x], outputs[0], attrs=attrs, extra_outputs=outputs[1:])]
    attrs = {"op": call.name, "mode": mode, "spatial_dims": ndim}
    return [ctx.op(call, "adaptive_pooling", [x], outputs[0], attrs=attrs, extra_outputs=outputs[1:])]


@lowers("_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
        "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d")  # fmt: skip
def _adaptive_pool(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    x = bound["self"]
    pooled = tuple(int(d) for d in bound["output_size"])
    return _adaptive(call, ctx, x, pooled, "max" if "max" in call.name else "avg")


@lowers("_adaptive_avg_pool2d_backward", "_adaptive_avg_pool3d_backward")
def _adaptive_avg_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    attrs = {"op": call.name, "mode": "adaptive_avg", "spatial_dims": 2 if "2d" in call.name else 3}
    return [ctx.op(call, "pooling_gradient", [bound["grad_output"]], call.outputs[0], attrs=attrs)]


for _name in ("native_layer_norm_backward", "native_group_norm_backward", "_fused_rms_norm_backward",
              "native_batch_norm_backward", "batch_norm_backward"):  # fmt: skip
    EMPTY_REASONS[_name] = _NOTHING_ASKED
