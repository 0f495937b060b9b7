"""Pointwise kernels that read a dynamic slice through two or more slices (``:sliced`` classes).

A GRU's gates over a step's row of precomputed input projections (Keras's GRU on JAX): XLA:CPU
fuses the row's ``dynamic-slice`` with the three ``slice``s that split it and the gates' math, and
that fusion ran 5–8× slower than the same math on a row read once. The HLO says so
(``Kernel.compiled_traits``), the class follows (``transcendental:sliced``), and a calibration
without such a curve reads the plain class's, named.
"""

from __future__ import annotations

import os

import pytest

from neural_cost.adapters._jax.hlo_text import parse_hlo
from neural_cost.adapters._jax.hlo_work import kernel_work
from neural_cost.analysis.kernel_classes import borrowed_class, class_model
from neural_cost.core.errors import RecordError
from neural_cost.core.kernels import SLICED_DYNAMIC_SLICE, Kernel
from neural_cost.hardware.kernel_model import Point, family, fit_calibration
from tests.analysis.test_kernel_bound import SPEC


def _module(body: list[str]) -> str:
    """A module whose entry runs one loop fusion of ``body`` over a (32, 8, 192) array and a step."""
    return "\n".join(
        [
            "HloModule m, entry_computation_layout={()->f32[8,64]}",
            "",
            "%fused (p0: f32[32,8,192], p1: s32[]) -> f32[8,64] {",
            "  %p0 = f32[32,8,192]{2,1,0} parameter(0)",
            "  %p1 = s32[] parameter(1)",
            "  %zero = s32[] constant(0)",
            "  %row = f32[1,8,192]{2,1,0} dynamic-slice(%p0, %p1, %zero, %zero), dynamic_slice_sizes={1,8,192}",
            "  %flat = f32[8,192]{1,0} bitcast(%row)",
            *body,
            "}",
            "",
            "ENTRY %main () -> f32[8,64] {",
            "  %xs = f32[32,8,192]{2,1,0} constant({...})",
            "  %t = s32[] constant(3)",
            "  ROOT %fusion.7 = f32[8,64]{1,0} fusion(%xs, %t), kind=kLoop, calls=%fused",
            "}",
            "",
        ]
    )


def _traits(body: list[str]) -> set[str]:
    module = parse_hlo(_module(body))
    entry = {i.name: i for i in module.computations["main"]}
    return kernel_work(module, entry["fusion.7"], entry).traits


def test_a_dynamic_slice_read_through_two_slices_is_a_trait_of_its_kernel():
    two = [
        "  %z = f32[8,64]{1,0} slice(%flat), slice={[0:8], [0:64]}",
        "  %r = f32[8,64]{1,0} slice(%flat), slice={[0:8], [64:128]}",
        "  ROOT %sum = f32[8,64]{1,0} add(%z, %r)",
    ]
    assert _traits(two) == {SLICED_DYNAMIC_SLICE}
    one = [  # the row read through one slice: none
        "  %z = f32[8,64]{1,0} slice(%flat), slice={[0:8], [0:64]}",
        "  ROOT %e = f32[8,64]{1,0} exponential(%z)",
    ]
    assert _traits(one) == set()
    # two slices of an array that is no dynamic slice (a step's carried state): none
    carried = [
        "  %z = f32[8,64]{1,0} slice(%flat), slice={[0:8], [0:64]}",
        "  %c = f32[8,192]{1,0} exponential(%flat)",
        "  %a = f32[8,64]{1,0} slice(%c), slice={[0:8], [0:64]}",
        "  %b = f32[8,64]{1,0} slice(%c), slice={[0:8], [64:128]}",
        "  %s = f32[8,64]{1,0} add(%a, %b)",
        "  ROOT %sum = f32[8,64]{1,0} add(%s, %z)",
    ]
    assert _traits(carried) == set()


def test_the_trait_is_part_of_the_kernel_record():
    kernel = Kernel("multiply_add_fusion.1", executions=32, kind="fusion", compiled_traits=[SLICED_DYNAMIC_SLICE])
    assert kernel.compiled_traits == (SLICED_DYNAMIC_SLICE,)
    assert Kernel.from_dict(kernel.to_dict()) == kernel
    assert Kernel.from_dict({"name": "old"}).compiled_traits == ()  # a report written before the field
    with pytest.raises(RecordError, match="compiled_traits='sliced_dynamic_slice' must be a sequence"):
        Kernel("k", compiled_traits=SLICED_DYNAMIC_SLICE)


def test_a_sliced_class_is_no_family_member_and_reads_its_plain_class_without_a_curve():
    """Plain loop fusions at 2× their memory time, sliced ones at 20×: the family's loop curve
    keeps the plain points' 2× (the sliced points stay in their own class), and a calibration of
    plain points alone reads a sliced kernel off the plain curve, named as borrowed."""
    plain = [Point("transcendental@loop", 0.0, 1e-6 * k, 2e-6 * k) for k in (1, 2, 4)]
    sliced = [Point("transcendental:sliced@loop", 0.0, 1e-6 * k, 2e-5 * k) for k in (1, 2, 4)]
    from neural_cost.analysis.conv_views import CHAINED, DEEP, DEEPER, FEW, ONE_BY_ONE
    from neural_cost.analysis.kernel_classes import GENERIC, POOLED
    from neural_cost.analysis.norm_views import KERAS
    from neural_cost.analysis.pointwise_views import FORWARDED, SLICED, TRANSPOSED
    from neural_cost.hardware.kernel_model import WAYS

    # one list of the ways, read by both
    ways = {
        POOLED,
        SLICED,
        TRANSPOSED,
        GENERIC,
        FORWARDED,
        KERAS,
        *(f":{way}" for way in (ONE_BY_ONE, CHAINED, FEW, DEEP, DEEPER)),
    }
    assert ways == {f":{way}" for way in WAYS}
    assert family("transcendental:sliced") is None and family("elementwise:sliced@loop") is None
    both = fit_calibration("jax", SPEC, plain + sliced)
    assert set(both.classes) == {"transcendental@loop", "transcendental:sliced@loop"}
    assert both.classes["transcendental@loop"].points == 3
    assert both.classes["transcendental@loop"].seconds(0.0, 2e-6) == pytest.approx(4e-6, rel=1e-6)
    assert both.classes["transcendental:sliced@loop"].seconds(0.0, 2e-6) == pytest.approx(4e-5, rel=1e-6)
    assert borrowed_class(both, "transcendental:sliced@loop") is None
    alone = fit_calibration("jax", SPEC, plain)
    assert class_model(alone, "transcendental:sliced@loop") is alone.classes["transcendental@loop"]
    assert borrowed_class(alone, "transcendental:sliced@loop") == "transcendental@loop"
    # a TensorFlow graph's thin 1×1 convolution: its plain thin class's curve, then the family's
    thin = fit_calibration("tensorflow", SPEC, [Point("conv:thin", 1e-4 * k, 0.0, 2e-4 * k) for k in (1, 2, 4)])
    assert family("conv:thin:1x1") is None and borrowed_class(thin, "conv:thin:1x1") == "conv:thin"
    wide = fit_calibration("tensorflow", SPEC, [Point("conv:wide", 1e-4 * k, 0.0, 2e-4 * k) for k in (1, 2, 4)])
    assert borrowed_class(wide, "conv:small_map:1x1") == "conv"  # conv:small_map, then the family's curve
    # JAX's chained thin convolutions: no family member; the family's curve without their own
    thin = [Point("conv:thin", 1e-4 * k, 0.0, 2e-4 * k) for k in (1, 2, 4)]
    jax_both = fit_calibration("jax", SPEC, thin + [Point("conv:chained", 1e-4 * k, 0.0, 5e-4 * k) for k in (1, 2, 4)])
    assert family("conv:chained") is None and borrowed_class(jax_both, "conv:chained") is None
    assert jax_both.classes["conv"].points == 3  # the thin points only: the chained ones bend no family curve
    assert jax_both.classes["conv:chained"].seconds(2e-4, 0.0) == pytest.approx(1e-3, rel=1e-6)  # 5 × its bound
    assert borrowed_class(fit_calibration("jax", SPEC, thin), "conv:chained") == "conv"


def test_the_jax_grids_gate_loops_are_sliced_kernels():
    """JAX's gate loops (``_gates``: a GRU's gates over a step's row of 3 × hidden projections;
    ``_affine``: ``h·a + b`` of a row's two halves) compile, with the pinned jax, to one loop fusion
    a step that reads the row through its slices: ``transcendental:sliced@loop`` and
    ``elementwise:sliced@loop``; the same gates over a row read whole are plain."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from neural_cost import estimate_trace
    from neural_cost.adapters import adapter_for
    from neural_cost.adapters._jax.microbench import _affine, _gates
    from neural_cost.analysis.kernel_classes import kernel_class
    from neural_cost.analysis.kernels import kernel_rows
    from neural_cost.analysis.workload import trace_workload

    def whole(xs, h):  # the row read once: no slice of it
        return jax.lax.scan(lambda h, x: (jax.nn.sigmoid(x + h) * jnp.tanh(h), None), h, xs)[0]

    adapter = adapter_for("jax")
    h = jnp.ones((8, 64))
    found = {}
    for name, fn, width in (("gates", _gates, 3), ("affine", _affine, 2), ("whole", whole, 1)):
        fn = jax.jit(fn)
        args = (jnp.ones((16, 8, width * 64)), h)
        adapter.benchmark(fn, *args, warmup=1, repeats=1)  # compiles: the trace reads its kernels
        estimate = estimate_trace(trace_workload(adapter, fn, args, {}))
        rows = kernel_rows(estimate, SPEC)[0]
        kernels = [row for row in rows if row.index is not None and row.executions == 16]
        found[name] = sorted({kernel_class(estimate, row) for row in kernels} - {"copy@loop"})
    # besides each step's fusion, only the loop's counter (an add: elementwise@loop) runs 16 times
    assert found == {
        "gates": ["elementwise@loop", "transcendental:sliced@loop"],
        "affine": ["elementwise:sliced@loop", "elementwise@loop"],
        "whole": ["elementwise@loop", "transcendental@loop"],
    }
