"""The members of ``matmul@loop`` (``analysis/loop_dots.py``), by hand and on a real jitted scan.

The test spec (``test_kernel_bound.SPEC``): per-core L1d 32 KiB and L2 1 MiB, two instances each —
the cores' own caches together are 2 × 1,048,576 = 2,097,152 B (the L2's; L1d is smaller).

A scanned tanh cell of 64 steps at batch 16, 256 → 512 (float32): its two products run 64 times,
x·Wx (16,256)@(256,512) and h·Wh (16,512)@(512,512); their right operands are 256·512·4 = 524,288 B
and 512·512·4 = 1,048,576 B, 1,572,864 B together ≤ 2,097,152 → ``matmul:kept@loop``. At 1,024
hidden units Wh alone is 4 MiB → ``matmul:streamed@loop``. A 256-wide cell's products are
``matmul:narrow@loop`` whatever its weights. A product that runs once is ``matmul``.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from neural_cost import Coverage, Kernel, Operation, Trace, estimate_trace
from neural_cost.analysis.expected import expected_time
from neural_cost.analysis.kernel_classes import borrowed_class, parts, read_class
from neural_cost.analysis.kernels import kernel_rows
from neural_cost.analysis.loop_dots import cores_cache_bytes, loop_weight_bytes
from neural_cost.hardware.kernel_model import ClassModel, Curve, KernelCalibration
from neural_cost.hardware.spec import HardwareSpec, MemoryLevel
from tests.analysis.test_kernel_bound import SPEC


def _cell(batch: int, features: int, hidden: int, steps: int = 64) -> tuple[Operation, ...]:
    return (
        Operation("xw", "matmul", ((batch, features), (features, hidden)), (batch, hidden), count=steps),
        Operation("hw", "matmul", ((batch, hidden), (hidden, hidden)), (batch, hidden), count=steps),
        Operation(
            "add", "elementwise", ((batch, hidden), (batch, hidden)), (batch, hidden), attrs={"op": "add"}, count=steps
        ),
        Operation("once", "matmul", ((batch, hidden), (hidden, 10)), (batch, 10)),
    )


def _classes(ops: tuple[Operation, ...], spec: HardwareSpec = SPEC, kernels: tuple[Kernel, ...] = ()) -> dict:
    estimate = estimate_trace(Trace(ops, Coverage.full(ops), kernels=kernels, kernel_source="hand", framework="jax"))
    rows, _ = kernel_rows(estimate, spec)
    return {row.name: parts(estimate, row, spec)[0].kernel_class for row in rows}


def test_the_cores_own_caches_and_a_loops_weights_by_hand():
    assert cores_cache_bytes(SPEC) == 2 * 1_048_576
    no_core_level = dataclasses.replace(SPEC, memory_levels=(MemoryLevel("DRAM", 1 << 36, 100e9),))
    assert cores_cache_bytes(no_core_level) is None
    ops = _cell(16, 256, 512)
    estimate = estimate_trace(Trace(ops, Coverage.full(ops), framework="jax"))
    assert loop_weight_bytes(estimate, 64) == 256 * 512 * 4 + 512 * 512 * 4 == 1_572_864
    assert loop_weight_bytes(estimate, 1) == 512 * 10 * 4  # the product run once, alone


def test_a_loops_products_are_kept_streamed_or_narrow():
    kept = _classes(_cell(16, 256, 512))
    assert kept == {"xw": "matmul:kept@loop", "hw": "matmul:kept@loop", "add": "elementwise@loop", "once": "matmul"}
    streamed = _classes(_cell(16, 256, 1024))  # 256·1024·4 + 1024²·4 = 5,242,880 B > 2 MiB
    assert streamed["xw"] == streamed["hw"] == "matmul:streamed@loop"
    narrow = _classes(_cell(16, 2048, 256))  # 2048·256·4 + 256²·4 = 2,359,296 B > 2 MiB, 256 wide: narrow
    assert narrow["xw"] == narrow["hw"] == "matmul:narrow@loop"
    half = dataclasses.replace(SPEC, memory_levels=tuple(
        dataclasses.replace(level, instances=1) if level.per_core else level for level in SPEC.memory_levels
    ))  # fmt: skip
    assert _classes(_cell(16, 256, 512), half)["hw"] == "matmul:streamed@loop"  # 1.5 MiB > one 1 MiB L2
    gpu_like = dataclasses.replace(SPEC, memory_levels=(MemoryLevel("DRAM", 1 << 36, 100e9),))
    assert _classes(_cell(16, 256, 512), gpu_like)["hw"] == "matmul@loop"  # no per-core level: the family


def test_a_compiled_kernel_is_classed_by_its_heaviest_product():
    """fusion.1 runs xw and add 64 times: its product, xw, is 512 wide → kept (as above); dot.2 runs hw."""
    ops = _cell(16, 256, 512)
    kernels = (
        Kernel("fusion.1", (0, 2), traffic_bytes=600_000, footprint_bytes=600_000, executions=64, kind="fusion"),
        Kernel("dot.2", (1,), traffic_bytes=1_100_000, footprint_bytes=1_100_000, executions=64, kind="dot"),
    )
    found = _classes(ops, kernels=kernels)
    assert found["fusion.1"] == found["dot.2"] == "matmul:kept@loop"
    # 2048 → 512: xw's right operand 2048·512·4 = 4 MiB, hw's 1 MiB — 5 MiB a trip, streamed; a
    # kernel running hw 10 times where the trace counted 64 is weighed by the loop the trace counts
    # hw in (its records counted 64 times: xw and hw), not by its compiled trip count: streamed too
    wide = _cell(16, 2048, 512)
    for executions in (64, 10):
        dot = Kernel("dot.2", (1,), traffic_bytes=1_100_000, footprint_bytes=1_100_000, executions=executions)
        assert _classes(wide, kernels=(dot,))["dot.2"] == "matmul:streamed@loop"


def test_each_part_of_a_fused_loop_kernel_is_judged_by_its_own_product():
    """fusion.3 runs, 64 times a run, a (16,512)@(512,128) product and a (16,512)@(512,1024) one, as
    two parts: the first is 128 wide → narrow; the second 1024 wide, and the right operands of the
    products counted 64 times are 512·128·4 + 512·1024·4 = 2,359,296 B > 2 MiB → streamed."""
    ops = (
        Operation("a", "matmul", ((16, 512), (512, 128)), (16, 128), count=64),
        Operation("b", "matmul", ((16, 512), (512, 1024)), (16, 1024), count=64),
    )
    fused = (Kernel("fusion.3", (0, 1), traffic_bytes=2_400_000, footprint_bytes=2_400_000, executions=64),)
    estimate = estimate_trace(Trace(ops, Coverage.full(ops), kernels=fused, kernel_source="hand", framework="jax"))
    rows, _ = kernel_rows(estimate, SPEC)
    row = next(row for row in rows if row.name == "fusion.3")
    assert [part.kernel_class for part in parts(estimate, row, SPEC)] == ["matmul:narrow@loop", "matmul:streamed@loop"]


def test_a_member_without_a_curve_reads_the_loop_family_then_matmul():
    flat = ClassModel("matmul", Curve((-4.0,), (-6.0,)), None, points=3)
    loop = ClassModel("matmul@loop", Curve((-4.0,), (-7.0,)), None, points=3)
    kept = ClassModel("matmul:kept@loop", Curve((-4.0,), (-8.0,)), None, points=3)

    def calibration(classes: dict) -> KernelCalibration:
        return KernelCalibration("jax", SPEC, classes, machine={}, date="2026-12-04")

    assert read_class(calibration({"matmul": flat, "matmul@loop": loop}), "matmul:kept@loop") == "matmul@loop"
    assert borrowed_class(calibration({"matmul": flat, "matmul@loop": loop}), "matmul:kept@loop") == "matmul@loop"
    assert read_class(calibration({"matmul": flat}), "matmul:streamed@loop") == "matmul"
    own = calibration({"matmul": flat, "matmul@loop": loop, "matmul:kept@loop": kept})
    assert read_class(own, "matmul:kept@loop") == "matmul:kept@loop"
    assert read_class(own, "matmul:narrow@loop") == "matmul@loop"
    # the cell's two kept products, 64 executions each (4.2 µs and 11.1 µs of roofline an execution, under
    # the curves' one knot at 100 µs) read the kept curve (flat there, 10 ns an execution):
    # 2 × 64 × 10 ns = 1.28 µs; read off the family's (flat 100 ns), 12.8 µs, noted as borrowed
    ops = _cell(16, 256, 512)
    estimate = estimate_trace(Trace(ops, Coverage.full(ops), framework="jax"))
    rows = {row.name: row for row in expected_time(estimate, own, machine={}).rows}
    assert rows["xw"].seconds + rows["hw"].seconds == pytest.approx(2 * 64 * 1e-8)
    family = expected_time(estimate, calibration({"matmul": flat, "matmul@loop": loop}), machine={})
    assert sum(r.seconds for r in family.rows if r.name in ("xw", "hw")) == pytest.approx(2 * 64 * 1e-7)
    assert "matmul:kept@loop (2) off matmul@loop" in " ".join(family.notes)


def test_a_jitted_scans_dots_are_loop_members():
    """A real jitted ``lax.scan`` of a tanh cell (batch 4, 96 → 384, 8 steps): its compiled dots
    run 8 times a run; Wx 96·384·4 = 147,456 B and Wh 384²·4 = 589,824 B, 737,280 B ≤ 2 MiB → kept;
    under per-core caches of 256 KiB × 2 = 524,288 B → streamed."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.workload import program_options, trace_workload

    def rnn(wx, wh, xs):
        def step(h, x):
            return jnp.tanh(x @ wx + h @ wh), None

        return jax.lax.scan(step, jnp.zeros((xs.shape[1], wh.shape[0])), xs)[0]

    adapter = adapter_for("jax")
    args = (jnp.ones((96, 384)), jnp.ones((384, 384)), jnp.ones((8, 4, 96)))
    options, _ = program_options(adapter, None, None)
    estimate = estimate_trace(trace_workload(adapter, jax.jit(rnn), args, {}, options))
    small = dataclasses.replace(SPEC, memory_levels=tuple(
        dataclasses.replace(level, capacity_bytes=262_144) if level.name == "L2" else level
        for level in SPEC.memory_levels
    ))  # fmt: skip
    for spec, member in ((SPEC, "matmul:kept@loop"), (small, "matmul:streamed@loop")):
        rows, _ = kernel_rows(estimate, spec)
        products = [row for row in rows if row.executions == 8 and row.flops >= 2 * 4 * 96 * 384 * 8]
        assert products, [(row.name, row.executions) for row in rows]
        assert {parts(estimate, row, spec)[0].kernel_class for row in products} == {member}
    assert loop_weight_bytes(estimate, 8) == (96 * 384 + 384 * 384) * 4 == 737_280
    assert math.isclose(cores_cache_bytes(small) or 0, 2 * 262_144)
