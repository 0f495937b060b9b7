"""The bundled example for `neural-cost analyze examples/mlp.py:build` (what `make run` runs).

A two-layer MLP in JAX (batch 256, 1024 → 4096 → 1024, float32) with random data.
"""

from neural_cost.examples.jax_mlp import build as _build


def build():
    forward, (params, x) = _build()
    return forward, (params, x)
