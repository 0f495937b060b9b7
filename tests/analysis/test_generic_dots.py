"""A plain product XLA:CPU runs as a lone HLO ``dot`` (``matmul:generic``, ``kernel_classes.GENERIC``), read off
real JAX traces: YNNPACK takes a dot whose left operand contracts its minor-most dim, XLA runs the others itself."""

from __future__ import annotations

import pytest

from neural_cost import estimate_trace
from neural_cost.analysis.kernel_classes import borrowed_class, kernel_class
from neural_cost.analysis.kernels import kernel_rows
from neural_cost.hardware.kernel_model import Point, fit_calibration
from tests.analysis.test_kernel_bound import SPEC

jax = pytest.importorskip("jax")


def _classes(fn, *shapes):
    from neural_cost.adapters import adapter_for

    jnp = jax.numpy
    args = tuple(jnp.ones(shape) for shape in shapes)
    estimate = estimate_trace(adapter_for("jax", cross_check=True).trace(jax.jit(fn), args))
    return [(row.kind, kernel_class(estimate, row)) for row in kernel_rows(estimate, SPEC)[0] if row.index is not None]


def test_a_weight_gradients_dot_is_generic_and_a_forward_product_is_not():
    """xᵀ·dy laid out as a weight gradient (``ki,jk->ij``: the left operand contracts its major dim 0, the right its
    minor dim 1) and ``ki,kj->ij`` are lone ``dot`` kernels: ``matmul:generic``; ``x @ w`` (``ik,kj``) is YNNPACK's
    fusion: ``matmul``."""
    jnp = jax.numpy
    lone = [("dot", "matmul:generic")]
    assert _classes(lambda x, g: jnp.einsum("ki,jk->ij", x, g), (1024, 256), (2048, 1024)) == lone
    assert _classes(lambda x, g: jnp.einsum("ki,kj->ij", x, g), (1024, 256), (1024, 2048)) == lone
    [(kind, name)] = _classes(lambda x, w: x @ w, (256, 1024), (1024, 2048))
    assert (kind, name) == ("fusion", "matmul")


def test_a_lone_batched_dot_or_one_in_a_loop_keeps_its_class():
    """A lone dot with batch dims is ``batched_matmul`` (its own grid), and one a scan runs every trip a loop's
    member (``loop_dots``), not ``:generic``."""
    jnp = jax.numpy
    batched = _classes(lambda a, b: jnp.einsum("bki,bkj->bij", a, b), (8, 128, 64), (8, 128, 64))
    assert [name for _, name in batched] == ["batched_matmul"]

    def scanned(h, xs):
        return jax.lax.scan(lambda h, x: (jnp.einsum("ki,kj->ij", h, x), None), h, xs)[0]

    found = [name for _, name in _classes(scanned, (64, 64), (8, 64, 64))]
    assert any(name.startswith("matmul") and name.endswith("@loop") for name in found)
    assert not any(":generic" in name for name in found)


def test_without_a_curve_of_its_own_a_generic_dot_reads_matmuls():
    """A calibration of plain products only reads ``matmul:generic`` off ``matmul``, named as borrowed; with points
    of its own (at 2× the plain ones' time) it reads its own curve, and the plain curve keeps its points' rate."""
    plain = [Point("matmul", 1e-4 * k, 1e-5 * k, 1.2e-4 * k) for k in (1, 2, 4)]
    generic = [Point("matmul:generic", 1e-4 * k, 1e-5 * k, 2.4e-4 * k) for k in (1, 2, 4)]
    alone = fit_calibration("jax", SPEC, plain)
    assert borrowed_class(alone, "matmul:generic") == "matmul"
    both = fit_calibration("jax", SPEC, plain + generic)
    assert borrowed_class(both, "matmul:generic") is None
    assert both.classes["matmul"].seconds(2e-4, 0.0) == pytest.approx(2.4e-4, rel=1e-6)
    assert both.classes["matmul:generic"].seconds(2e-4, 0.0) == pytest.approx(4.8e-4, rel=1e-6)
