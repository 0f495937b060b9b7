"""Table entries for reduction and loss aten ops.

Each builder turns one aten call into ONE record (the tracer counts a call as modeled once,
whatever it returns); the arithmetic lives in ``neural_cost.costs``, the builder states only
the per-output work a ``reduce`` record cannot know. Conventions:

- Reductions: n - 1 combining ops per output (the rule) plus the per-output work stated in
  ``_reduce_extra`` with L the reduced length: mean 1 divide; var two-pass 3L+1 on top
  (4L in all: mean L, centre L, square L, sum L-1, divide 1; PyTorch's CPU kernel runs
  Welford's update, about 6 per element); std +1 root; logsumexp 3L+1 and L+1
  transcendentals; 2-norm L squares + 1 root; 1-norm, inf-norm, 0-norm L; p-norm 4L+3
  with 2L+2 transcendentals (|x|^p and the root as exp/log).
- Losses: pointwise work per element (mse 2; bce 10 and 2 logs; bce with logits 9 and 2;
  smooth L1 / Huber 8) then one ``reduce`` (sum, and a mean's divide); ``nll_loss`` reads one
  log-probability per target, not the whole input (``nll_loss``, ``nll_loss_backward``).
- ``_foreach_norm``/``_foreach_max``: one ``foreach_reduce`` record over the list.
- ``max``/``min`` are one packet: ``.other`` is the elementwise maximum, every other
  overload (``.default``, ``.dim`` with its indices) a reduction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from ...core.records import Operation
from .calls import Counts, _axes, _bound, _elementwise, _inputs
from .table import AtenCall, TorchContext, lowers

# -- reductions -----------------------------------------------------------------------------


def _norm_work(order: Any) -> tuple[Counts, Counts]:
    """Work of a vector p-norm beyond the n-1 combining ops, as ((FLOPs, transcendentals) per
    element, (FLOPs, transcendentals) per output)."""
    p = 2.0 if order is None else float(order)
    if p == 2.0:
        return (1, 0), (1, 1)  # a square per element, one root
    if p in (1.0, 0.0, math.inf, -math.inf):
        return (1, 0), (0, 0)  # abs (or != 0 test) per element
    return (4, 2), (3, 2)  # |x|, |x|^p as exp(p·log) per element; root s^(1/p) as exp/log


def _norm_extra(order: Any, length: int) -> Counts:
    """(FLOPs, transcendentals) per output of a vector p-norm over ``length`` elements."""
    (flops, transcendentals), (root, root_transcendentals) = _norm_work(order)
    return flops * length + root, transcendentals * length + root_transcendentals


def _reduce_extra(name: str, bound: dict[str, Any], x: torch.Tensor, length: int) -> Counts:
    if name == "mean":
        return 1, 0
    if name in ("var", "var_mean"):
        return 3 * length + 1, 0
    if name in ("std", "std_mean"):
        return 3 * length + 2, 1
    if name == "logsumexp":
        return 3 * length + 1, length + 1
    if name in ("norm", "linalg_vector_norm"):
        return _norm_extra(bound.get("p", bound.get("ord")), length)
    if name == "count_nonzero" or (name in ("any", "all") and x.dtype != torch.bool):
        return length, 0  # one != 0 test per element
    if name == "nansum":
        return 2 * length, 0  # isnan and select per element
    if name == "nanmean":
        return 3 * length, 0  # isnan, select, counting adds L-1, divide
    if name == "aminmax":
        return length - 1, 0  # the second running extreme
    return 0, 0


_REDUCTIONS = ("sum", "nansum", "mean", "nanmean", "amax", "amin", "prod", "var", "std", "var_mean", "std_mean",
               "any", "all", "logsumexp", "count_nonzero", "norm", "linalg_vector_norm", "aminmax")  # fmt: skip


def _reduction(call: AtenCall, ctx: TorchContext, name: str, dim: Any) -> list[Operation]:
    x = call.args[0]
    outputs = call.outputs
    out = outputs[0]
    axes = _axes(ctx.shape(x), ctx.shape(out), dim)
    length = x.numel() // out.numel() if out.numel() else 0
    flops, transcendentals = _reduce_extra(name, _bound(call), x, length)
    compute = ctx.dtype(out if x.dtype == torch.bool else x)  # summing flags is integer work
    attrs: dict[str, Any] = {"op": call.name, "compute_dtype": compute}
    if axes is not None:
        attrs["axes"] = axes
    if flops:
        attrs["flops_per_output"] = flops
    if transcendentals:
        attrs["transcendentals_per_output"] = transcendentals
    return [ctx.op(call, "reduce", [x], out, attrs=attrs, extra_outputs=outputs[1:])]


@lowers(*_REDUCTIONS)
def _reduce(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _reduction(call, ctx, call.name, _bound(call).get("dim"))


@lowers("max", "min")
def _max_min(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """``max``/``min`` share one packet: ``.other``/``.out`` are the binary elementwise max, the
    rest reduce (``.dim`` with an int64 indices output, charged as comparisons of the input)."""
    if call.overload in ("other", "out"):
        return _elementwise(call, ctx, "maximum" if call.name == "max" else "minimum")
    return _reduction(call, ctx, call.name, _bound(call).get("dim"))


def _foreach_reduce(call: AtenCall, ctx: TorchContext, per_element: Counts, per_output: Counts) -> list[Operation]:
    """One ``foreach_reduce`` record: every tensor of the list reduced to one output."""
    tensors = list(call.args[0])
    if not tensors:
        return []  # see EMPTY_REASONS
    attrs: dict[str, Any] = {"op": call.name}
    names = ("flops_per_element", "transcendentals_per_element", "flops_per_output", "transcendentals_per_output")
    attrs |= {name: value for name, value in zip(names, (*per_element, *per_output), strict=True) if value}
    outputs = call.outputs
    return [ctx.op(call, "foreach_reduce", tensors, outputs[0], attrs=attrs, extra_outputs=outputs[1:])]


@lowers("_foreach_norm")
def _foreach_norm(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _foreach_reduce(call, ctx, *_norm_work(_bound(call).get("ord")))


@lowers("_foreach_max")
def _foreach_max(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _foreach_reduce(call, ctx, (0, 0), (0, 0))


# -- losses -----------------------------------------------------------------------------------

_MEAN, _SUM = 1, 2  # at::Reduction


def _loss(call: AtenCall, ctx: TorchContext, per_element: Counts) -> list[Operation]:
    """A pointwise loss: elementwise with reduction='none', else one reduce over all elements
    (the per-element work, the sum's adds, and a mean's divide)."""
    bound = _bound(call)
    reduction = bound.get("reduction", _MEAN)
    if reduction not in (_MEAN, _SUM):
        return _elementwise(call, ctx, per_element)
    x = call.args[0]
    flops = per_element[0] * x.numel() + (reduction == _MEAN)
    attrs: dict[str, Any] = {"op": call.name, "axes": tuple(range(x.dim())), "flops_per_output": flops}
    if per_element[1]:
        attrs["transcendentals_per_output"] = per_element[1] * x.numel()
    return [ctx.op(call, "reduce", _inputs(call), call.outputs[0], attrs=attrs)]


@lowers("mse_loss")
def _mse_loss(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _loss(call, ctx, (2, 0))  # (x - t)²


@lowers("binary_cross_entropy")
def _bce(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # -(t·max(log x, -100) + (1 - t)·max(log(1 - x), -100)) [·w]: 10 and 2 logs
    weighted = isinstance(_bound(call).get("weight"), torch.Tensor)
    return _loss(call, ctx, (10 + weighted, 2))


@lowers("binary_cross_entropy_with_logits")
def _bce_logits(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # (1 - t)·x - log_sigmoid(x): 2 + 6 + 1, log_sigmoid's exp and log1p; pos_weight
    # scales the log term by (pw - 1)·t + 1: +4; a weight +1
    bound = _bound(call)
    flops = 9 + 4 * isinstance(bound.get("pos_weight"), torch.Tensor) + isinstance(bound.get("weight"), torch.Tensor)
    return _loss(call, ctx, (flops, 2))


@lowers("smooth_l1_loss", "huber_loss")
def _smooth_l1(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _loss(call, ctx, (8, 0))  # z = |x - t|; z < β ? 0.5·z²/β : z - 0.5·β


@lowers("mse_loss_backward", "binary_cross_entropy_backward", "smooth_l1_loss_backward", "huber_loss_backward")
def _loss_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # mse: 2·(x - t)·dy 3; bce: dy·(x - t)/max((1 - x)·x, eps) 6 (+1 weight); smooth_l1/huber:
    # d = x - t, |d| < β, d/β or sign(d), select, ·dy = 7; a mean divides by n: +1
    bound = _bound(call)
    base = {"mse_loss_backward": 3, "binary_cross_entropy_backward": 6}.get(call.name, 7)
    weighted = isinstance(bound.get("weight"), torch.Tensor)
    return _elementwise(call, ctx, (base + weighted + (bound.get("reduction") == _MEAN), 0))


_REDUCTION_NAMES = {0: "none", _MEAN: "mean", _SUM: "sum"}


@lowers("nll_loss_forward", "nll_loss2d_forward")
def _nll_loss(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """Reads one log-probability per target (and its class weight), never the whole input:
    those are inputs of the target's size, the input's dtype (see the ``nll_loss`` rule)."""
    bound = _bound(call)
    x, target, weight = bound["self"], bound["target"], bound.get("weight")
    picked = (target.numel(),)
    inputs: list[Any] = [picked, target] + ([picked] if isinstance(weight, torch.Tensor) else [])
    attrs = {"op": call.name, "reduction": _REDUCTION_NAMES[bound.get("reduction", _MEAN)]}
    outputs = call.outputs
    return [ctx.op(call, "nll_loss", inputs, outputs[0], dtype=ctx.dtype(x), attrs=attrs, extra_outputs=outputs[1:])]


@lowers("nll_loss_backward", "nll_loss2d_backward")
def _nll_loss_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # the input gradient is zeroed and one value written per target (see ``nll_loss_backward``)
    bound = _bound(call)
    attrs = {"op": call.name, "reduction": _REDUCTION_NAMES[bound.get("reduction", _MEAN)]}
    outputs = call.outputs
    inputs = _inputs(call, skip=("self",))
    return [ctx.op(call, "nll_loss_backward", inputs, outputs[0], attrs=attrs, extra_outputs=outputs[1:])]
