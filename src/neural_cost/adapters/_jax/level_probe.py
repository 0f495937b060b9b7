"""Cache-level probe loops compiled by XLA: every pass inside one ``fori_loop`` call.

A numpy loop pays one Python call per pass, about the time of a 32 KiB copy, so at L1
sizes it measures the interpreter. Here the pass count is a traced argument (one compile
per buffer size) and the whole loop runs in one call. The scalars are run-time arguments
so XLA cannot fold them away, and the copy multiplies by a carried factor that XLA cannot
prove constant, so the copy cannot be hoisted out of the loop as loop-invariant.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax import lax

from ...hardware.level_probes import Array, LevelKernels


@jax.jit
def _copy_loop(src: Any, dst: Any, passes: Any, one: Any) -> Any:
    def body(_: Any, carry: tuple[Any, Any]) -> tuple[Any, Any]:
        _, factor = carry
        # dst = src × factor, factor = 1 carried: one read of src and one write of dst per pass
        return src * factor, factor * one

    result, _ = lax.fori_loop(0, passes, body, (dst, one))
    return result


@jax.jit
def _in_place_loop(x: Any, passes: Any, a: Any, b: Any) -> Any:
    return lax.fori_loop(0, passes, lambda _, value: value * a + b, x)


def jax_level_kernels(device: Any = None) -> LevelKernels:
    """``LevelKernels`` running on ``device`` (default: JAX's first CPU device)."""
    target = device if device is not None else jax.devices("cpu")[0]
    one = jax.device_put(np.float32(1.0), target)

    def copy(dst: Array, src: Array, passes: int) -> Array:
        result = _copy_loop(jax.device_put(src, target), jax.device_put(dst, target), passes, one)
        return np.asarray(jax.block_until_ready(result))  # type: ignore[no-untyped-call]

    def in_place(x: Array, passes: int) -> Array:
        result = _in_place_loop(jax.device_put(x, target), passes, one, one)
        return np.asarray(jax.block_until_ready(result))  # type: ignore[no-untyped-call]

    return LevelKernels(f"jax {jax.__version__} fori_loop (one compiled call per sample)", copy, in_place)
