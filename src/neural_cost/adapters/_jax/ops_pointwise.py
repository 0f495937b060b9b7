"""Table entries for pointwise, reduction, scan, sort and PRNG primitives, and the free ones.

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
- Reductions: n - 1 combining ops per output (``argmax``/``argmin``: comparisons charged to
  the operand's dtype; XLA's variadic reduce over (value, index) pairs does several ops per
  element). The generic ``reduce`` carries a jaxpr and is left to the walker.
- Cumulative scans: L - 1 combining steps per row; ``cumlogsumexp`` combines with JAX's
  logaddexp, 10 FLOPs (max, sub, isnan compare, add, neg, abs, exp, log1p, add, select)
  of which 2 are transcendental (exp, log1p).
- ``sort``: all operands sorted together, keys compared (a multi-key sort's tie-break
  comparisons are not counted); ``top_k``/``approx_top_k``: the sort rule's top-k form
  (``approx_top_k`` counted as an exact top-k of the same output size).
- PRNG: one generator block per element of a counter-based hash primitive's first output
  (``threefry2x32``: 64 bits; ``philox4x32``: 128); ``random_bits``/``random_split``/
  ``random_fold_in`` by the key's implementation (``KEY_IMPLS``).

Contract with the walker: a builder may return an empty list, meaning this equation is
free *given its params*; the reason is ``CONDITIONALLY_FREE[primitive name]``. Only
``convert_element_type`` does so, when the dtype does not change (only weak typing does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax

from ...core.records import Operation, Shape
from .table import LowerContext, free, is_key_dtype, lowers

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


@lowers(*(name for name in ALIASES if name not in _RESULT_DTYPE))
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
}


@lowers("convert_element_type")
def _convert_element_type(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    (operand,), (result,) = eqn.invars, eqn.outvars
    if operand.aval.dtype == result.aval.dtype:
        return []  # free: see CONDITIONALLY_FREE
    return [ctx.op(eqn, "copy")]


@lowers("bitcast_convert_type", "copy", "random_seed")
def _copy(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    return [ctx.op(eqn, "copy")]


# -- reductions and scans ----------------------------------------------------------------


def _axes(eqn: Any) -> tuple[int, ...]:
    return tuple(int(a) for a in eqn.params["axes"])


@lowers("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or", "reduce_xor")
def _reduce(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    return [ctx.op(eqn, "reduce", attrs={"op": eqn.primitive.name, "axes": _axes(eqn)})]


@lowers("argmax", "argmin")
def _arg_reduce(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    # The result is the index dtype; the comparisons are in the operand's.
    attrs = {"op": eqn.primitive.name, "axes": _axes(eqn), "compute_dtype": ctx.dtype(eqn.invars[0])}
    return [ctx.op(eqn, "reduce", attrs=attrs)]


@lowers("cumsum", "cumprod", "cummax", "cummin")
def _cumulative(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    return [ctx.op(eqn, "cumulative", attrs={"op": eqn.primitive.name, "axis": int(eqn.params["axis"])})]


@lowers("cumlogsumexp")
def _cumlogsumexp(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    attrs = {
        "op": "cumlogsumexp",
        "axis": int(eqn.params["axis"]),
        "flops_per_combine": 10,  # logaddexp: max, sub, isnan, add, neg, abs, exp, log1p, add, select
        "transcendentals_per_combine": 2,  # exp, log1p
    }
    return [ctx.op(eqn, "cumulative", attrs=attrs)]


# -- sorting -----------------------------------------------------------------------------


@lowers("sort")
def _sort(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    # Operands are sorted together (keys first); one result per operand.
    return [ctx.op(eqn, "sort", attrs={"axis": int(eqn.params["dimension"])}, extra_outputs=eqn.outvars[1:])]


@lowers("top_k")
def _top_k(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    # Results: the k values, then their int32 indices.
    attrs = {"axis": int(eqn.params.get("axis", -1)), "k": int(eqn.params["k"])}
    return [ctx.op(eqn, "sort", attrs=attrs, extra_outputs=eqn.outvars[1:])]


@lowers("approx_top_k")
def _approx_top_k(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    # Counted as an exact top-k. Without aggregate_to_topk the result keeps more than k
    # candidates along the axis: k is what the result holds.
    axis = int(eqn.params["reduction_dimension"]) % len(eqn.invars[0].aval.shape)
    kept = int(eqn.outvars[0].aval.shape[axis])
    return [ctx.op(eqn, "sort", attrs={"axis": axis, "k": kept}, extra_outputs=eqn.outvars[1:])]


# -- random numbers ----------------------------------------------------------------------

# Counter-based hash primitive → (generator, bits per element of its first output): each
# element index of the outputs is one block (threefry2x32's two uint32 outputs are one
# 64-bit block; philox4x32's four are one 128-bit block).
COUNTER_HASHES: dict[str, tuple[str, int]] = {
    "threefry2x32": ("threefry2x32", 64),
    "threefry4x32": ("threefry4x32", 128),
    "philox2x32": ("philox2x32-10", 64),
    "philox4x32": ("philox4x32-10", 128),
}

# Key implementation name → (generator of random_bits or None, bits generated per
# random_bits element or None for its bit width, generator of split/fold_in or None, bits
# generated per uint32 word of each new key). None leaves the rng rule's default
# generator, whose note says so. From jax/_src/random/*.py: threefry2x32 (partitionable)
# and the philox/threefry4x32 impls hash one block per output element whatever the bit
# width, and one block per new key; rbg draws bits from XLA's RngBitGenerator (backend's
# algorithm) but splits with threefry2x32 on each 2-word half of its 4-word key;
# unsafe_rbg splits by drawing 10 × 4 words per new key.
KEY_IMPLS: dict[str, tuple[str | None, int | None, str | None, int | None]] = {
    "threefry2x32": ("threefry2x32", 64, "threefry2x32", 32),
    "threefry4x32": ("threefry4x32", 128, "threefry4x32", 32),
    "philox2x32": ("philox2x32-10", 64, "philox2x32-10", 64),
    "philox4x32": ("philox4x32-10", 128, "philox4x32-10", 64),
    "rbg": (None, None, "threefry2x32", 32),
    "unsafe_rbg": (None, None, None, 320),
}
_UNKNOWN_IMPL: tuple[str | None, int | None, str | None, int | None] = (None, None, None, None)


def _impl_name(atom: Any) -> str:
    dtype = atom.aval.dtype
    return str(dtype._impl.name) if is_key_dtype(dtype) else ""


def _rng_attrs(generator: str | None, bits_per_element: int | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if generator is not None:
        attrs["generator"] = generator
    if bits_per_element is not None:
        attrs["bits_per_element"] = bits_per_element
    return attrs


@lowers(*COUNTER_HASHES)
def _counter_hash(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    generator, bits = COUNTER_HASHES[eqn.primitive.name]
    attrs = {"generator": generator, "bits_per_element": bits}
    return [ctx.op(eqn, "rng", attrs=attrs, extra_outputs=eqn.outvars[1:])]


@lowers("random_bits")
def _random_bits(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    name = _impl_name(eqn.invars[0])
    generator, per_element, _, _ = KEY_IMPLS.get(name, _UNKNOWN_IMPL)
    if name == "threefry2x32" and not getattr(jax.config, "jax_threefry_partitionable", True):
        per_element = None  # the original scheme packs bit_width-wide values into 64-bit blocks
    return [ctx.op(eqn, "rng", attrs=_rng_attrs(generator, per_element or int(eqn.params["bit_width"])))]


@lowers("random_split", "random_fold_in")
def _derive_keys(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    # The record's output is the new keys' uint32 words; fold_in's data operand is read too.
    _, _, generator, per_word = KEY_IMPLS.get(_impl_name(eqn.outvars[0]), _UNKNOWN_IMPL)
    return [ctx.op(eqn, "rng", attrs=_rng_attrs(generator, per_word))]


_BIT_GENERATOR_ALGORITHMS = {"RNG_THREE_FRY": "threefry2x32", "RNG_PHILOX": "philox4x32-10"}


@lowers("rng_bit_generator")
def _rng_bit_generator(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    # Results: the new generator state, then the bits. RNG_DEFAULT is the backend's choice.
    algorithm = eqn.params.get("algorithm")
    generator = _BIT_GENERATOR_ALGORITHMS.get(getattr(algorithm, "name", str(algorithm)))
    state, bits = eqn.outvars
    return [ctx.op(eqn, "rng", output=bits, extra_outputs=[state], attrs=_rng_attrs(generator, None))]


@lowers("rng_uniform")
def _rng_uniform(eqn: Any, ctx: LowerContext) -> Sequence[Operation]:
    # XLA's stateful RngUniform: the backend picks the generator.
    return [ctx.op(eqn, "rng")]


# -- free: the identity on the value ------------------------------------------------------

FREE_REASONS: dict[str, str] = {
    "stop_gradient": "the identity in the forward pass; it only stops gradients",
    "optimization_barrier": "a scheduling fence: its outputs are its inputs, unchanged",
    "sharding_constraint": "a sharding annotation for the partitioner; the value is unchanged "
    "(resharding across devices is communication, not counted here)",
    "reshard": "changes a value's declared sharding; on one device the buffer is unchanged "
    "(resharding across devices is communication, not counted here)",
    "pvary": "marks a value as varying over shard_map axes: type-level only, lowered to the identity",
    "name": "names a value for rematerialisation policies (checkpoint_name); the identity",
    "layout_constraint": "asks XLA for a memory layout; the identity on the value "
    "(a relayout XLA may insert is not in the jaxpr)",
    "xla_metadata_value": "attaches XLA frontend attributes to the op producing the value; the identity",
    "tie": "returns its second operand unchanged; the first only orders execution",
    "shard_alike": "makes two values share a sharding; the identity on both",
    "random_wrap": "reinterprets uint32 words as a typed PRNG key array; no data changes",
    "random_unwrap": "reinterprets a typed PRNG key array as its uint32 words; no data changes",
    "random_clone": "a key-reuse marker; the identity outside key-reuse checking",
    "dce_sink": "marks a value as used so dead-code elimination keeps it; writes nothing",
    "inspect_sharding": "hands the value's sharding to a Python callback at compile time; nothing runs on device",
}
for _name, _reason in FREE_REASONS.items():
    free(_reason, _name)
