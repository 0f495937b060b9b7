"""Table entries for TensorFlow's elementwise ops: arithmetic, comparisons, activations,
selects, casts and fills.

Each op type only names its entry in ``neural_cost.costs.catalog`` (``ALIASES``: ``Sigmoid`` →
``sigmoid``, ``FloorMod`` → ``remainder``...), which holds every per-element count and its
formula, the same entries PyTorch's and JAX's tables name. Counts the op's inputs decide:

- ``Pow`` with a constant exponent that every element shares counts as Grappler's
  arithmetic optimizer rewrites it before it runs (2 → Square, 3 → x·Square(x), -1 →
  Reciprocal, ±0.5 → Sqrt/Rsqrt, 1 → Identity, 0 → ones); any other exponent, -2 included,
  is ``pow``, exp(y·log x).
- ``AddN`` of N inputs: N - 1 adds per element.
- ``TruncateDiv`` is integer-only, where division truncates natively: ``div``.

Fills (``Fill``, ``ZerosLike``, ``OnesLike``) write their output with 0 FLOPs and read
nothing; ``Range`` computes start + i·delta. ``Cast`` to another dtype is a ``copy`` (a new
tensor of another width or encoding is written); a Cast to the same dtype returns its input
(free, see ``EMPTY_REASONS``). ``BiasAdd`` in NCHW broadcasts its bias over the channel dim:
the recorded bias shape is (C, 1, ..., 1). ``Select`` (v1) with a vector condition picks
whole rows: the recorded condition is (N, 1, ..., 1).

Activation gradients (``ReluGrad``, ``SigmoidGrad``, ``RsqrtGrad``...) name the catalog's
backward entries, the ones PyTorch's backward ops name (``ReluGrad`` → ``threshold_backward``),
so a training step's backward counts the same in both. ``AssignAddVariableOp`` and
``AssignSubVariableOp`` (optimizer updates, step counters) are one add or subtract per
element of the variable, updated in place; ``AssignVariableOp`` is a copy (``ops_movement``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.records import Operation
from .table import EMPTY_REASONS, TfContext, attr, constant_value, lowers

# op type → catalog entry
ALIASES: dict[str, str] = {
    **{name: name.lower() for name in (
        "Mul", "Neg", "Abs", "Sign", "Floor", "Ceil", "Round", "Reciprocal", "Square", "Relu",
        "Exp", "Expm1", "Log", "Log1p", "Sqrt", "Rsqrt", "Tanh", "Erf", "Erfc", "Erfinv", "Sin", "Cos",
        "Tan", "Asin", "Acos", "Atan", "Atan2", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Lgamma",
        "Digamma", "Sigmoid", "Elu", "Selu", "Softplus", "Softsign", "Relu6", "IsNan", "IsInf",
    )},
    **dict.fromkeys(("Add", "AddV2", "BiasAdd"), "add"),
    "Sub": "sub",
    **dict.fromkeys(("Div", "RealDiv", "TruncateDiv"), "div"),
    "Maximum": "maximum",
    "Minimum": "minimum",
    "Rint": "round",
    "Inv": "reciprocal",
    "Equal": "eq",
    "NotEqual": "ne",
    "Less": "lt",
    "LessEqual": "le",
    "Greater": "gt",
    "GreaterEqual": "ge",
    "LogicalAnd": "logical_and",
    "LogicalOr": "logical_or",
    "LogicalNot": "logical_not",
    "BitwiseAnd": "bitwise_and",
    "BitwiseOr": "bitwise_or",
    "BitwiseXor": "bitwise_xor",
    "Invert": "bitwise_not",
    "LeftShift": "bitwise_left_shift",
    "RightShift": "bitwise_right_shift",
    "IsFinite": "isfinite",
    **dict.fromkeys(("Select", "SelectV2"), "where"),
    "LeakyRelu": "leaky_relu",
    "ClipByValue": "clamp",
    "SquaredDifference": "squared_difference",
    "FloorDiv": "floor_divide",
    "FloorMod": "remainder",
    "TruncateMod": "fmod",
    "DivNoNan": "div_no_nan",
    "MulNoNan": "mul_no_nan",
    **dict.fromkeys(("Fill", "ZerosLike", "OnesLike"), "fill"),
    "Range": "arange",
    # gradients: (dy, x) or (y, dy) in, dx out, each PyTorch's backward entry for the same op
    "ReluGrad": "threshold_backward",
    "Relu6Grad": "hardtanh_backward",
    "LeakyReluGrad": "leaky_relu_backward",
    "EluGrad": "elu_backward_from_result",
    "SeluGrad": "elu_backward_from_result",
    "SoftplusGrad": "softplus_backward",
    "SigmoidGrad": "sigmoid_backward",
    "TanhGrad": "tanh_backward",
    "RsqrtGrad": "rsqrt_backward",
    "SqrtGrad": "sqrt_backward",
    **dict.fromkeys(("ReciprocalGrad", "InvGrad"), "reciprocal_backward"),
    # a variable updated in place: reads it and the value, writes it (the handle is not data)
    "AssignAddVariableOp": "add",
    "AssignSubVariableOp": "sub",
}  # fmt: skip

#: coefficients the entry's formula leaves out, one multiply each (selu's scale, as PyTorch counts it)
_EXTRA_MULTIPLIES = {"SeluGrad": 1}
_ASSIGNS = ("AssignAddVariableOp", "AssignSubVariableOp")


# Pow(x, y) with a constant y that Grappler's arithmetic optimizer rewrites → the entry it runs as
_GRAPPLER_POWERS = {
    0.0: "fill",
    1.0: "identity",
    2.0: "square",
    3.0: "cube",
    -1.0: "reciprocal",
    0.5: "sqrt",
    -0.5: "rsqrt",
}


def _pow_entry(op: Any) -> str:
    exponent = constant_value(op.inputs[1])
    if exponent is None or exponent.size == 0 or not (exponent == exponent.flat[0]).all():
        return "pow"
    return _GRAPPLER_POWERS.get(float(exponent.flat[0]), "pow")


@lowers(*(name for name in ALIASES if name not in ("Fill", "ZerosLike", "OnesLike", "Range", *_ASSIGNS)), "Pow")
def _elementwise(op: Any, ctx: TfContext) -> Sequence[Operation]:
    shapes = [ctx.shape(t) for t in op.inputs]
    out = ctx.shape(op.outputs[0])
    if op.type == "BiasAdd" and str(attr(op, "data_format", "NHWC")).startswith("NC") and len(out) > 2:
        shapes[1] = (*shapes[1], *(1,) * (len(out) - 2))
    if op.type == "Select" and len(shapes[0]) == 1 and len(out) > 1:
        shapes[0] = (*shapes[0], *(1,) * (len(out) - 1))
    entry = _pow_entry(op) if op.type == "Pow" else ALIASES[op.type]
    attrs: dict[str, Any] = {"op": entry}
    if op.type in _EXTRA_MULTIPLIES:
        attrs["extra_multiplies"] = _EXTRA_MULTIPLIES[op.type]
    return [ctx.op(op, "elementwise", attrs=attrs, input_shapes=shapes)]


@lowers(*_ASSIGNS)
def _assign_update(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """(resource, value): TensorFlow requires the value to have the variable's shape and dtype,
    so the variable is read and written at the value's size; the op has no output tensor."""
    value = op.inputs[1]
    return [ctx.op(op, "elementwise", (value, value), value, attrs={"op": ALIASES[op.type]})]


@lowers("AddN")
def _add_n(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return [ctx.op(op, "elementwise", attrs={"op": "add", "flops_per_element": max(len(op.inputs) - 1, 0)})]


@lowers("Fill", "ZerosLike", "OnesLike", "Range")
def _written(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return [ctx.op(op, "elementwise", (), attrs={"op": ALIASES[op.type]})]  # no input is read


EMPTY_REASONS["Cast"] = "a cast to the same dtype returns its input"


@lowers("Cast")
def _cast(op: Any, ctx: TfContext) -> Sequence[Operation]:
    if op.inputs[0].dtype == op.outputs[0].dtype:
        return []
    return [ctx.op(op, "copy")]
