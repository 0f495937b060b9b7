"""The JAX calibration's programs whose cost is their operands' layout: products XLA:CPU runs as a lone ``dot``
(``matmul:generic``: a weight gradient's xᵀ·dy, whose left operand contracts its major-most dim; YNNPACK takes the
others) and pointwise work transposed in its own fusion (``elementwise:transposed``,
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

__all__ = ["generic_dots", "transposed_pointwise"]

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


#: ``(K, M, N)`` of ``einsum("ki,jk->ij")`` (K the contracted rows: a batch's tokens; a dense layer's M → N weight
#: gradient as XLA lays it out) and of ``einsum("ki,kj->ij")``: both lone dots on XLA:CPU 0.10.2.
_GENERIC_DOTS = {
    "ki,jk->ij": ((256, 64, 64), (512, 128, 256), (1024, 256, 256), (4096, 256, 256), (1024, 768, 768),
                  (1024, 256, 2048), (128, 1024, 1024), (512, 512, 512), (2048, 64, 256), (4096, 128, 512)),
    "ki,kj->ij": ((512, 128, 256), (1024, 768, 768), (4096, 256, 256)),
}  # fmt: skip


def _dot(spec: str) -> Callable[..., Any]:
    def dot(x: jax.Array, g: jax.Array) -> jax.Array:
        return jnp.einsum(spec, x, g)

    return dot


def generic_dots(rand: grid.Inputs[jax.Array], quick: bool) -> Iterator[MicroProgram]:
    for spec, sizes in tuple(_GENERIC_DOTS.items())[: 1 if quick else None]:
        for k, m, n in sizes[: 1 if quick else None]:
            right = rand(k, n, k=1) if spec == "ki,kj->ij" else rand(n, k, k=1)
            yield MicroProgram(f"lone dot {spec} {k}x{m}x{n}", _dot(spec), (rand(k, m), right))
