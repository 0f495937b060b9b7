"""The JAX calibration's pointwise work transposed in its own fusion (``elementwise:transposed``,
``analysis/pointwise_views.py``): ``relu(x₀·a + x₁ + …)`` over NHWC arrays, written transposed — (3, 1, 2, 0), the
channel ↔ batch swap XLA:CPU lays a filter gradient's operand out in (a Flax ResNet's training step recomputes its
batch norms and ReLUs into such a fusion), and (0, 3, 1, 2), NHWC → NCHW. XLA fuses the transpose into the pointwise
loop: one kernel a program, reading its arrays a cache line an element.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp

from .. import _microgrid as grid
from ..base import MicroProgram

__all__ = ["transposed_pointwise"]

#: ``(shape NHWC, permutation, arrays read)``: 1–8 MiB an array, the lines between reuses 32 kB–8 MB; the last two
#: as a ResNet's recomputed batch norm reads (one array, its channel's vectors).
_TRANSPOSED = (
    ((32, 32, 32, 32), (3, 1, 2, 0), 2), ((32, 16, 16, 64), (3, 1, 2, 0), 2), ((32, 8, 8, 128), (3, 1, 2, 0), 2),
    ((8, 32, 32, 32), (3, 1, 2, 0), 2), ((32, 32, 32, 32), (3, 1, 2, 0), 4), ((16, 16, 16, 64), (3, 1, 2, 0), 3),
    ((64, 8, 8, 64), (3, 1, 2, 0), 3), ((128, 16, 16, 16), (3, 1, 2, 0), 1), ((32, 32, 32, 32), (0, 3, 1, 2), 2),
    ((32, 16, 16, 64), (0, 3, 1, 2), 2), ((32, 32, 32, 32), (3, 1, 2, 0), 1), ((32, 16, 16, 64), (3, 1, 2, 0), 1),
)  # fmt: skip


def _program(permutation: tuple[int, ...]) -> Callable[..., Any]:
    def transposed(a: jax.Array, *xs: jax.Array) -> jax.Array:
        total = xs[0] * a
        for x in xs[1:]:
            total = total + x
        return jnp.transpose(jax.nn.relu(total), permutation)

    return transposed


def transposed_pointwise(rand: grid.Inputs[jax.Array], quick: bool) -> Iterator[MicroProgram]:
    for shape, permutation, count in _TRANSPOSED[: 1 if quick else None]:
        arrays = tuple(rand(*shape, k=k) for k in range(count))
        name = f"transposed {permutation} relu of {count} {'x'.join(map(str, shape))}"
        yield MicroProgram(name, _program(permutation), (rand(shape[-1], k=count), *arrays))
