"""Table entries for elementwise primitives: arithmetic, comparisons, transcendentals,
casts and copies, ``iota``.

Each builder translates one equation into records of an existing kind; the arithmetic
lives in ``neural_cost.costs``. The counting conventions these builders state:

- Pointwise primitives only name their entry in ``neural_cost.costs.catalog``
  (``ALIASES``: ``logistic`` → ``sigmoid``, ``max`` → ``maximum``, ``rem`` → ``fmod``...), which
  holds every per-element count and its formula, the same entries PyTorch's and
  TensorFlow's tables name. FLOPs are charged to the operands' dtype (``select_n`` and
  ``clamp``: the result's, as select_n's predicate comes first). ``integer_pow(x, y)`` is
  exponentiation by squaring, as JAX lowers it: the record names ``integer_pow`` and its
  attrs['exponent'], and the rule counts it (``neural_cost.costs.catalog.integer_pow_flops``).
- Transcendental primitives are 1 FLOP and 1 transcendental per element (``logistic``,
  sigmoid, is 4 and 1). XLA's ``cost_analysis()`` counts them as 1 transcendental and 0 FLOPs,
  so our FLOPs exceed its by one per element here. Special functions (lgamma, igamma,
  bessel_i0e, zeta, ...) expand to dozens of operations in XLA: one FLOP undercounts them,
  a known inaccuracy.
- ``jax.nn`` activations are compositions of primitives (``gelu``, ``elu``, ``softplus`` as
  ``logaddexp(x, 0)``...): each primitive counts by its own entry, so a composite's total
  can differ from the catalog's entry for the activation; ``tests/test_catalog.py`` lists
  each difference and its reason.
- Casts: ``convert_element_type`` to another dtype, ``bitcast_convert_type`` (always: XLA
  materialises it unless it fuses), ``copy`` and ``random_seed`` (a seed packed into key
  words of another width) are ``copy`` records: data moves, no FLOPs. (``copy`` lowers to
  the identity inside a jitted program; it is a real copy when dispatched on its own.)
- ``iota`` and ``iota_2x32_shape`` write their output with 0 FLOPs (no inputs).

Reductions, scans and sorts are in ``ops_reduce``, PRNG primitives in ``ops_random_optim``
and the free primitives in ``ops_free``.

Contract with the walker: a builder may return an empty list, meaning this equation is
free *given its params*; the reason is ``CONDITIONALLY_FREE[primitive name]``. Only
``convert_element_type`` does so, when the dtype does not change (only weak typing does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.records import Operation, Shape
from .table import EMPTY_REASONS, LowerContext, is_key_dtype, lowers

# -- elementwise -----------------------------------------------------------------------

# primitive → catalog entry
ALIASES: dict[str, str] = {
    **{name: name for name in (
        "add", "sub", "mul", "div", "neg", "abs", "sign", "floor", "ceil", "round", "nextafter", "square",
        "reciprocal", "mulhi", "conj", "reduce_precision", "eq", "ne", "lt", "le", "gt", "ge",
        "population_count", "real", "imag", "complex", "clamp", "pow",
        "exp", "exp2", "expm1", "log", "log1p", "tanh", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
        "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt", "cbrt", "erf", "erfc", "lgamma",
        "digamma", "polygamma", "zeta", "igamma", "igammac", "igamma_grad_a", "bessel_i0e", "bessel_i1e",
    )},
    "add_any": "add",  # the sum of two cotangents
    "max": "maximum",
    "min": "minimum",
    "rem": "fmod",  # C's fmod: the result takes the dividend's sign
    "is_finite": "isfinite",
    "eq_to": "eq",
    "le_to": "le",
    "lt_to": "lt",
    "and": "bitwise_and",  # on bools, the logical and
    "or": "bitwise_or",
    "xor": "bitwise_xor",
    "not": "bitwise_not",
    "shift_left": "bitwise_left_shift",
    "shift_right_arithmetic": "bitwise_right_shift",
    "shift_right_logical": "bitwise_right_shift",
    "clz": "count_leading_zeros",
    "select_n": "where",
    "logistic": "sigmoid",
    "erf_inv": "erfinv",
    "regularized_incomplete_beta": "betainc",
}  # fmt: skip


def _key_shape(eqn: Any) -> Shape:
    """The key shape (uint32 words per key) of the first typed-key atom of ``eqn``, else ()."""
    for atom in (*eqn.invars, *eqn.outvars):
        dtype = atom.aval.dtype
        if is_key_dtype(dtype):
            return tuple(int(d) for d in dtype._impl.key_shape)
    return ()


def _pointwise(eqn: Any, ctx: LowerContext, **attrs: Any) -> Operation:
    """One elementwise record with the equation's shapes (scalar literals stay shape ()),
    naming its catalog entry (``attrs`` may state explicit counts instead, and a compute dtype).

    Typed PRNG keys carry their uint32 words as trailing dims (``LowerContext.shape``), so
    when keys take part (``select_n`` or ``eq`` over key arrays) the other operands, and a
    non-key result, gain those dims too: XLA selects and compares keys word by word.
    """
    attrs = {"op": ALIASES.get(eqn.primitive.name, eqn.primitive.name), **attrs}
    key = _key_shape(eqn)
    if not key:
        return ctx.op(eqn, "elementwise", attrs=attrs)
    ones = (1,) * len(key)
    input_shapes = [
        ctx.shape(a) if is_key_dtype(a.aval.dtype) or not a.aval.shape else ctx.shape(a) + ones for a in eqn.invars
    ]
    result = eqn.outvars[0]
    output_shape = ctx.shape(result) if is_key_dtype(result.aval.dtype) else ctx.shape(result) + key
    return ctx.op(eqn, "elementwise", attrs=attrs, input_shapes=input_shapes, output_shape=output_shape)


_RESULT_DTYPE = ("select_n", "clamp")  # the predicate / bounds come first: charge the result's dtype
_OWN_LOGIC = (*_RESULT_DTYPE, "reduce_precision")


@lowers(*(name for name in ALIASES if name not in _OWN_LOGIC))
def _aliased(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    return [_pointwise(eqn, ctx)]


@lowers(*_RESULT_DTYPE)
def _result_dtype(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    return [_pointwise(eqn, ctx, compute_dtype=ctx.dtype(eqn.outvars[0]))]


@lowers("integer_pow")
def _integer_pow(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    # exponentiation by squaring, as JAX lowers it: the elementwise rule counts it by the exponent
    return [_pointwise(eqn, ctx, exponent=int(eqn.params["y"]))]


@lowers("iota", "iota_2x32_shape")
def _iota(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    return [ctx.op(eqn, "elementwise", inputs=(), attrs={"op": "iota"}, extra_outputs=eqn.outvars[1:])]


# -- casts and copies --------------------------------------------------------------------

CONDITIONALLY_FREE = {
    "convert_element_type": "same dtype in and out: only weak-typing metadata changes, the value is the same buffer",
    "reduce_precision": "rounds to at least the value's own exponent and mantissa bits: the identity (a "
    "checkpoint policy's marker), which XLA removes",
}
EMPTY_REASONS.update(CONDITIONALLY_FREE)


@lowers("reduce_precision")
def _reduce_precision(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    """A rounding to a narrower format is counted as the catalog's; one to the value's own format
    (or wider) changes nothing and is free: see CONDITIONALLY_FREE."""
    import numpy as np

    dtype = np.dtype(eqn.invars[0].aval.dtype)
    try:
        info = np.finfo(dtype)
    except ValueError:
        return [_pointwise(eqn, ctx)]
    exponent_bits, mantissa_bits = int(eqn.params["exponent_bits"]), int(eqn.params["mantissa_bits"])
    if exponent_bits >= info.nexp and mantissa_bits >= info.nmant:
        return []
    return [_pointwise(eqn, ctx)]


@lowers("convert_element_type")
def _convert_element_type(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    (operand,), (result,) = eqn.invars, eqn.outvars
    if operand.aval.dtype == result.aval.dtype:
        return []  # free: see CONDITIONALLY_FREE
    return [ctx.op(eqn, "copy")]


@lowers("bitcast_convert_type", "copy", "random_seed")
def _copy(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    return [ctx.op(eqn, "copy")]
