"""A JAX training step — gradients and an optax update — analyzed from the command line.

A jitted step ``(params, opt_state, batch) -> (params, opt_state, loss)`` is a function like
any other: ``build()`` returns it with its arguments, and the report counts the forward, the
gradient equations ``jax.grad`` adds and the optimizer's update. JAX arrays are immutable:
the params given to it are never changed.

    JAX_PLATFORMS=cpu neural-cost analyze examples/train_jax.py:build
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import optax

BATCH, FEATURES, HIDDEN, CLASSES = 32, 64, 128, 10
OPTIMIZER = optax.sgd(0.1, momentum=0.9)


def loss_fn(params: dict[str, jax.Array], x: jax.Array, labels: jax.Array) -> jax.Array:
    hidden = jax.nn.relu(x @ params["w1"] + params["b1"])
    logits = hidden @ params["w2"] + params["b2"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


@jax.jit
def train_step(params, opt_state, batch):  # type: ignore[no-untyped-def]
    loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
    updates, opt_state = OPTIMIZER.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def build() -> tuple[object, tuple[object, ...]]:
    keys = jax.random.split(jax.random.key(0), 4)
    params = {
        "w1": jax.random.normal(keys[0], (FEATURES, HIDDEN)) * 0.1,
        "b1": jnp.zeros(HIDDEN),
        "w2": jax.random.normal(keys[1], (HIDDEN, CLASSES)) * 0.1,
        "b2": jnp.zeros(CLASSES),
    }
    x = jax.random.normal(keys[2], (BATCH, FEATURES))
    labels = jax.random.randint(keys[3], (BATCH,), 0, CLASSES)
    return train_step, (params, OPTIMIZER.init(params), (x, labels))
