"""The framework floor (``analysis.workload.Floor``, ``framework_floor``): a tiny run's time that
its kernels do not explain, and at most what its profiler saw outside them."""

from __future__ import annotations

import pytest

from neural_cost.analysis.workload import Floor


def test_the_floor_is_the_smaller_of_the_unexplained_time_and_the_time_outside_kernels():
    """A scanned RNN at batch 1 (figures of a 2-core VM): 957 µs a run, its kernels expected at
    516 µs → 441 µs unexplained; the profiler saw 72 µs outside its kernels → the floor is 72 µs
    (its one-row dots ran slower than the model expects: a miss at batch 1, not a cost of every
    batch). A CNN whose kernels are expected above its run (714 µs against 565 µs) has none, whatever
    the profiler saw (30 µs); without a profile (PyTorch's eager ops are timed by the wall) the
    unexplained time is the floor."""
    scan = Floor.of(957e-6, 516e-6, 72e-6)
    assert scan.seconds == pytest.approx(72e-6) and scan.outside_seconds == pytest.approx(72e-6)
    assert "the profiler saw 72.0 µs outside its kernels (the smaller counts)" in scan.note()
    assert Floor.of(565e-6, 714e-6, 30e-6).seconds == 0.0
    eager = Floor.of(2.835e-3, 2.573e-3)
    assert eager.seconds == pytest.approx(262e-6) and eager.outside_seconds is None
    assert "profiler" not in eager.note()
    # a profiler that saw more outside than the model leaves unexplained does not raise the floor
    assert Floor.of(1e-3, 0.9e-3, 0.5e-3).seconds == pytest.approx(0.1e-3)


def test_a_jax_programs_floor_is_held_to_what_its_profiler_saw_outside_kernels():
    """JAX's kernels are timed by its profiler: the floor's passes profile the tiny run too, and
    the floor never exceeds the least time a pass saw outside its kernels."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.workload import framework_floor
    from neural_cost.hardware.kernel_model import KernelCalibration

    adapter = adapter_for("jax")
    calibration = KernelCalibration("jax", adapter.hardware(), {})  # no curve: every kernel at its bound
    fn = jax.jit(lambda x, w: jnp.tanh(x @ w))
    floor = framework_floor(adapter, fn, (jnp.ones((1, 64)), jnp.ones((64, 64))), {}, calibration, repeats=3,
                            passes=2, pause_seconds=0.0, warm_seconds=0.0)  # fmt: skip
    assert floor.outside_seconds is not None and floor.outside_seconds > 0
    assert 0 <= floor.seconds <= floor.outside_seconds
    assert floor.seconds <= max(0.0, floor.observed_seconds - floor.kernel_seconds) + 1e-12
    with pytest.raises(ValueError, match="at least one pass"):
        framework_floor(adapter, fn, (jnp.ones((1, 64)), jnp.ones((64, 64))), {}, calibration, passes=0)
