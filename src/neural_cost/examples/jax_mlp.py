"""A two-layer MLP in JAX, traced by JaxAdapter: the bundled example when JAX is installed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def build(
    batch: int = 256, d_in: int = 1024, hidden: int = 4096, d_out: int = 1024, seed: int = 0
) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``(forward, (params, x))`` with random float32 data (never constants)."""
    import jax
    import jax.numpy as jnp

    k1, k2, k3 = jax.random.split(jax.random.key(seed), 3)
    params = {
        "w1": jax.random.normal(k1, (d_in, hidden), jnp.float32) * 0.03,
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, d_out), jnp.float32) * 0.02,
        "b2": jnp.zeros((d_out,), jnp.float32),
    }
    x = jax.random.normal(k3, (batch, d_in), jnp.float32)

    def forward(params: dict[str, Any], x: Any) -> Any:
        with jax.named_scope("layer1"):
            h = jax.nn.relu(x @ params["w1"] + params["b1"])
        with jax.named_scope("layer2"):
            return h @ params["w2"] + params["b2"]

    return forward, (params, x)
