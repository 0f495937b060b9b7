"""Table entries for pointwise, reduction, norm, softmax, pooling, random and optimizer aten ops,
and the free ones (views, metadata, allocation).

Each builder turns one aten call into ONE record of an existing kind (the tracer counts a
call as modeled once, whatever it returns); the arithmetic lives in ``neural_cost.costs``
except where a record is ``custom`` and the builder states the derived count. Conventions:

- One FLOP per element for each arithmetic, comparison, logical, bitwise, select, min/max,
  abs, sign and rounding op; a transcendental function (exp, log, sqrt, rsqrt, tanh, erf,
  sin...) is 1 FLOP and 1 transcendental. Composite functions count the ops of the
  formula their CPU kernel evaluates. Scalar operands (Python numbers) are not inputs; a
  0-d tensor operand is an input of shape (). ``.out`` and in-place (``add_``) variants count
  as the functional op: the written tensor is the output, an in-place ``self`` is also read.

  ========================  =====  ===  ========================================================
  op                        FLOPs  tr.  formula
  ========================  =====  ===  ========================================================
  add/sub/rsub (alpha ≠ 1)  1 (2)  0    x ± alpha·y
  div (rounding_mode)       1 (2)  0    x / y, then trunc or floor
  pow, integer y            by y   0    2: x·x, 3: x·x·x, -1: 1/x, -2: 1/(x·x), 1 and 0: 0
  pow, y = ±0.5             1      1    sqrt / rsqrt
  pow, other y or tensor y  3      2    exp(y·log x) (a scalar base: 2 and 1, its log is hoisted)
  clamp                     1-2    0    one max and/or one min
  sigmoid, silu             4      1    1/(1+exp(-x)); x/(1+exp(-x))
  gelu (erf) / (tanh)       5 / 9  1    0.5·x·(1+erf(x/√2)); 0.5·x·(1+tanh(√(2/π)·(x+0.044715·x³)))
  elu, selu, celu           7      1    x>0 ? s·x : s·a·(exp(x·i)-1)  (compare, 5 arithmetic, select)
  softplus                  6      2    β·x > t ? x : log1p(exp(β·x))/β
  mish                      4      3    x·tanh(log1p(exp x))
  hardswish / hardsigmoid   5 / 4  0    x·min(max(x+3,0),6)/6; min(max(x+3,0),6)/6
  leaky_relu / _prelu       3      0    compare, multiply, select
  hardtanh / threshold      2      0    max, min / compare, select
  lerp, addcmul, addcdiv    3      0    a + w·(b-a); s + v·a·b; s + v·a/b
  remainder, fmod           4      0    a - floor(a/b)·b (trunc for fmod)
  frac / floor_divide       2      0    x - trunc x; floor(a/b)
  isinf, isfinite           2      0    abs, compare
  nan_to_num                6      0    3 compares (nan, +inf, -inf), 3 selects
  logaddexp(2)              7      2    max + log1p(exp(-|a-b|))
  ========================  =====  ===  ========================================================

  Backward ops: threshold 2, hardtanh 4, leaky_relu 3, elu 7 (6 and no exp when
  ``is_result``), gelu 11 and 2 transcendentals (tanh form: 18 and 1), silu 9 (1), sigmoid and
  tanh 3, softplus 7 (1), mish 13 (4), hardswish 7, hardsigmoid 5, hard/softshrink 4,
  log_sigmoid 11 (1), _prelu_kernel 5, native_dropout 2 — each derived in ``_BACKWARD``.
- Fills (``fill_``, ``zero_``, ``zeros_like``, ``full``...) write their output with 0 FLOPs
  and read nothing; ``arange``/``linspace`` compute start + i·step: 2 per element.
- Reductions: n - 1 combining ops per output (the rule) plus the per-output work stated in
  ``_reduce_extra`` with L the reduced length: mean 1 divide; var two-pass 3L+1 on top
  (4L in all: mean L, centre L, square L, sum L-1, divide 1; PyTorch's CPU kernel runs
  Welford's update, about 6 per element); std +1 root; logsumexp 3L+1 and L+1
  transcendentals; 2-norm L squares + 1 root; 1-norm, inf-norm, 0-norm L; p-norm 4L+3
  with 2L+2 transcendentals (|x|^p and the root as exp/log).
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
- Random: ``rng`` records. CPU: mt19937 (PyTorch's CPUGeneratorImpl), 32 bits per element,
  64 where the CPU kernel draws a double (bernoulli_ with a float p, exponential_, float64
  outputs, integer ranges ≥ 2^28). CUDA: philox4x32-10. Shaping the bits: uniform 3
  (bits·2^-24, ·(to-from), +from); normal 10 and 2 transcendentals (Box-Muller: 19 per pair —
  two uniforms, 1-u, log, ·-2, sqrt, ·2π, cos, sin, 2 × r·, 2 × (·std+mean) — 9.5 rounded up);
  bernoulli 4 (uniform, compare); exponential 7 and 1 (uniform, neg, log1p, -1/λ·); random
  integers 2 (modulo, add); randperm 1 (a modulo per swap); dropout 6 (bernoulli, ·mask, ·scale).
- Optimizers: a ``_foreach_*`` call is ONE elementwise record over its lists flattened end to
  end (E = Σ elements; traffic and FLOPs identical to one record per tensor); a list mixing
  dtypes becomes one ``custom`` record over the tensors as they are. Fused Adam/AdamW per
  element (its CPU kernel): exp_avg lerp 3, exp_avg_sq 4, denominator 3 (sqrt, ÷bias
  correction, +eps), update 3 = 13 and 1 sqrt; +1 grad_scale divide, +1 maximize, weight decay
  +2 (Adam, into the gradient) or +1 (AdamW, scale the parameter), +1 amsgrad max. Fused SGD:
  update 2, weight decay +2, momentum +3 (not on the first step), nesterov +2.
- Losses: pointwise work per element (mse 2; bce 10 and 2 logs; bce with logits 9 and 2;
  smooth L1 / Huber 8) then one ``reduce`` (sum, and a mean's divide); ``nll_loss`` reads one
  log-probability per target, not the whole input (``custom``: ignore test, negate per target).
- ``.item()`` (``_local_scalar_dense``) is a one-element ``copy`` to the host.
- ``max``/``min`` are one packet: ``.other`` is the elementwise maximum, every other
  overload (``.default``, ``.dim`` with its indices) a reduction.
- Composite ops that dispatch whole under ``torch.inference_mode`` (``layer_norm``,
  ``batch_norm``, ``group_norm``, ``instance_norm``, ``rms_norm``, ``softmax``, ``dropout``,
  ``max_pool2d``, ``adaptive_avg_pool2d``, ``relu6``, ``reshape``, ``chunk``...) have entries too.

A builder returns an empty list only when the call does no work: it aliases its input
(``reshape``/``flatten`` of a viewable tensor, ``contiguous`` of a contiguous one, ``dropout``
when not training), its output_mask asks for nothing, or its tensor list is empty; the reason
is in ``EMPTY_REASONS``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ...core.records import Operation, Shape
from .table import EMPTY_REASONS, AtenCall, TorchContext, free, lowers

Counts = tuple[int, int]  # (FLOPs, transcendentals) per element

# -- call helpers ---------------------------------------------------------------------------

_SIGNATURES: dict[Any, tuple[tuple[str, ...], frozenset[str], dict[str, Any]]] = {}


def _signature(func: Any) -> tuple[tuple[str, ...], frozenset[str], dict[str, Any]]:
    """(argument names, names of out= arguments, defaults) of an op overload, cached."""
    signature = _SIGNATURES.get(func)
    if signature is None:
        arguments = func._schema.arguments
        names = tuple(a.name for a in arguments)
        outs = frozenset(a.name for a in arguments if a.is_out)
        defaults = {a.name: a.default_value for a in arguments if a.has_default_value()}
        signature = _SIGNATURES[func] = (names, outs, defaults)
    return signature


def _bound(call: AtenCall) -> dict[str, Any]:
    """Every argument by its schema name: defaults, then positional, then keyword values."""
    names, _, defaults = _signature(call.func)
    bound = dict(defaults)
    bound.update(zip(names, call.args, strict=False))
    bound.update(call.kwargs)
    return bound


def _inputs(call: AtenCall, skip: Sequence[str] = (), bound: dict[str, Any] | None = None) -> list[torch.Tensor]:
    """The tensors the call reads, in schema order: out= buffers, None and ``skip`` left out;
    an empty tensor is left out when the output is not (an unused buffer, e.g. log_sigmoid's on CUDA)."""
    names, outs, _ = _signature(call.func)
    bound = _bound(call) if bound is None else bound
    outputs = call.outputs
    nonempty = bool(outputs) and outputs[0].numel() > 0
    found = []
    for name in names:
        value = bound.get(name)
        if name in outs or name in skip or not isinstance(value, torch.Tensor):
            continue
        if nonempty and value.numel() == 0:
            continue
        found.append(value)
    return found


def _numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _ints(value: Any, ndim: int, default: int) -> tuple[int, ...]:
    """A per-dimension int argument: one int, an empty list (the default), one or ndim ints."""
    if value is None:
        return (default,) * ndim
    if isinstance(value, int):
        return (value,) * ndim
    items = tuple(int(v) for v in value)
    if not items:
        return (default,) * ndim
    return items * ndim if len(items) == 1 else items


def _axes(x: Shape, out: Shape, dim: Any) -> tuple[int, ...] | None:
    """Reduced axes, non-negative (None or an empty list reduces everything), or None when
    ``dim`` is not a list of ints that explains ``out`` (dim names): the rule then checks
    only that ``out`` divides ``x``."""
    rank = len(x)
    dims = [dim] if isinstance(dim, int) else list(dim or ())
    if not all(isinstance(d, int) for d in dims):
        return None
    axes = tuple(sorted({d % rank for d in dims})) if dims and rank else tuple(range(rank))
    dropped = tuple(s for i, s in enumerate(x) if i not in axes)
    kept = tuple(1 if i in axes else s for i, s in enumerate(x))
    return axes if out in (dropped, kept) else None


def _flat_op(
    call: AtenCall,
    ctx: TorchContext,
    kind: str,
    inputs: Sequence[tuple[Shape, str]],
    output: tuple[Shape, str],
    extra_outputs: Sequence[tuple[Shape, str]] = (),
    attrs: dict[str, Any] | None = None,
) -> Operation:
    """A record over shapes with their own dtypes (flattened tensor lists)."""
    return Operation(
        call.name,
        kind,
        tuple(shape for shape, _ in inputs),
        output[0],
        output[1],
        scope=ctx.scope,
        attrs=attrs or {},
        input_dtypes=tuple(dtype for _, dtype in inputs),
        extra_outputs=tuple(shape for shape, _ in extra_outputs),
        extra_output_dtypes=tuple(dtype for _, dtype in extra_outputs) if extra_outputs else None,
    )


def _custom(
    call: AtenCall,
    ctx: TorchContext,
    inputs: Sequence[Any],
    outputs: Sequence[torch.Tensor],
    flops: int | dict[str, int],
    transcendentals: int = 0,
) -> list[Operation]:
    """A ``custom`` record: ``flops`` charged to the compute dtype, or given per dtype."""
    attrs: dict[str, Any] = {"op": call.name, "flops": flops}
    if transcendentals:
        attrs["transcendentals"] = transcendentals
    return [ctx.op(call, "custom", inputs, outputs[0], attrs=attrs, extra_outputs=outputs[1:])]


# -- pointwise ------------------------------------------------------------------------------

_FIXED: dict[str, Counts] = {
    **dict.fromkeys(
        (
            "mul", "neg", "abs", "sign", "sgn", "signbit", "reciprocal", "maximum", "minimum", "fmax", "fmin",
            "floor", "ceil", "trunc", "relu", "clamp_min", "clamp_max", "copysign", "nextafter",
            "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
            "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
            "bitwise_right_shift", "__and__", "__or__", "__xor__", "__lshift__", "__rshift__",
            "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "isnan", "isposinf", "isneginf",
            "fix", "square",
        ),
        (1, 0),
    ),
    **dict.fromkeys(
        (
            "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
            "tanh", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "atan2", "erf", "erfc",
            "erfinv", "lgamma", "digamma", "polygamma", "i0",
        ),
        (1, 1),
    ),
    "frac": (2, 0), "floor_divide": (2, 0), "heaviside": (2, 0), "isinf": (2, 0), "isfinite": (2, 0),
    "remainder": (4, 0), "fmod": (4, 0), "lerp": (3, 0), "addcmul": (3, 0), "addcdiv": (3, 0),
    "nan_to_num": (6, 0), "sigmoid": (4, 1), "silu": (4, 1), "mish": (4, 3), "softplus": (6, 2),
    "elu": (7, 1), "selu": (7, 1), "celu": (7, 1), "hardswish": (5, 0), "hardsigmoid": (4, 0),
    "hardtanh": (2, 0), "relu6": (2, 0), "threshold": (2, 0), "leaky_relu": (3, 0), "_prelu_kernel": (3, 0),
    "hardshrink": (4, 0), "softshrink": (6, 0), "log_sigmoid_forward": (6, 2),
    "log_sigmoid": (6, 2), "sinc": (5, 1), "hypot": (4, 1), "xlogy": (4, 1),
    "logaddexp": (7, 2), "logaddexp2": (7, 2),
}  # fmt: skip

_BACKWARD: dict[str, Counts] = {
    "threshold_backward": (2, 0),  # x <= t ? 0 : dy
    "hardtanh_backward": (4, 0),  # (x <= lo or x >= hi) ? 0 : dy
    "leaky_relu_backward": (3, 0),  # x > 0 ? dy : dy·slope
    "silu_backward": (9, 1),  # s = sigmoid(x) (4); dy·s·(1 + x·(1 - s)) (5)
    "sigmoid_backward": (3, 0),  # dy·(1 - y)·y
    "tanh_backward": (3, 0),  # dy·(1 - y²)
    "softplus_backward": (7, 1),  # z = exp(β·x); β·x > t ? dy : dy·z/(z + 1)
    "mish_backward": (13, 4),  # sigmoid (4, exp), tanh(softplus) (3: exp, log1p, tanh), dy·(t + x·s·(1 - t²)) (6)
    "hardswish_backward": (7, 0),  # x < -3 ? 0 : x <= 3 ? dy·(x/3 + 0.5) : dy (2 compares, 3 arithmetic, 2 selects)
    "hardsigmoid_backward": (5, 0),  # (-3 < x < 3) ? dy/6 : 0
    "hardshrink_backward": (4, 0),  # (-l <= x <= l) ? 0 : dy
    "softshrink_backward": (4, 0),
    "log_sigmoid_backward": (11, 1),  # z = exp(-|x|); dy·(max' - sign·z/(1 + z)) with 2 selects on x < 0
    "_prelu_kernel_backward": (5, 0),  # x > 0: dy or w·dy; dw: 0 or x·dy (compare, 2 multiplies, 2 selects)
    "native_dropout_backward": (2, 0),  # dy·mask·scale
}


def _alpha(bound: dict[str, Any]) -> int:
    alpha = bound.get("alpha", 1)
    return 0 if alpha is None or alpha == 1 else 1


def _pow_counts(bound: dict[str, Any]) -> Counts:
    base, exponent = bound.get("self"), bound.get("exponent")
    if not isinstance(base, (torch.Tensor, list, tuple)):
        return 2, 1  # scalar ** tensor: exp(y·log b), log b computed once
    if isinstance(exponent, (torch.Tensor, list, tuple)) or exponent is None:
        return 3, 2
    value = float(exponent)
    special = {2.0: (1, 0), 3.0: (2, 0), -1.0: (1, 0), -2.0: (2, 0), 0.5: (1, 1), -0.5: (1, 1), 1.0: (0, 0)}
    if value in special:
        return special[value]
    if value == 0.0:
        return 0, 0  # a fill with ones
    tensor = base if isinstance(base, torch.Tensor) else base[0]
    if value.is_integer() and not tensor.is_floating_point() and not tensor.is_complex():
        magnitude = int(abs(value))  # integer base: exponentiation by squaring
        return magnitude.bit_length() - 1 + magnitude.bit_count() - 1, 0
    return 3, 2


_DYNAMIC: dict[str, Callable[[dict[str, Any]], Counts]] = {
    "add": lambda b: (1 + _alpha(b), 0),
    "sub": lambda b: (1 + _alpha(b), 0),
    "rsub": lambda b: (1 + _alpha(b), 0),
    "div": lambda b: (1 if b.get("rounding_mode") is None else 2, 0),
    "pow": _pow_counts,
    "clamp": lambda b: (int(b.get("min") is not None) + int(b.get("max") is not None), 0),
    "round": lambda b: (3 if b.get("decimals", 0) else 1, 0),  # x·10^d, round, ÷10^d
    "gelu": lambda b: (9, 1) if b.get("approximate") == "tanh" else (5, 1),
    # erf form: cdf = 0.5·(1 + erf(x/√2)) 4, pdf = exp(-x²/2)/√(2π) 4, dy·(cdf + x·pdf) 3.
    # tanh form (the CPU kernel): x², x³, inner 3, tanh, 0.5·x, 1 + t, ·0.5, 1 - t² (2),
    # inner' 3, right 2, dy·(left + right) 2 = 18.
    "gelu_backward": lambda b: (18, 1) if b.get("approximate") == "tanh" else (11, 2),
    # is_result: dy·i·(y + s·a) on the negative side, no exp.
    "elu_backward": lambda b: (6, 0) if b.get("is_result") else (7, 1),
    "logit": lambda b: (3 if b.get("eps") is None else 5, 1),  # log(x/(1 - x)); eps: clamp (2)
    # dy / (x·(1 - x)); eps: +4 (2 compares, or, select)
    "logit_backward": lambda b: (3 if b.get("eps") is None else 7, 0),
}


def _base(name: str) -> str:
    """The functional name of an in-place packet: ``add_`` → ``add`` (``__and__`` stays)."""
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def pointwise_counts(name: str, bound: dict[str, Any]) -> Counts:
    """(FLOPs, transcendentals) per output element of pointwise op ``name`` (functional name)."""
    if name in _DYNAMIC:
        return _DYNAMIC[name](bound)
    if name in _FIXED:
        return _FIXED[name]
    return _BACKWARD[name]


def _packet_names(bases: Sequence[str]) -> list[str]:
    """Each base name and its in-place packet (``add_``) when this PyTorch has one."""
    names = []
    for base in bases:
        names.append(base)
        if hasattr(torch.ops.aten, base + "_"):
            names.append(base + "_")
    return names


def _elementwise(
    call: AtenCall, ctx: TorchContext, counts: Counts, inputs: Sequence[Any] | None = None
) -> list[Operation]:
    outputs = call.outputs
    attrs: dict[str, Any] = {"op": call.name, "flops_per_element": counts[0]}
    if counts[1]:
        attrs["transcendentals_per_element"] = counts[1]
    ins = _inputs(call) if inputs is None else inputs
    return [ctx.op(call, "elementwise", ins, outputs[0], attrs=attrs, extra_outputs=outputs[1:])]


_POINTWISE = (*_FIXED, *_DYNAMIC, *_BACKWARD)


@lowers(*_packet_names(tuple(dict.fromkeys(_POINTWISE))))
def _pointwise(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    return _elementwise(call, ctx, pointwise_counts(_base(call.name), bound), _inputs(call, bound=bound))


@lowers("prelu")
def _prelu(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # x > 0 ? x : w·x (compare, multiply, select); one weight per channel (dim 1) or one for all
    x, weight = call.args[0], call.args[1]
    per_channel = (weight.numel(),) + (1,) * max(x.dim() - 2, 0) if weight.numel() > 1 else ()
    return _elementwise(call, ctx, (3, 0), inputs=[x, per_channel])


@lowers("glu")
def _glu(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # a·sigmoid(b) over the two halves of x along dim: sigmoid 4 + multiply 1
    out = call.outputs[0]
    half = ctx.shape(out)
    return _elementwise(call, ctx, (5, 1), inputs=[half, half])


@lowers("glu_backward")
def _glu_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # per gradient element: s = sigmoid(b) 4; da = dy·s 1; db = dy·a·s·(1 - s) 4
    grad = call.args[0]
    return _custom(call, ctx, _inputs(call), call.outputs, 9 * grad.numel(), grad.numel())


# -- fills and creation -----------------------------------------------------------------------

_FILLS = ("zero", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones",
          "new_full", "scalar_tensor")  # fmt: skip


@lowers(*_packet_names(_FILLS))
def _fill(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _elementwise(call, ctx, (0, 0), inputs=[])


@lowers("fill", "fill_")
def _fill_value(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    value = _bound(call).get("value")
    if isinstance(value, torch.Tensor):  # fill from a 0-d tensor: one value read, the output written
        return [ctx.op(call, "copy", [value], call.outputs[0], attrs={"op": call.name})]
    return _elementwise(call, ctx, (0, 0), inputs=[])


@lowers("arange", "linspace")
def _arange(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _elementwise(call, ctx, (2, 0), inputs=[])  # start + i·step (0-d start/end tensors: scalars)


@lowers("_local_scalar_dense")
def _item(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # .item(): one element copied to the host (a synchronisation on an accelerator)
    tensor = call.args[0]
    return [ctx.op(call, "copy", [tensor], (), dtype=ctx.dtype(tensor), attrs={"op": call.name})]


# -- reductions -----------------------------------------------------------------------------


def _norm_extra(order: Any, length: int) -> Counts:
    """(FLOPs, transcendentals) per output of a vector p-norm beyond the L-1 combining ops."""
    p = 2.0 if order is None else float(order)
    if p == 2.0:
        return length + 1, 1  # L squares, one root
    if p in (1.0, 0.0, math.inf, -math.inf):
        return length, 0  # L abs (or != 0 tests)
    return 4 * length + 3, 2 * length + 2  # |x| L, |x|^p as exp(p·log) 3L; root s^(1/p) 3


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
        return _elementwise(call, ctx, (1, 0))
    return _reduction(call, ctx, call.name, _bound(call).get("dim"))


def _by_dtype(
    ctx: TorchContext, tensors: Sequence[torch.Tensor], flops: Callable[[torch.Tensor], int]
) -> dict[str, int]:
    """FLOPs summed per dtype over a tensor list (a list may mix dtypes)."""
    total: dict[str, int] = {}
    for tensor in tensors:
        total[ctx.dtype(tensor)] = total.get(ctx.dtype(tensor), 0) + flops(tensor)
    return total


@lowers("_foreach_norm")
def _foreach_norm(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    tensors, order = list(call.args[0]), _bound(call).get("ord")
    if not tensors:
        return []  # see EMPTY_REASONS
    flops = _by_dtype(ctx, tensors, lambda t: max(t.numel() - 1, 0) + _norm_extra(order, t.numel())[0])
    transcendentals = sum(_norm_extra(order, t.numel())[1] for t in tensors)
    return _custom(call, ctx, tensors, call.outputs, flops, transcendentals)


@lowers("_foreach_max")
def _foreach_max(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    tensors = list(call.args[0])
    if not tensors:
        return []  # see EMPTY_REASONS
    return _custom(call, ctx, tensors, call.outputs, _by_dtype(ctx, tensors, lambda t: max(t.numel() - 1, 0)))


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


@lowers("nll_loss_forward", "nll_loss2d_forward")
def _nll_loss(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """Reads one log-probability per target (and its class weight), never the whole input:
    those are inputs of the target's size. Per target: ignore_index test, negate, ·weight;
    sum: + n-1; mean: + n-1 (loss) + n-1 (weights) + 1 divide."""
    bound = _bound(call)
    x, target, weight = bound["self"], bound["target"], bound.get("weight")
    rows = target.numel()
    weighted = isinstance(weight, torch.Tensor)
    flops = (2 + weighted) * rows
    reduction = bound.get("reduction", _MEAN)
    if reduction == _SUM:
        flops += max(rows - 1, 0)
    elif reduction == _MEAN:
        flops += 2 * max(rows - 1, 0) + 1
    picked = (rows,)
    inputs: list[Any] = [picked, target] + ([picked] if weighted else [])
    attrs = {"op": call.name, "flops": flops, "compute_dtype": ctx.dtype(x)}
    outputs = call.outputs
    return [ctx.op(call, "custom", inputs, outputs[0], dtype=ctx.dtype(x), attrs=attrs, extra_outputs=outputs[1:])]


@lowers("nll_loss_backward", "nll_loss2d_backward")
def _nll_loss_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # the input gradient is zeroed and one value written per target: ignore test, negate,
    # ·dy (+ ·weight, + ÷total_weight for a mean)
    bound = _bound(call)
    rows = bound["target"].numel()
    weighted = isinstance(bound.get("weight"), torch.Tensor)
    per_row = 3 + weighted + (bound.get("reduction") == _MEAN)
    return _custom(call, ctx, _inputs(call, skip=("self",)), call.outputs, per_row * rows)


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
    call: AtenCall, ctx: TorchContext, kind: str, counts: Counts, *, reads_target: bool = True
) -> list[Operation]:
    """One record for a per-tensor list op: every list flattened end to end, a lone tensor
    operand (a 0-d scalar) kept as it is. A target list that is only written (``zero_``,
    ``copy_``) is not read. Mixed dtypes or operands that broadcast: one record over the
    tensors as they are (``custom``, or ``copy`` for a copy)."""
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
    attrs: dict[str, Any] = {"op": call.name}
    if uniform:
        if kind == "elementwise":
            attrs["flops_per_element"] = counts[0]
            if counts[1]:
                attrs["transcendentals_per_element"] = counts[1]
        total, name = (elements,), ctx.dtype(targets[0])
        inputs = [(total, name)] * len(read) + [((), ctx.dtype(s)) for s in singles]
        return [_flat_op(call, ctx, kind, inputs, (total, name), attrs=attrs)]
    tensors = [t for v in read for t in v] + singles
    if kind == "copy":
        return [ctx.op(call, "copy", tensors, targets[0], attrs=attrs, extra_outputs=targets[1:])]
    flops = _by_dtype(ctx, targets, lambda t: counts[0] * t.numel())
    return _custom(call, ctx, tensors, targets, flops, counts[1] * elements)


_FOREACH = _packet_names([f"_foreach_{name}" for name in _FOREACH_POINTWISE])


@lowers(*_FOREACH)
def _foreach(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    counts = pointwise_counts(_base(call.name.removeprefix("_foreach_")), _bound(call))
    return _foreach_record(call, ctx, "elementwise", counts)


@lowers("_foreach_zero_")
def _foreach_zero(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _foreach_record(call, ctx, "elementwise", (0, 0), reads_target=False)


@lowers("_foreach_copy_", "_foreach_copy")
def _foreach_copy(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _foreach_record(call, ctx, "copy", (0, 0), reads_target=False)


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


# -- conditionally free ------------------------------------------------------------------------


def _shares_storage(a: Any, b: Any) -> bool:
    try:
        return bool(a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):  # storage-less tensors: a view only if the same object
        return a is b


@lowers("reshape", "flatten", "unflatten", "contiguous", "resolve_conj", "resolve_neg")
def _maybe_copy(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    source, out = call.args[0], call.outputs[0]
    if _shares_storage(source, out):
        return []  # a view of the input: see EMPTY_REASONS
    return [ctx.op(call, "copy", [source], out, attrs={"op": call.name})]


for _name in ("reshape", "flatten", "unflatten"):
    EMPTY_REASONS[_name] = "the input's strides allow it: a view, no data moves (otherwise it copies, counted)"
EMPTY_REASONS["contiguous"] = "already contiguous: returns the input itself (otherwise a copy, counted)"
EMPTY_REASONS["resolve_conj"] = "no lazy conjugate bit: returns the input itself (otherwise a copy, counted)"
EMPTY_REASONS["resolve_neg"] = "no lazy negation bit: returns the input itself (otherwise a copy, counted)"
for _name in _packet_names(_DROPOUTS):
    EMPTY_REASONS[_name] = "not training (or p = 0): returns the input itself"
for _name in ("native_layer_norm_backward", "native_group_norm_backward", "_fused_rms_norm_backward",
              "native_batch_norm_backward", "batch_norm_backward"):  # fmt: skip
    EMPTY_REASONS[_name] = _NOTHING_ASKED
for _name in (*_FOREACH, "_foreach_zero_", "_foreach_copy_", "_foreach_copy", "_foreach_norm", "_foreach_max",
              "_fused_adam_", "_fused_adamw_",
              "_fused_adam", "_fused_adamw", "_fused_sgd_", "_fused_sgd"):  # fmt: skip
    EMPTY_REASONS[_name] = "an empty tensor list: nothing runs"


# -- free: views, metadata, allocation ----------------------------------------------------------

_VIEW = "a view: the output aliases the input's storage with new sizes/strides"
FREE_REASONS: dict[str, str] = {
    "view": _VIEW,
    "_unsafe_view": "a view the autograd graph does not track; aliases the input's storage",
    "_reshape_alias": _VIEW,
    "view_as": _VIEW,
    "t": "a view with the two dims' strides swapped",
    "transpose": "a view with two dims' strides swapped",
    "permute": "a view with the dims' strides reordered",
    "movedim": "a view with the dims' strides reordered",
    "swapaxes": "a view with two dims' strides swapped",
    "swapdims": "a view with two dims' strides swapped",
    "expand": "a view that repeats elements with stride 0",
    "expand_as": "a view that repeats elements with stride 0",
    "alias": "another tensor over the same storage",
    "detach": "the same storage without autograd history",
    "lift_fresh": "marks a constant as a fresh input; returns it unchanged",
    "unsqueeze": "a view with a size-1 dim inserted",
    "squeeze": "a view with size-1 dims dropped",
    "select": "a view at an offset with one dim dropped",
    "slice": "a view at an offset with a new size and stride",
    "narrow": "a view at an offset with a new size",
    "split": "views of consecutive slices",
    "split_with_sizes": "views of consecutive slices",
    "chunk": "views of consecutive slices",
    "unsafe_split": "views of consecutive slices (split without autograd view tracking)",
    "unsafe_split_with_sizes": "views of consecutive slices (split without autograd view tracking)",
    "unsafe_chunk": "views of consecutive slices (chunk without autograd view tracking)",
    "tensor_split": "views of consecutive slices",
    "unbind": "views of each index along a dim",
    "as_strided": "a view with explicit sizes, strides and offset",
    "diagonal": "a view of the diagonal (offset and summed strides)",
    "unfold": "a view of sliding windows (a new dim with the step's stride)",
    "view_as_real": "a view of complex values as (real, imag) pairs",
    "view_as_complex": "a view of (real, imag) pairs as complex values",
    "real": "a view of the real parts",
    "imag": "a view of the imaginary parts",
    "conj": "sets a lazy conjugate bit on a view; no data moves",
    "positive": "unary plus: returns the input itself",
    "_conj": "sets a lazy conjugate bit on a view; no data moves",
    "_neg_view": "sets a lazy negation bit on a view; no data moves",
    "detach_": "drops autograd history in place: metadata only",
    "squeeze_": "changes sizes/strides in place: metadata only",
    "unsqueeze_": "changes sizes/strides in place: metadata only",
    "t_": "changes sizes/strides in place: metadata only",
    "transpose_": "changes sizes/strides in place: metadata only",
    "as_strided_": "changes sizes/strides in place: metadata only",
    "sym_size": "reads a size: metadata",
    "sym_stride": "reads a stride: metadata",
    "sym_numel": "reads the element count: metadata",
    "sym_storage_offset": "reads the storage offset: metadata",
    "size": "reads a size: metadata",
    "stride": "reads a stride: metadata",
    "numel": "reads the element count: metadata",
    "dim": "reads the rank: metadata",
    "is_contiguous": "reads the layout: metadata",
    "is_same_size": "compares two tensors' sizes: metadata",
    "_assert_tensor_metadata": "checks sizes, strides and dtype: metadata",
    "empty": "allocates without writing: no bytes moved",
    "empty_like": "allocates without writing: no bytes moved",
    "empty_strided": "allocates without writing: no bytes moved",
    "empty_permuted": "allocates without writing: no bytes moved",
    "new_empty": "allocates without writing: no bytes moved",
    "new_empty_strided": "allocates without writing: no bytes moved",
}
for _name, _reason in FREE_REASONS.items():
    free(_reason, _name)
