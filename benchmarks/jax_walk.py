"""How much does neural-cost's jaxpr walk cost, next to tracing the program at all?

Traces a deep, unrolled MLP (at least 10,000 equations) with ``jax.make_jaxpr`` (caches
cleared before each run), then walks it through the primitive table and estimates it.
Prints both times and the ratio walk / make_jaxpr, in the same process.

    JAX_PLATFORMS=cpu .venv/bin/python benchmarks/jax_walk.py [--layers N]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp

from neural_cost.adapters import JaxAdapter
from neural_cost.adapters._jax.walker import Walker
from neural_cost.core.records import Coverage, Trace
from neural_cost.costs import estimate_trace


def deep_mlp(x: jax.Array, weights: list[jax.Array], biases: list[jax.Array]) -> jax.Array:
    for w, b in zip(weights, biases, strict=True):
        x = jnp.tanh(x @ w + b)
    return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=3400)
    parser.add_argument("--repeats", type=int, default=3)
    layers = parser.parse_args().layers
    repeats = parser.parse_args().repeats
    x = jnp.ones((32, 64), jnp.float32)
    weights = [jnp.ones((64, 64), jnp.float32)] * layers
    biases = [jnp.ones((64,), jnp.float32)] * layers
    JaxAdapter()  # import and register the table before timing

    trace_times, walk_times = [], []
    for _ in range(repeats):
        jax.clear_caches()
        start = time.perf_counter()
        closed = jax.make_jaxpr(deep_mlp)(x, weights, biases)
        trace_times.append(time.perf_counter() - start)

        start = time.perf_counter()
        state = Walker({}, 8).run(closed)
        trace = Trace(
            tuple(state.operations),
            Coverage(
                state.executed, state.modeled, state.free, tuple(state.unmodeled.items()), state.static, "equations"
            ),
        )
        estimate = estimate_trace(trace)
        walk_times.append(time.perf_counter() - start)

    equations = len(closed.jaxpr.eqns)
    best_trace, best_walk = min(trace_times), min(walk_times)
    print(f"equations:                  {equations:,} ({layers} layers)")
    print(f"coverage:                   {trace.coverage.fraction:.1%}, {estimate.flops:,} FLOPs")
    print(f"jax.make_jaxpr (best of {repeats}): {best_trace:.3f} s")
    print(f"walk + estimate (best of {repeats}): {best_walk:.3f} s  ({equations / best_walk:,.0f} equations/s)")
    print(f"ratio walk / make_jaxpr:    {best_walk / best_trace:.2f}")


if __name__ == "__main__":
    main()
