"""Table entries for pointwise aten ops (and the backward of activations), fills and creation.

Each builder turns one aten call into ONE record of an existing kind (the tracer counts a
call as modeled once, whatever it returns); the arithmetic lives in ``neural_cost.costs``.
Pointwise ops only name their entry in ``neural_cost.costs.catalog`` (``attrs['op']``), which
holds every per-element count and its formula; this table maps aten names to entries and
picks the entry from the call's arguments where they change the work:

- ``add``/``sub``/``rsub`` with alpha ≠ 1: ``add_scaled``; ``div`` with a rounding mode:
  ``floor_divide`` / ``trunc_divide``; ``clamp`` with one bound: ``clamp_min`` / ``clamp_max``;
  ``round`` with decimals: ``round_decimals``; ``gelu(approximate="tanh")``: ``gelu_tanh``;
  ``logit`` with eps: ``logit_eps``.
- ``pow`` by its exponent: a scalar the CPU kernel special-cases (2, 3, -1, -2, ±0.5, 1, 0)
  as the entry it runs as (``square``, ``cube``, ``rsqrt``...), a scalar base ``pow_scalar_base``,
  another integer power of an integer tensor ``integer_pow`` with attrs['exponent']
  (exponentiation by squaring), anything else ``pow``.
- ``elu`` carries selu's and celu's coefficients: scale ≠ 1 is ``selu``, input scale ≠ 1
  ``celu``; both, or any on the backward, add one multiply each (attrs['extra_multiplies']).

Scalar operands (Python numbers) are not inputs; a 0-d tensor operand is an input of shape
(). ``.out`` and in-place (``add_``) variants count as the functional op: the written tensor
is the output, an in-place ``self`` is also read.

- Fills (``fill_``, ``zero_``, ``zeros_like``, ``full``...) write their output with 0 FLOPs
  and read nothing; so do ``arange``/``linspace`` (start + i·step is index arithmetic, modeled
  as a fill like XLA's iota: the catalog's ``arange`` entry).
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
from .calls import _bound, _elementwise, _inputs, _packet_names
from .common import _record
from .table import AtenCall, TorchContext, lowers

# -- pointwise ------------------------------------------------------------------------------

# aten name (functional) → catalog entry, where the arguments do not change the work.
_SAME_NAME = (
    "mul", "neg", "abs", "sign", "reciprocal", "maximum", "minimum", "fmax", "fmin", "floor", "ceil", "trunc",
    "relu", "clamp_min", "clamp_max", "copysign", "nextafter", "signbit", "square",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift",
    "isnan", "isposinf", "isneginf", "isinf", "isfinite",
    "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
    "tanh", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "atan2", "erf", "erfc",
    "erfinv", "lgamma", "digamma", "polygamma", "i0",
    "frac", "floor_divide", "heaviside", "remainder", "fmod", "lerp", "addcmul", "addcdiv", "nan_to_num",
    "sigmoid", "silu", "mish", "softplus", "selu", "celu", "hardswish", "hardsigmoid", "hardtanh", "relu6",
    "threshold", "leaky_relu", "hardshrink", "softshrink", "log_sigmoid", "sinc", "hypot", "xlogy",
    "logaddexp", "logaddexp2",
    "threshold_backward", "hardtanh_backward", "leaky_relu_backward", "silu_backward", "sigmoid_backward",
    "tanh_backward", "softplus_backward", "mish_backward", "hardswish_backward", "hardsigmoid_backward",
    "hardshrink_backward", "softshrink_backward", "log_sigmoid_backward", "native_dropout_backward",
)  # fmt: skip
ALIASES: dict[str, str] = {
    **{name: name for name in _SAME_NAME},
    "sgn": "sign",
    "fix": "trunc",
    "log_sigmoid_forward": "log_sigmoid",
    "_prelu_kernel": "prelu",
    "_prelu_kernel_backward": "prelu_backward",
    **dict.fromkeys(("__and__", "__iand__"), "bitwise_and"),
    **dict.fromkeys(("__or__", "__ior__"), "bitwise_or"),
    **dict.fromkeys(("__xor__", "__ixor__"), "bitwise_xor"),
    **dict.fromkeys(("__lshift__", "__ilshift__"), "bitwise_left_shift"),
    **dict.fromkeys(("__rshift__", "__irshift__"), "bitwise_right_shift"),
}

Pointwise = tuple[str, dict[str, Any]]  # a catalog entry and the parameters the rule reads with it

# pow(x, y) with a scalar y the CPU kernel special-cases (pow_tensor_scalar) → the entry it runs as
_POWERS = {
    0.0: "fill",
    1.0: "identity",
    2.0: "square",
    3.0: "cube",
    -1.0: "reciprocal",
    -2.0: "reciprocal_square",
    0.5: "sqrt",
    -0.5: "rsqrt",
}


def _scaled(bound: dict[str, Any], base: str) -> str:
    alpha = bound.get("alpha", 1)
    return base if alpha is None or alpha == 1 else "add_scaled"


def _pow(bound: dict[str, Any]) -> Pointwise:
    base, exponent = bound.get("self"), bound.get("exponent")
    if not isinstance(base, (torch.Tensor, list, tuple)):
        return "pow_scalar_base", {}
    if isinstance(exponent, (torch.Tensor, list, tuple)) or exponent is None:
        return "pow", {}
    value = float(exponent)
    tensor = base if isinstance(base, torch.Tensor) else base[0]
    if value not in _POWERS and value.is_integer() and not tensor.is_floating_point() and not tensor.is_complex():
        return "integer_pow", {"exponent": int(value)}  # an integer base: exponentiation by squaring
    return _POWERS.get(value, "pow"), {}


def _coefficients(bound: dict[str, Any]) -> tuple[bool, bool]:
    """Whether elu's scale and input scale differ from 1 (selu and celu set them)."""
    return bound.get("scale", 1) != 1, bound.get("input_scale", 1) != 1


def _elu(bound: dict[str, Any]) -> Pointwise:
    scaled, input_scaled = _coefficients(bound)
    if scaled != input_scaled:
        return ("selu" if scaled else "celu"), {}
    return "elu", ({"extra_multiplies": 2} if scaled else {})  # both coefficients: one multiply each


def _elu_backward(bound: dict[str, Any]) -> Pointwise:
    name = "elu_backward_from_result" if bound.get("is_result") else "elu_backward"
    extra = sum(_coefficients(bound))  # each non-default coefficient: one multiply
    return name, ({"extra_multiplies": extra} if extra else {})


def _named(pick: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any]], Pointwise]:
    return lambda bound: (pick(bound), {})


_DYNAMIC: dict[str, Callable[[dict[str, Any]], Pointwise]] = {
    "pow": _pow,
    "elu": _elu,
    "elu_backward": _elu_backward,
}
_PICKED: dict[str, Callable[[dict[str, Any]], str]] = {
    "add": lambda b: _scaled(b, "add"),
    "sub": lambda b: _scaled(b, "sub"),
    "rsub": lambda b: _scaled(b, "sub"),
    "div": lambda b: {None: "div", "floor": "floor_divide"}.get(b.get("rounding_mode"), "trunc_divide"),
    "clamp": lambda b: (
        "clamp"
        if b.get("min") is not None and b.get("max") is not None
        else ("clamp_min" if b.get("min") is not None else "clamp_max")
    ),
    "round": lambda b: "round_decimals" if b.get("decimals", 0) else "round",
    "gelu": lambda b: "gelu_tanh" if b.get("approximate") == "tanh" else "gelu",
    "gelu_backward": lambda b: "gelu_tanh_backward" if b.get("approximate") == "tanh" else "gelu_backward",
    "logit": lambda b: "logit" if b.get("eps") is None else "logit_eps",
    "logit_backward": lambda b: "logit_backward" if b.get("eps") is None else "logit_eps_backward",
}


def _base(name: str) -> str:
    """The functional name of an in-place packet: ``add_`` → ``add`` (``__and__`` stays)."""
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def pointwise_entry(name: str, bound: dict[str, Any]) -> Pointwise:
    """The catalog entry of pointwise op ``name`` (functional name) and the parameters the
    ``elementwise`` rule reads with it."""
    dynamic = _DYNAMIC.get(name)
    if dynamic is not None:
        return dynamic(bound)
    picked = _PICKED.get(name)
    return (picked(bound) if picked is not None else ALIASES[name]), {}


_POINTWISE = (*ALIASES, *_DYNAMIC, *_PICKED)


@lowers(*_packet_names(tuple(dict.fromkeys(_POINTWISE))))
def _pointwise(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    bound = _bound(call)
    entry, params = pointwise_entry(_base(call.name), bound)
    return _elementwise(call, ctx, entry, _inputs(call, bound=bound), params=params)


@lowers("prelu")
def _prelu(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # x > 0 ? x : w·x (compare, multiply, select); one weight per channel (dim 1) or one for all
    x, weight = call.args[0], call.args[1]
    per_channel = (weight.numel(),) + (1,) * max(x.dim() - 2, 0) if weight.numel() > 1 else ()
    return _elementwise(call, ctx, "prelu", inputs=[x, per_channel])


@lowers("glu")
def _glu(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # a·sigmoid(b) over the two halves of x along dim
    half = ctx.shape(call.outputs[0])
    return _elementwise(call, ctx, "glu", inputs=[half, half])


@lowers("glu_backward")
def _glu_backward(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """Each gradient element dy gives one pair (da, db): the record reads dy and the two
    halves a, b of x and writes x's gradient as its two halves (the same bytes as x whole)."""
    grad, out = call.args[0], call.outputs[0]
    half = (ctx.shape(grad), ctx.dtype(out))
    dy = (ctx.shape(grad), ctx.dtype(grad))
    return [_record(ctx, call.name, "elementwise", [dy, half, half], half, attrs={"op": "glu_backward"}, extra=[half])]


# -- fills and creation -----------------------------------------------------------------------

_FILLS = ("zero", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones",
          "new_full", "scalar_tensor")  # fmt: skip


@lowers(*_packet_names(_FILLS))
def _fill(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _elementwise(call, ctx, "fill", inputs=[])


@lowers("fill", "fill_")
def _fill_value(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    value = _bound(call).get("value")
    if isinstance(value, torch.Tensor):  # fill from a 0-d tensor: one value read, the output written
        return [ctx.op(call, "copy", [value], call.outputs[0], attrs={"op": call.name})]
    return _elementwise(call, ctx, "fill", inputs=[])


@lowers("arange", "linspace")
def _arange(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _elementwise(call, ctx, "arange", inputs=[])  # 0-d start/end tensors are scalars


@lowers("_local_scalar_dense")
def _item(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    # .item(): one element copied to the host (a synchronisation on an accelerator)
    tensor = call.args[0]
    return [ctx.op(call, "copy", [tensor], (), dtype=ctx.dtype(tensor), attrs={"op": call.name})]
