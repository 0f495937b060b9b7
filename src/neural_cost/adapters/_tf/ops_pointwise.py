"""Table entries for TensorFlow's elementwise ops: arithmetic, comparisons, activations,
selects, casts and fills.

One FLOP per output element for each arithmetic, comparison, logical, bitwise, select,
min/max, abs, sign and rounding op; a transcendental function (exp, log, sqrt, rsqrt, tanh,
erf, sin...) is 1 FLOP and 1 transcendental. Composite kernels count the ops of the formula
TensorFlow's functor evaluates (the same counts as the torch table where both have the op):

  ==================  =====  ===  ========================================================
  op                  FLOPs  tr.  formula
  ==================  =====  ===  ========================================================
  Sigmoid             4      1    1/(1+exp(-x))
  Elu                 4      1    x < 0 ? exp(x) - 1 : x  (compare, exp, subtract, select)
  Selu                6      1    x < 0 ? s·a·(exp(x)-1) : s·x
  Softplus            6      2    two threshold compares and selects, exp, log1p
  Softsign            3      0    x / (1 + |x|)
  LeakyRelu           3      0    x > 0 ? x : a·x
  Relu6, ClipByValue  2      0    a max, then a min
  SquaredDifference   2      0    (x-y)·(x-y), one subtract, one multiply
  FloorDiv            2      0    floor(x/y)
  FloorMod            4      0    x - floor(x/y)·y
  DivNoNan, MulNoNan  3      0    y == 0 ? 0 : x/y  (compare, divide, select)
  Pow                 3      2    exp(y·log x)
  AddN (N inputs)     N-1    0    N-1 adds per element
  Range               2      0    start + i·delta
  IsInf               2      0    abs, compare
  ==================  =====  ===  ========================================================

Fills (``Fill``, ``ZerosLike``, ``OnesLike``) write their output with 0 FLOPs and read
nothing. ``Cast`` to another dtype is a ``copy`` (a new tensor of another width or
encoding is written); a Cast to the same dtype returns its input (free, see
``EMPTY_REASONS``). ``BiasAdd`` in NCHW broadcasts its bias over the channel dim: the
recorded bias shape is (C, 1, ..., 1). ``Select`` (v1) with a vector condition picks whole
rows: the recorded condition is (N, 1, ..., 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.records import Operation
from .table import EMPTY_REASONS, TfContext, attr, lowers

Counts = tuple[int, int]  # (FLOPs, transcendentals) per element

ARITHMETIC = (
    "Add", "AddV2", "Sub", "Mul", "Div", "RealDiv", "TruncateDiv", "Maximum", "Minimum", "Neg", "Abs",
    "Sign", "Floor", "Ceil", "Round", "Rint", "Reciprocal", "Inv", "Square", "Relu", "BiasAdd",
    "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr",
    "LogicalNot", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Invert", "LeftShift", "RightShift",
    "IsNan", "IsFinite", "Select", "SelectV2",
)  # fmt: skip
TRANSCENDENTAL = (
    "Exp", "Expm1", "Log", "Log1p", "Sqrt", "Rsqrt", "Tanh", "Erf", "Erfc", "Erfinv", "Sin", "Cos",
    "Tan", "Asin", "Acos", "Atan", "Atan2", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Lgamma",
    "Digamma",
)  # fmt: skip
COMPOSITE: dict[str, Counts] = {
    "Sigmoid": (4, 1),
    "Elu": (4, 1),
    "Selu": (6, 1),
    "Softplus": (6, 2),
    "Softsign": (3, 0),
    "LeakyRelu": (3, 0),
    "Relu6": (2, 0),
    "ClipByValue": (2, 0),
    "SquaredDifference": (2, 0),
    "FloorDiv": (2, 0),
    "FloorMod": (4, 0),
    "TruncateMod": (4, 0),
    "DivNoNan": (3, 0),
    "MulNoNan": (3, 0),
    "Pow": (3, 2),
    "IsInf": (2, 0),
}
COUNTS: dict[str, Counts] = {
    **{name: (1, 0) for name in ARITHMETIC},
    **{name: (1, 1) for name in TRANSCENDENTAL},
    **COMPOSITE,
}


def _attrs(counts: Counts) -> dict[str, Any]:
    flops, transcendentals = counts
    attrs: dict[str, Any] = {"flops_per_element": flops}
    if transcendentals:
        attrs["transcendentals_per_element"] = transcendentals
    return attrs


@lowers(*COUNTS)
def _elementwise(op: Any, ctx: TfContext) -> Sequence[Operation]:
    shapes = [ctx.shape(t) for t in op.inputs]
    out = ctx.shape(op.outputs[0])
    if op.type == "BiasAdd" and str(attr(op, "data_format", "NHWC")).startswith("NC") and len(out) > 2:
        shapes[1] = (*shapes[1], *(1,) * (len(out) - 2))
    if op.type == "Select" and len(shapes[0]) == 1 and len(out) > 1:
        shapes[0] = (*shapes[0], *(1,) * (len(out) - 1))
    return [ctx.op(op, "elementwise", attrs=_attrs(COUNTS[op.type]), input_shapes=shapes)]


@lowers("AddN")
def _add_n(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return [ctx.op(op, "elementwise", attrs={"flops_per_element": max(len(op.inputs) - 1, 0)})]


@lowers("Range")
def _range(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return [ctx.op(op, "elementwise", (), attrs={"flops_per_element": 2})]


@lowers("Fill", "ZerosLike", "OnesLike")
def _fill(op: Any, ctx: TfContext) -> Sequence[Operation]:
    return [ctx.op(op, "elementwise", (), attrs={"flops_per_element": 0})]


EMPTY_REASONS["Cast"] = "a cast to the same dtype returns its input"


@lowers("Cast")
def _cast(op: Any, ctx: TfContext) -> Sequence[Operation]:
    if op.inputs[0].dtype == op.outputs[0].dtype:
        return []
    return [ctx.op(op, "copy")]
