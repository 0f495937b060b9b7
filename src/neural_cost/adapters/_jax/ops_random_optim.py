"""Table entries for JAX's random-number primitives: counter-based hashes, typed-key
``random_bits``/``random_split``/``random_fold_in``, XLA's ``rng_bit_generator`` and
``rng_uniform``.

The family keeps the PyTorch table's name, ``ops_random_optim``, so the same family has the same
file in every adapter; JAX has no optimizer primitives (optax's updates are compositions of
elementwise primitives, counted by their own entries), so here it holds only random numbers.
Each builder translates one equation into an ``rng`` record; the arithmetic lives in
``neural_cost.costs``. The counting convention these builders state:

- PRNG: one generator block per element of a counter-based hash primitive's first output
  (``threefry2x32``: 64 bits; ``philox4x32``: 128); ``random_bits``/``random_split``/
  ``random_fold_in`` by the key's implementation (``KEY_IMPLS``).

Typed keys' reinterpretations (``random_wrap``, ``random_unwrap``, ``random_clone``) are free, in
``ops_free``; ``random_seed`` (a seed packed into key words of another width) is a ``copy``,
with the casts in ``ops_pointwise``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax

from ...core.records import Operation
from .table import LowerContext, is_key_dtype, lowers

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
