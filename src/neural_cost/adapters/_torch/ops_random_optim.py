"""Table entries for random-number, dropout and optimizer (``_foreach_*``, fused Adam/AdamW/SGD)
aten ops.

Each builder turns one aten call into ONE record (the tracer counts a call as modeled once,
whatever it returns); the arithmetic lives in ``neural_cost.costs``, the builder states only
per-element counts. Conventions:

- Random: ``rng`` records. CPU: mt19937 (PyTorch's CPUGeneratorImpl), 32 bits per element,
  64 where the CPU kernel draws a double (bernoulli_ with a float p, exponential_, float64
  outputs, integer ranges ≥ 2^28). CUDA: philox4x32-10. Shaping the bits: uniform 3
  (bits·2^-24, ·(to-from), +from); normal 10 and 2 transcendentals (Box-Muller: 19 per pair —
  two uniforms, 1-u, log, ·-2, sqrt, ·2π, cos, sin, 2 × r·, 2 × (·std+mean) — 9.5 rounded up);
  bernoulli 4 (uniform, compare); exponential 7 and 1 (uniform, neg, log1p, -1/λ·); random
  integers 2 (modulo, add); randperm 1 (a modulo per swap); dropout 6 (bernoulli, ·mask, ·scale).
- Optimizers: a ``_foreach_*`` call is ONE elementwise record over its lists flattened end to
  end (E = Σ elements; traffic and FLOPs identical to one record per tensor), naming the
  catalog entry of its pointwise op as the single-tensor op does; a list mixing
  dtypes becomes one ``foreach_elementwise`` record over the tensors as they are. Fused Adam/AdamW per
  element (its CPU kernel): exp_avg lerp 3, exp_avg_sq 4, denominator 3 (sqrt, ÷bias
  correction, +eps), update 3 = 13 and 1 sqrt; +1 grad_scale divide, +1 maximize, weight decay
  +2 (Adam, into the gradient) or +1 (AdamW, scale the parameter), +1 amsgrad max. Fused SGD:
  update 2, weight decay +2, momentum +3 (not on the first step), nesterov +2.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ...core.records import Operation
from .calls import Counts, _bound, _flat_op, _inputs, _packet_names, _signature
from .ops_pointwise import _base, pointwise_entry
from .table import EMPTY_REASONS, AtenCall, TorchContext, lowers

# -- random numbers ---------------------------------------------------------------------------

_GENERATORS = {"cpu": "mt19937", "cuda": "philox4x32-10"}
_UNIFORM, _NORMAL, _BERNOULLI, _EXPONENTIAL, _INTEGER, _DROPOUT = (3, 0), (10, 2), (4, 0), (7, 1), (2, 0), (6, 0)
_CPU_RANGE_32 = 1 << 28  # the CPU's uniform_int_from_to draws 64 bits from this range up (CUDA: 2^32)


def _rng(
    call: AtenCall,
    ctx: TorchContext,
    counts: Counts,
    *,
    inputs: Sequence[Any] = (),
    wide: bool | None = None,
    double_on_cpu: bool = False,
) -> list[Operation]:
    """An ``rng`` record: 64 bits per element when ``wide`` (default: float64 outputs) or when
    the CPU kernel draws a double (``double_on_cpu``, whose shaping FLOPs are then float64)."""
    outputs = call.outputs
    out = outputs[0]
    cpu = out.device.type == "cpu"
    if wide is None:
        wide = out.dtype == torch.float64
    attrs: dict[str, Any] = {"op": call.name, "bits_per_element": 64 if wide or (cpu and double_on_cpu) else 32}
    generator = _GENERATORS.get(out.device.type)
    if generator is not None:
        attrs["generator"] = generator
    if cpu and double_on_cpu:
        attrs["compute_dtype"] = "float64"
    if counts[0]:
        attrs["flops_per_element"] = counts[0]
    if counts[1]:
        attrs["transcendentals_per_element"] = counts[1]
    return [ctx.op(call, "rng", list(inputs), out, attrs=attrs, extra_outputs=outputs[1:])]


@lowers("rand", "rand_like", "uniform_")
def _uniform(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _rng(call, ctx, _UNIFORM)  # a *_like or in-place self gives only its shape


@lowers("randn", "randn_like", "normal", "normal_")
def _normal(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # normal.Tensor_* read their mean/std tensors; normal_ overwrites self without reading it
    return _rng(call, ctx, _NORMAL, inputs=_inputs(call, skip=("self",)))


@lowers("bernoulli", "bernoulli_")
def _bernoulli(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    p = bound["self"] if call.name == "bernoulli" and call.overload == "default" else bound.get("p")
    if isinstance(p, torch.Tensor):  # per-element probabilities, drawn in p's precision
        return _rng(call, ctx, _BERNOULLI, inputs=[p], double_on_cpu=p.dtype == torch.float64)
    return _rng(call, ctx, _BERNOULLI, double_on_cpu=True)  # bernoulli_distribution<double>


@lowers("exponential_")
def _exponential(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _rng(call, ctx, _EXPONENTIAL, double_on_cpu=True)  # exponential_distribution<double>


@lowers("randint", "randint_like", "random_")
def _random_integers(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    out = call.outputs[0]
    high, low = bound.get("high", bound.get("to")), bound.get("low", bound.get("from"))
    if isinstance(high, int):
        span = high - (low if isinstance(low, int) else 0)
        wide = span >= (_CPU_RANGE_32 if out.device.type == "cpu" else 1 << 32)
    else:  # the dtype's own range
        wide = out.dtype in (torch.int64, torch.float64)
    return _rng(call, ctx, _INTEGER, wide=wide)


@lowers("randperm")
def _randperm(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _rng(call, ctx, (1, 0))  # one draw modulo the remaining length per swap


@lowers("native_dropout")
def _native_dropout(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    x, outputs = bound["input"], call.outputs
    if bound.get("train") is False:  # the input cloned and an all-true mask: data moves, no draws
        return [ctx.op(call, "copy", [x], outputs[0], attrs={"op": call.name}, extra_outputs=outputs[1:])]
    return _rng(call, ctx, _DROPOUT, inputs=[x])  # output, then the boolean mask


_DROPOUTS = ("dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout")


@lowers(*_packet_names(_DROPOUTS))
def _dropout(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """The composite dropouts (dispatched whole under inference_mode): the input itself when
    not training; else one fused pass of a bernoulli draw, ·mask, ·scale (the CPU path writes
    the mask and reads it back, more traffic than this; alpha dropout's affine counted alike)."""
    bound = _bound(call)
    if not bound.get("train") or not bound.get("p"):
        return []  # see EMPTY_REASONS
    return _rng(call, ctx, _DROPOUT, inputs=[bound["input"]], wide=call.outputs[0].device.type == "cpu")


# -- optimizers -------------------------------------------------------------------------------

_FOREACH_POINTWISE = ("add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow", "addcmul",
                      "addcdiv", "lerp", "sqrt", "rsqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "neg",
                      "abs", "sign", "reciprocal", "sigmoid", "tanh", "sin", "cos", "tan", "sinh", "cosh", "asin",
                      "acos", "atan", "erf", "erfc", "lgamma", "ceil", "floor", "round", "trunc", "frac")  # fmt: skip


def _tensor_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and isinstance(value[0], torch.Tensor)


def _foreach_record(
    call: AtenCall, ctx: TorchContext, kind: str, entry: dict[str, Any], *, reads_target: bool = True
) -> list[Operation]:
    """One record for a per-tensor list op: every list flattened end to end, a lone tensor
    operand (a 0-d scalar) kept as it is. A target list that is only written (``zero_``,
    ``copy_``) is not read. Mixed dtypes or operands that broadcast: one record over the
    tensors as they are (``foreach_elementwise``, or ``copy`` for a copy). ``entry`` names
    the pointwise catalog entry that counts it (``op``) and its parameters."""
    names, outs, _ = _signature(call.func)
    bound = _bound(call)
    lists = [list(bound[n]) for n in names if n not in outs and _tensor_list(bound.get(n))]
    singles = [bound[n] for n in names if n not in outs and isinstance(bound.get(n), torch.Tensor)]
    targets = list(call.out) if _tensor_list(call.out) else lists[0] if lists else []
    if not targets:
        return []  # see EMPTY_REASONS
    read = lists if reads_target or targets is not lists[0] else lists[1:]
    sizes, dtype = [t.numel() for t in targets], targets[0].dtype
    uniform = all(t.dtype == dtype for t in targets) and all(s.numel() == 1 for s in singles)
    uniform = uniform and all([t.numel() for t in v] == sizes and all(t.dtype == dtype for t in v) for v in read)
    elements = sum(sizes)
    attrs: dict[str, Any] = {"op": call.name} if kind == "copy" else dict(entry)
    if uniform:
        total, name = (elements,), ctx.dtype(targets[0])
        inputs = [(total, name)] * len(read) + [((), ctx.dtype(s)) for s in singles]
        return [_flat_op(call, ctx, kind, inputs, (total, name), attrs=attrs)]
    tensors = [t for v in read for t in v] + singles
    if kind == "copy":
        return [ctx.op(call, "copy", tensors, targets[0], attrs=attrs, extra_outputs=targets[1:])]
    attrs["lists"] = len(read)
    return [ctx.op(call, "foreach_elementwise", tensors, targets[0], attrs=attrs, extra_outputs=targets[1:])]


_FOREACH = _packet_names([f"_foreach_{name}" for name in _FOREACH_POINTWISE])


@lowers(*_FOREACH)
def _foreach(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    name, params = pointwise_entry(_base(call.name.removeprefix("_foreach_")), _bound(call))
    return _foreach_record(call, ctx, "elementwise", {"op": name, **params})


@lowers("_foreach_zero_")
def _foreach_zero(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _foreach_record(call, ctx, "elementwise", {"op": "fill"}, reads_target=False)


@lowers("_foreach_copy_", "_foreach_copy")
def _foreach_copy(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _foreach_record(call, ctx, "copy", {}, reads_target=False)


def adam_flops(*, adamw: bool, weight_decay: bool, amsgrad: bool, maximize: bool, grad_scale: bool) -> int:
    """FLOPs per parameter element of PyTorch's fused Adam/AdamW (see the module docstring)."""
    decay = (1 if adamw else 2) if weight_decay else 0
    return 13 + decay + int(amsgrad) + int(maximize) + int(grad_scale)


def sgd_flops(
    *, weight_decay: bool, momentum: bool, first_step: bool, nesterov: bool, maximize: bool, grad_scale: bool
) -> int:
    """FLOPs per parameter element of PyTorch's fused SGD: p - lr·g (2); weight decay g += λ·p
    (2); momentum b = μ·b + (1-d)·g (3, a copy on the first step); nesterov g += μ·b (2)."""
    flops = 2 + 2 * weight_decay + int(maximize) + int(grad_scale)
    if momentum:
        flops += (0 if first_step else 3) + 2 * nesterov
    return flops


def _fused_step(
    call: AtenCall, ctx: TorchContext, reads: Sequence[str], writes: Sequence[str], counts: Counts
) -> list[Operation]:
    """One elementwise record over the flattened parameters: the parameter list is read and
    written, the named state lists read and/or written; step tensors and lr are scalars."""
    bound = _bound(call)
    params = list(bound["self"])
    if not params:
        return []  # see EMPTY_REASONS
    total, dtype = (sum(p.numel() for p in params),), ctx.dtype(params[0])
    attrs: dict[str, Any] = {"op": call.name, "flops_per_element": counts[0]}
    if counts[1]:
        attrs["transcendentals_per_element"] = counts[1]
    inputs = [(total, dtype)] * (1 + len(reads))
    extra = [(total, dtype)] * len(writes)
    return [_flat_op(call, ctx, "elementwise", inputs, (total, dtype), extra, attrs=attrs)]


@lowers("_fused_adam_", "_fused_adamw_", "_fused_adam", "_fused_adamw")
def _fused_adam(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """Reads param, grad, exp_avg, exp_avg_sq (and max_exp_avg_sq); writes param, exp_avg,
    exp_avg_sq (and max_exp_avg_sq; the unscaled grad with a grad_scale)."""
    bound = _bound(call)
    amsgrad, scaled = bool(bound.get("amsgrad")), isinstance(bound.get("grad_scale"), torch.Tensor)
    flops = adam_flops(
        adamw="adamw" in call.name,
        weight_decay=bool(bound.get("weight_decay")),
        amsgrad=amsgrad,
        maximize=bool(bound.get("maximize")),
        grad_scale=scaled,
    )
    state = ["exp_avgs", "exp_avg_sqs"] + (["max_exp_avg_sqs"] if amsgrad else [])
    return _fused_step(call, ctx, ["grads", *state], [*state, *(["grads"] if scaled else [])], (flops, 1))


@lowers("_fused_sgd_", "_fused_sgd")
def _fused_sgd(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    momentum, first = bool(bound.get("momentum")), bool(bound.get("is_first_step"))
    scaled = isinstance(bound.get("grad_scale"), torch.Tensor)
    flops = sgd_flops(
        weight_decay=bool(bound.get("weight_decay")),
        momentum=momentum,
        first_step=first,
        nesterov=bool(bound.get("nesterov")),
        maximize=bool(bound.get("maximize")),
        grad_scale=scaled,
    )
    reads = ["grads"] + (["momentum_buffer_list"] if momentum and not first else [])
    writes = (["momentum_buffer_list"] if momentum else []) + (["grads"] if scaled else [])
    return _fused_step(call, ctx, reads, writes, (flops, 0))


for _name in _packet_names(_DROPOUTS):
    EMPTY_REASONS[_name] = "not training (or p = 0): returns the input itself"
for _name in (*_FOREACH, "_foreach_zero_", "_foreach_copy_", "_foreach_copy", "_foreach_norm", "_foreach_max",
              "_fused_adam_", "_fused_adamw_",
              "_fused_adam", "_fused_adamw", "_fused_sgd_", "_fused_sgd"):  # fmt: skip
    EMPTY_REASONS[_name] = "an empty tensor list: nothing runs"
