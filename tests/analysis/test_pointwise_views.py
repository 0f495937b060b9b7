"""A pointwise kernel that reads an operand across its layout (``pointwise_views``): ``elementwise:transposed``,
its memory time with its lines at the level that holds them between reuses, and its fallback without a curve."""

from __future__ import annotations

from dataclasses import replace

import pytest

from neural_cost import estimate_trace
from neural_cost.analysis.kernel_classes import borrowed_class, kernel_class, parts
from neural_cost.analysis.kernels import kernel_rows
from neural_cost.analysis.pointwise_views import REUSE_ROOM
from neural_cost.hardware.kernel_model import Point, family, fit_calibration
from tests.analysis.test_kernel_bound import SPEC

jax = pytest.importorskip("jax")


def _rows(permutation, shape):
    from neural_cost.adapters import adapter_for

    jnp = jax.numpy
    fn = jax.jit(lambda a, x, y: jnp.transpose(jax.nn.relu(x * a + y), permutation))
    args = (jnp.ones(shape[-1:]), jnp.ones(shape), jnp.full(shape, 2.0))
    estimate = estimate_trace(adapter_for("jax", cross_check=True).trace(fn, args))
    return estimate, [row for row in kernel_rows(estimate, SPEC)[0] if row.index is not None]


def test_a_transposed_pointwise_fusion_is_its_own_class_with_its_lines_memory_time():
    """relu(x·a + y) over 32⁴ transposed (3, 1, 2, 0): ``elementwise:transposed``; its part's memory time is its row's
    plus 125,829,120 bytes of lines (``tests/adapters/jax/test_strided_reads.py``) at DRAM's 100 GB/s — their
    4,194,304 bytes between reuses outgrow the spec's 1 MiB L2 (its L3 has no bandwidth: skipped) — 1.2583 ms more.
    Over 4 × 32² × 32 transposed (0, 3, 1, 2) the 15,728,640 bytes of lines come back within 131,072 bytes (twice
    that, ``REUSE_ROOM``, fits L2): at L2's 500 GB/s, 31.457 µs more. Over 32 × 16² × 32 (3, 1, 2, 0) they come back
    within 2 × 16·16·32 lines × 64 B = 1,048,576 bytes, the L2's size but not half of it: 2 × 262,144 × 60 =
    31,457,280 bytes at DRAM's rate."""
    estimate, (row,) = _rows((3, 1, 2, 0), (32, 32, 32, 32))
    assert kernel_class(estimate, row) == "elementwise:transposed"
    (part,) = parts(estimate, row, SPEC)
    assert part.kernel_class == "elementwise:transposed"
    assert part.memory_seconds == pytest.approx(row.memory_seconds + 125_829_120 / 100e9, rel=1e-12)
    assert part.compute_seconds == row.compute_seconds
    estimate, (row,) = _rows((0, 3, 1, 2), (4, 32, 32, 32))
    (part,) = parts(estimate, row, SPEC)
    assert part.memory_seconds == pytest.approx(row.memory_seconds + 15_728_640 / 500e9, rel=1e-12)
    assert REUSE_ROOM == 2
    estimate, (row,) = _rows((3, 1, 2, 0), (32, 16, 16, 32))
    (part,) = parts(estimate, row, SPEC)
    assert part.memory_seconds == pytest.approx(row.memory_seconds + 31_457_280 / 100e9, rel=1e-12)
    gpu = replace(SPEC, kind="gpu")  # XLA:GPU transposes a tile at a time through shared memory: no lines added
    assert parts(estimate, row, gpu)[0].memory_seconds == row.memory_seconds


def test_a_plain_pointwise_fusion_and_a_bare_transpose_keep_their_classes():
    """The same work without the transpose is ``elementwise`` at its row's memory time; a transpose alone ``copy``."""
    from neural_cost.adapters import adapter_for

    jnp = jax.numpy
    estimate, (row,) = _rows((0, 1, 2, 3), (32, 32, 32, 32))
    assert kernel_class(estimate, row) == "elementwise"
    assert parts(estimate, row, SPEC)[0].memory_seconds == row.memory_seconds
    fn = jax.jit(lambda x: jnp.transpose(x, (3, 1, 2, 0)))
    estimate = estimate_trace(adapter_for("jax", cross_check=True).trace(fn, (jnp.ones((32, 32, 32, 32)),)))
    assert [kernel_class(estimate, r) for r in kernel_rows(estimate, SPEC)[0] if r.index is not None] == ["copy"]


def test_without_a_curve_of_its_own_a_transposed_kernel_reads_the_plain_one_and_bends_no_other():
    """Plain points at 2× their memory time, transposed ones at 8×: each class keeps its own (``transposed`` is a way
    to run, no family member); a calibration of plain points alone reads a transposed kernel off ``elementwise``,
    named as borrowed, at its lines' memory time."""
    plain = [Point("elementwise", 0.0, 1e-5 * k, 2e-5 * k) for k in (1, 2, 4)]
    transposed = [Point("elementwise:transposed", 0.0, 1e-5 * k, 8e-5 * k) for k in (1, 2, 4)]
    assert family("elementwise:transposed") is None
    both = fit_calibration("jax", SPEC, plain + transposed)
    assert both.classes["elementwise"].seconds(0.0, 2e-5) == pytest.approx(4e-5, rel=1e-6)
    assert both.classes["elementwise:transposed"].seconds(0.0, 2e-5) == pytest.approx(1.6e-4, rel=1e-6)
    assert borrowed_class(both, "elementwise:transposed") is None
    alone = fit_calibration("jax", SPEC, plain)
    assert borrowed_class(alone, "elementwise:transposed") == "elementwise"
    assert borrowed_class(alone, "transcendental:transposed") is None  # no transcendental curve: none at all
