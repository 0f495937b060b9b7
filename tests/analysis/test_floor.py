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


def test_a_tiny_run_in_a_slow_spell_is_taken_at_the_machines_calibrated_speed():
    """Figures of a 2-core VM: a PyTorch LSTM's batch-1 run took 2.321 ms with the drift probes at 1.41× their
    calibrated time, its kernels expected at 1.683 ms: as it ran, 638 µs of floor; at the calibrated speed
    2.321 / 1.41 = 1.646 ms, under its kernels: 0 (clamped). A ResNet's took 3.832 ms at 1.24×, kernels 2.759 ms:
    3.832 / 1.24 = 3.0903 ms → 331.3 µs (1.073 ms as it ran). A JAX program's profiler saw 200 µs outside its
    kernels at 1.25×: 160 µs at the calibrated speed caps 1.0 / 1.25 − 0.5 = 300 µs. A machine faster than
    calibrated (0.9×) raises the floor: 0.9 / 0.9 − 0.5 = 500 µs."""
    lstm = Floor.of(2.321e-3, 1.683e-3, drift=1.41)
    assert lstm.seconds == 0.0 and lstm.drift == 1.41 and Floor.of(2.321e-3, 1.683e-3).seconds == pytest.approx(638e-6)
    resnet = Floor.of(3.832e-3, 2.759e-3, drift=1.24)
    assert resnet.seconds == pytest.approx(3.832e-3 / 1.24 - 2.759e-3) and resnet.observed_seconds == 3.832e-3
    assert resnet.note() == (
        "framework floor 331.3 µs: a tiny-input run took 3.832 ms (3.090 ms at the machine's calibrated speed: its "
        "drift probes ran 1.24× their calibrated time just before), its kernels are expected to take 2.759 ms"
    )
    assert Floor.of(1e-3, 0.5e-3, 200e-6, drift=1.25).seconds == pytest.approx(160e-6)
    assert Floor.of(0.9e-3, 0.5e-3, drift=0.9).seconds == pytest.approx(500e-6)
    # none measured, or exactly as calibrated: the run as it ran, and the note says nothing of it
    assert Floor.of(1e-3, 0.5e-3, drift=None).drift is None and Floor.of(1e-3, 0.5e-3, drift=1.0).drift is None
    assert "calibrated speed" not in Floor.of(1e-3, 0.5e-3, drift=1.0).note()
    # kernels taken out in the host's busy state read its slowdown already: the drift is not taken out again
    busy = Floor.of(1.495e-3, 763e-6, None, 1.2e-3, 18.5e-6, drift=1.3)
    assert busy.seconds == pytest.approx(295e-6) and busy.drift is None


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
    """A PyTorch LSTM at batch 1 (a 2-core VM): 994 µs a run with the host quiet and 1.495 ms with it busy, its
    kernels expected at 763 µs at their fastest and 1.740 ms at their usual times. Quiet: 994 − 763 = 231 µs.
    Busy, at their fastest, 1.495 − 0.763 = 732 µs: the host's slowdown of its loops counted as a cost of every
    batch. Busy, in its state: 1.740 ms exceeds the run, so the floor cannot be told there: 0, said so. An
    illustrative program whose kernels read 1.2 ms in the busy state of a 1.495 ms run keeps 295 µs."""
    real = Floor.of(1.495e-3, 763e-6, None, 1.74e-3, 18.5e-6)
    assert real.seconds == 0.0 and real.unknown and real.state_seconds == 1.74e-3
    assert real.note() == (
        "framework floor 0 s: a tiny-input run took 1.495 ms, its kernels are expected to take 763.0 µs "
        "(1.740 ms taken out instead: its loops' kernels at their usual times, in the host's busy state, a "
        "cross-core wake-up of 18.5 µs around its timed runs; more than the run took: the floor cannot be told "
        "in this state, taken as 0)"
    )
    kept = Floor.of(1.495e-3, 763e-6, None, 1.2e-3, 18.5e-6)
    assert kept.seconds == pytest.approx(295e-6) and not kept.unknown
    assert kept.note().endswith("a cross-core wake-up of 18.5 µs around its timed runs)")
    quiet = Floor.of(994e-6, 763e-6, None, None, 7.4e-6)
    assert quiet.seconds == pytest.approx(231e-6) and quiet.state_seconds is None and not quiet.unknown
    assert "host's" not in quiet.note()
    assert Floor.of(994e-6, 763e-6, None, 700e-6, 7.4e-6).state_seconds is None  # not above: changes nothing
    # with a profile the smaller still counts: 295 µs against 100 µs outside kernels
    assert Floor.of(1.495e-3, 763e-6, 100e-6, 1.2e-3, 18.5e-6).seconds == pytest.approx(100e-6)


def _passes(monkeypatch, medians, readings, calibration):
    """``framework_floor`` of a tiny PyTorch ``Linear`` with its passes' medians and wake-ups (before, after
    each pass) given, and its kernels' expectation replaced: 400 µs at their fastest, 1.0 ms as usual."""
    torch = pytest.importorskip("torch")
    from dataclasses import replace

    from neural_cost.adapters import adapter_for
    from neural_cost.analysis import workload
    from neural_cost.measure.timing import benchmark

    found = iter(readings)
    monkeypatch.setattr(workload, "cross_core_wake", lambda: next(found))
    times = iter(medians)

    def timed(*args, **kwargs):  # the harness (which reads the state before its timed runs), then a median
        benchmark(lambda: None, warmup=0, repeats=1)
        return type("Timed", (), {"median_seconds": next(times)})()

    real = workload.expected_time
    monkeypatch.setattr(workload, "time_workload", timed)
    monkeypatch.setattr(workload, "expected_time", lambda *a, **k: replace(
        real(*a, **k), kernel_seconds=400e-6, usual_seconds=1e-3))  # fmt: skip
    layer = torch.nn.Linear(8, 4)
    floor = workload.framework_floor(adapter_for("torch"), layer, (torch.ones(1, 8),), {}, calibration,
                                     passes=len(medians), pause_seconds=0.0)  # fmt: skip
    assert next(found, None) is None  # every reading taken around a pass, none more
    return floor


def test_the_floor_keeps_the_fastest_quiet_pass_else_the_fastest_in_its_state_never_past_usual(monkeypatch):
    """Host states 6.5 / 10.5 µs (line √(6.5 × 10.5) = 8.26 µs). Passes of 1.0 ms (read 7 and 9 µs: mean 8, quiet)
    and 0.9 ms (17 and 19 µs: mean 18, busy): the quiet one is kept, 1.0 − 0.4 = 600 µs. Both busy (means 18
    and 30 µs): the faster, 0.9 ms at 30 µs, its kernels at their usual times — its share, (30 − 6.5) / 4 = 5.9
    (2.5 at most for a program), held at 1 for a floor —, 0.9 − 1.0 < 0: unknown, 0. Busy at 1.3 ms: 1.3 − 1.0
    = 300 µs."""
    from dataclasses import replace

    from tests.analysis.test_usual_loops import _calibration

    calibration = replace(_calibration(), loop_wakes=(6.5e-6, 10.5e-6))
    quiet = _passes(monkeypatch, [1.0e-3, 0.9e-3], [7e-6, 9e-6, 17e-6, 19e-6], calibration)
    assert quiet.observed_seconds == 1.0e-3 and quiet.seconds == pytest.approx(600e-6)
    assert quiet.state_seconds is None and quiet.wake_seconds == pytest.approx(8e-6)
    busy = _passes(monkeypatch, [1.1e-3, 0.9e-3], [17e-6, 19e-6, 29e-6, 31e-6], calibration)
    assert busy.observed_seconds == 0.9e-3 and busy.state_seconds == pytest.approx(1e-3) and busy.unknown
    assert busy.seconds == 0.0 and busy.wake_seconds == pytest.approx(30e-6)
    slower = _passes(monkeypatch, [1.3e-3], [17e-6, 19e-6], calibration)
    assert slower.seconds == pytest.approx(300e-6) and not slower.unknown


def test_a_calibration_without_host_states_reads_none_around_the_floor(monkeypatch):
    from tests.analysis.test_usual_loops import _calibration

    plain = _passes(monkeypatch, [2e-3, 1e-3], [], _calibration())  # no wake-up measured: none given
    assert plain.state_seconds is None and plain.wake_seconds is None and plain.seconds == pytest.approx(600e-6)
