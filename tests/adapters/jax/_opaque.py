"""A primitive of the tests' own, which no table will ever model: the stand-in for "an
operation we cannot count" now that callbacks and linear algebra are modeled."""

from __future__ import annotations

try:
    from jax.extend.core import Primitive
except ImportError:  # older JAX
    from jax.core import Primitive

opaque_p = Primitive("neural_cost_test_opaque")
opaque_p.def_impl(lambda x: x)
opaque_p.def_abstract_eval(lambda x: x)


def opaque(x):
    """x, through a primitive the JAX table does not know."""
    return opaque_p.bind(x)
