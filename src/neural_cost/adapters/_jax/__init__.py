"""The JAX adapter's internals: the primitive table, the jaxpr walker, loop inference.

Imported only by ``neural_cost.adapters.jax``, and only when JAX is installed.
"""
