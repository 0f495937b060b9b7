"""Table entries for pointwise aten ops (and the backward of activations), fills and creation.

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
- ``.item()`` (``_local_scalar_dense``) is a one-element ``copy`` to the host.
- Composite ops that dispatch whole under ``torch.inference_mode`` (``layer_norm``,
  ``batch_norm``, ``group_norm``, ``instance_norm``, ``rms_norm``, ``softmax``, ``dropout``,
  ``max_pool2d``, ``adaptive_avg_pool2d``, ``relu6``, ``reshape``, ``chunk``...) have entries too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from ...core.records import Operation
from .calls import Counts, _bound, _custom, _elementwise, _inputs, _packet_names
from .table import AtenCall, TorchContext, lowers

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
