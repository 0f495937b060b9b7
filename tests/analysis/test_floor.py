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


def test_a_tiny_run_in_the_busy_host_state_has_its_loops_kernels_taken_out_in_that_state():
    """A PyTorch LSTM at batch 1 (a 2-core VM): its kernels expected at 763 µs at their fastest, 1.264 ms in
    the host's state of a run that took 1.495 ms (a wake-up of 18.9 µs) → 1.495 − 1.264 = 231 µs, what
    the same run left with the host quiet (994 − 763 µs); at their fastest it would be 732 µs, the host's
    slowdown of the loops counted as a framework cost of every batch. Kernels in the state above the run
    leave no floor (never below 0); a state that reads them at their fastest or below changes nothing."""
    busy = Floor.of(1.495e-3, 763e-6, None, 1.264e-3, 18.9e-6)
    assert busy.seconds == pytest.approx(231e-6) and busy.state_seconds == 1.264e-3
    assert busy.note() == (
        "framework floor 231.0 µs: a tiny-input run took 1.495 ms, its kernels are expected to take 763.0 µs "
        "(1.264 ms in the host's state while it ran: a cross-core wake-up of 18.9 µs, its loops' kernels past "
        "their fastest times)"
    )
    assert Floor.of(1.495e-3, 763e-6, None, 1.74e-3, 18.9e-6).seconds == 0.0
    quiet = Floor.of(994e-6, 763e-6, None, 763e-6, 7.4e-6)
    assert quiet.seconds == pytest.approx(231e-6) and quiet.state_seconds is None
    assert "host's state" not in quiet.note()
    # with a profile the smaller still counts: 1.495 − 1.264 = 231 µs against 100 µs outside kernels
    assert Floor.of(1.495e-3, 763e-6, 100e-6, 1.264e-3, 18.9e-6).seconds == pytest.approx(100e-6)


def test_the_floor_reads_the_host_state_of_its_fastest_pass(monkeypatch):
    """Two passes of a tiny PyTorch program; the calibration's loop classes (``test_usual_loops``: matmul at
    1.2× its roofline, 2.4× as usual) and host states 6.5 / 10.5 µs. The wake-ups around each pass are
    read in turn (before, after): the state kept is the fastest pass's mean, handed to ``between``."""
    torch = pytest.importorskip("torch")
    from dataclasses import replace

    from neural_cost.adapters import adapter_for
    from neural_cost.analysis import workload
    from tests.analysis.test_usual_loops import _calibration

    readings = iter([7e-6, 9e-6, 17e-6, 19e-6])  # pass 1: 7 and 9 µs (mean 8); pass 2: 17 and 19 µs (mean 18)
    monkeypatch.setattr(workload, "cross_core_wake", lambda: next(readings))
    seen: list[float | None] = []
    real = workload.between

    def spy(seconds, usual, wakes, wake):
        seen.append(wake)
        return real(seconds, usual, wakes, wake)

    monkeypatch.setattr(workload, "between", spy)
    from neural_cost.measure.timing import benchmark

    medians = iter([2e-3, 1e-3])  # the second pass is the faster: its state (18 µs) is read

    def timed(*args, **kwargs):  # the harness (which reads the state before its timed runs), then a median
        benchmark(lambda: None, warmup=0, repeats=1)
        return type("Timed", (), {"median_seconds": next(medians)})()

    monkeypatch.setattr(workload, "time_workload", timed)
    calibration = replace(_calibration(), loop_wakes=(6.5e-6, 10.5e-6))
    layer = torch.nn.Linear(8, 4)
    floor = workload.framework_floor(adapter_for("torch"), layer, (torch.ones(1, 8),), {}, calibration,
                                     passes=2, pause_seconds=0.0)  # fmt: skip
    assert seen == [pytest.approx(18e-6)] and floor.observed_seconds == 1e-3
    # the wake-ups were read only around the (patched) timed runs: all four used, none left over
    assert next(readings, None) is None
    # a calibration without host states reads none: no wake-up is measured
    monkeypatch.setattr(workload, "cross_core_wake", lambda: pytest.fail("no host state to read against"))
    medians = iter([2e-3, 1e-3])
    plain = workload.framework_floor(adapter_for("torch"), layer, (torch.ones(1, 8),), {}, _calibration(),
                                     passes=2, pause_seconds=0.0)  # fmt: skip
    assert plain.state_seconds is None and plain.wake_seconds is None
