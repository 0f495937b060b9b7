"""The kernel calibration of JAX and TensorFlow: micro-programs measured per kernel from the profiler.

``_profiled_points`` by hand, through a hand-made adapter on the kernels of ``test_kernel_bound.py``
(peak 1 TFLOP/s; fusion.0 runs records mm + add: compute 528.384 ns, memory 98.304 ns at L2 →
class matmul; copy.1 and loop.2 run no record):

- a profile of 5 runs where fusion.0 takes 1.0, 1.1, 1.2, 1.3 and 9.0 µs (a stall in the last)
  gives one point, at the median 1.2 µs (the mean, 2.72 µs, would carry the stall); copy.1 and
  loop.2 (0.1 µs and 10 × 0.01 µs a run) run no record: no points;
- copy.1 at 30 µs a run: record-less kernels take 30.1 / 31.3 = 96% ≥ 50% of the kernel time: refused;
- fusion.0 at 0.2 µs a run, under half its compute time (264.192 ns): refused;
- mm.0 and add.1 as two kernels timed as one fused op (each run's 2 µs event cut into two 1 µs
  halves, back to back): one pending entry, main mm.0 (the costlier bound), 2 µs in all.

Then each framework's quick grid, calibrated once: the classes it measures, each point's roofline
inputs against ``kernel_rows`` of its program traced again (exact), and a saved and reloaded
calibration predicting identically. No timing thresholds: measured times are only checked to be
positive.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from neural_cost import Coverage, Kernel, Operation, Trace, estimate_trace
from neural_cost.adapters.base import FrameworkAdapter, MicroProgram
from neural_cost.analysis.calibrate_kernels import _Pending, _prepare, _profiled_points, _time_once, calibrate_kernels
from neural_cost.analysis.expected import expected_time, kernel_class
from neural_cost.analysis.kernel_classes import parts
from neural_cost.analysis.kernels import kernel_rows
from neural_cost.analysis.pointwise_views import TRANSPOSED
from neural_cost.analysis.workload import time_workload, trace_workload
from neural_cost.core.errors import NeuralCostError
from neural_cost.core.profile import MeasuredKernel, Profile, ProfileEvent, union_seconds
from neural_cost.hardware.kernel_model import Point, load_calibration, main_memory_candidate, save_calibration
from neural_cost.measure.timing import Measurement
from tests.analysis.test_kernel_bound import KERNELS, OPS, SPEC
from tests.helpers import glibc_defaults

US = 1e-6


class _HandAdapter(FrameworkAdapter):
    """Traces to fixed kernels; each run takes 0.1 s (3 profiled runs); the profile is given."""

    framework = "hand"

    def __init__(
        self, kernels: tuple[Kernel, ...], per_run: dict[int, list[tuple[float, Any]]], ops: tuple[Any, ...] = OPS
    ) -> None:
        self.kernels, self.ops = kernels, ops
        self.per_run = per_run  # kernel → its events in one run: (start, duration), seconds from the run's start

    def trace(self, model: Any, args: Any = (), kwargs: Any = None, **options: Any) -> Trace:
        ops = self.ops
        return Trace(ops, Coverage.full(ops), kernels=self.kernels, kernel_source="hand-written", framework="hand")

    def benchmark(self, model: Any, *args: Any, warmup: int = 10, repeats: int = 30, **options: Any) -> Measurement:
        return Measurement(samples_seconds=(0.1,) * repeats)

    def profile(self, model: Any, args: Any = (), kwargs: Any = None, *, trace: Trace, runs: int = 3, **options: Any):
        assert runs == 3  # max(3, min(repeats, 10)), repeats = max(3, 0.02 s / 0.1 s)
        events = [
            ProfileEvent(kernel, run * 1e-3 + start, duration(run) if callable(duration) else duration)
            for kernel, spans in self.per_run.items()
            for run in range(runs)
            for start, duration in spans
        ]
        by_kernel = {k: [(e.start_seconds, e.start_seconds + e.duration_seconds) for e in events if e.kernel == k]
                     for k in self.per_run}  # fmt: skip
        return Profile(
            runs=runs,
            wall_seconds=runs * 1e-3,
            kernels=tuple(MeasuredKernel(k, union_seconds(iv), len(iv)) for k, iv in by_kernel.items()),
            kernel_seconds=union_seconds(iv for ivs in by_kernel.values() for iv in ivs),
            source="hand",
            events=tuple(events),
        )


def _stalled(run: int) -> float:
    return (1.0, 1.2, 9.0)[run] * US  # one run of three stalled: the median is 1.2 µs


def _points(adapter: FrameworkAdapter) -> list[Point | _Pending]:
    prepared = _prepare(adapter, SPEC, MicroProgram("hand", lambda: None))
    for _ in range(2):  # two passes
        _time_once(adapter, prepared)
    return _profiled_points(prepared)


def test_a_kernel_is_its_median_execution_and_record_less_kernels_give_no_point():
    loop = [(10 * US + i * 0.02 * US, 0.01 * US) for i in range(10)]
    (point,) = _points(_HandAdapter(KERNELS, {0: [(0.0, _stalled)], 1: [(5 * US, 0.1 * US)], 2: loop}))
    assert isinstance(point, Point) and (point.kernel_class, point.name) == ("matmul", "hand")
    assert point.compute_seconds == pytest.approx(528.384e-9, rel=1e-12)
    assert point.memory_seconds == pytest.approx(98.304e-9, rel=1e-12)
    assert point.measured_seconds == pytest.approx(1.2e-6, rel=1e-12)


def test_a_program_whose_records_ran_in_record_less_kernels_is_refused():
    adapter = _HandAdapter(KERNELS, {0: [(0.0, 1.2 * US)], 1: [(5 * US, 30 * US)], 2: [(40 * US, 0.01 * US)] * 10})
    with pytest.raises(NeuralCostError, match=r"none of its records took 96% of its kernel time"):
        _points(adapter)


def test_a_kernel_measured_under_half_its_compute_time_is_refused():
    with pytest.raises(NeuralCostError, match=r"fusion.0 measured 0.38× its roofline bound"):
        _points(_HandAdapter(KERNELS, {0: [(0.0, 0.2 * US)]}))  # 0.2 / 0.528384 = 0.378


def test_kernels_timed_as_one_fused_op_are_one_pending_entry():
    kernels = (
        Kernel("mm.0", (0,), traffic_bytes=49_152, footprint_bytes=49_152),
        Kernel("add.1", (1,), traffic_bytes=49_152, footprint_bytes=49_152),
    )
    (pending,) = _points(_HandAdapter(kernels, {0: [(0.0, 1 * US)], 1: [(1 * US, 1 * US)]}))
    assert isinstance(pending, _Pending)
    assert (pending.main.kernel_class, pending.main.repeats) == ("matmul", 1)
    assert [(part.kernel_class, part.repeats) for part in pending.others] == [("elementwise", 1)]
    assert pending.seconds == pytest.approx(2 * US)


def test_kernels_timed_apart_are_two_points():
    kernels = (
        Kernel("mm.0", (0,), traffic_bytes=49_152, footprint_bytes=49_152),
        Kernel("add.1", (1,), traffic_bytes=49_152, footprint_bytes=49_152),
    )
    points = _points(_HandAdapter(kernels, {0: [(0.0, 1 * US)], 1: [(1.5 * US, 1 * US)]}))  # a gap between them
    assert [(p.kernel_class, p.measured_seconds) for p in points] == [("matmul", 1e-6), ("elementwise", 1e-6)]


def test_a_program_whose_kernel_runs_two_contractions_is_refused_with_a_reason():
    """Two 64³ matmuls in one kernel are no one class's point: the program is refused (a note in
    ``measure_points``), where its point had been dropped without a word."""
    ops = (OPS[0], Operation("mm2", "matmul", ((64, 64), (64, 64)), (64, 64), "float32"))
    kernels = (Kernel("fusion.0", (0, 1), traffic_bytes=49_152, footprint_bytes=49_152, kind="fusion"),)
    with pytest.raises(NeuralCostError, match="runs 2 contractions one after another"):
        _points(_HandAdapter(kernels, {0: [(0.0, 2 * US)]}, ops))


# -- each framework's quick grid ---------------------------------------------------------------


def _adapter(framework: str) -> FrameworkAdapter:
    if framework == "jax":
        pytest.importorskip("jax")
        from neural_cost.adapters.jax import JaxAdapter

        return JaxAdapter()
    pytest.importorskip("tensorflow")
    from neural_cost.adapters.tensorflow import TensorFlowAdapter

    return TensorFlowAdapter()


@pytest.fixture(scope="module", params=["jax", "tensorflow"])
def calibrated(request):
    adapter = _adapter(request.param)
    programs = {program.name: program for program in adapter.microbenchmarks(quick=True)}
    return request.param, programs, calibrate_kernels(adapter, quick=True)


def test_the_quick_grid_measures_the_main_kernel_classes(calibrated):
    framework, programs, calibration = calibrated
    assert calibration.framework == framework and len(programs) >= 30
    # conv:narrow is a conv, norm:batch@xla a norm@xla
    classes = {re.sub(r":[^@]*", "", point.kernel_class) for point in calibration.points}
    assert {"matmul", "elementwise", "reduce", "conv"} <= classes
    assert "conv" in calibration.classes  # the family's curve, fitted on its narrow and wide points
    if framework == "tensorflow":  # jit_compile micro-programs: XLA's kernels, classes of their own
        assert {"matmul@xla", "elementwise@xla", "transcendental@xla", "norm@xla"} <= classes
    if framework == "jax":  # a max pool's backward: the record-less reduce-window and the scatter holding the record
        pooled = [p.kernel_class for p in calibration.points if p.name.startswith("max_pool 2x2 backward")]
        assert sorted(pooled) == ["pool", "pool_backward", "pool_backward"]  # and the forward pool's
        # pointwise work transposed in its fusion: one kernel, reading its arrays a line an element
        transposed = [p.kernel_class for p in calibration.points if p.name.startswith("transposed ")]
        assert transposed == ["elementwise:transposed"]
        # a weight gradient's product, which XLA runs as a lone dot
        assert [p.kernel_class for p in calibration.points if p.name.startswith("lone dot")] == ["matmul:generic"]
    assert all(point.measured_seconds > 0 for point in calibration.points)
    assert calibration.method.startswith("each kernel's profiled time, scaled by its program's wall time")
    # a compiled program's faults are measured and priced at the machine's first-touch cost, never predicted
    assert calibration.fresh_results is False and (calibration.first_touch_seconds_per_byte or 0) > 0


def _class(estimate, row, hardware) -> str:
    found = parts(estimate, row, hardware)
    return found[0].kernel_class if len(found) == 1 else kernel_class(estimate, row)


def _memory(estimate, row, hardware) -> float:
    """A row's memory time as its point has it: its own, or a transposed pointwise kernel's with its extra lines
    (``pointwise_views.strided_memory``)."""
    found = parts(estimate, row, hardware)
    return found[0].memory_seconds if len(found) == 1 and TRANSPOSED in found[0].kernel_class else row.memory_seconds


def test_every_point_has_the_roofline_inputs_of_its_program_kernel(calibrated):
    framework, programs, calibration = calibrated
    fresh = _adapter(framework)  # its own compilation: the kernels are read again
    for name in sorted({point.name for point in calibration.points}):
        program = programs[name]
        time_workload(fresh, program.fn, program.args, program.kwargs, warmup=0, repeats=1)
        estimate = estimate_trace(trace_workload(fresh, program.fn, program.args, program.kwargs))
        hardware = calibration.hardware
        rows = {  # a one-part row's class is its part's (a loop dot's member: matmul:kept@loop); a pointwise
            # class's point has its memory time at main memory's bandwidth too (``main_memory_candidate``)
            (kind := _class(estimate, row, hardware), row.compute_seconds / row.executions,
             _memory(estimate, row, hardware) / row.executions,
             row.memory_seconds * (row.bandwidth / hardware.memory_bandwidth) / row.executions
             if main_memory_candidate(kind) else None)
            for row in kernel_rows(estimate, hardware)[0]
            if row.executions
        }  # fmt: skip
        for point in calibration.points:
            if point.name == name:
                found = (point.kernel_class, point.compute_seconds, point.memory_seconds, point.main_memory_seconds)
                assert found in rows, (name, point)


def test_a_saved_and_reloaded_calibration_predicts_identically(calibrated, tmp_path):
    framework, programs, calibration = calibrated
    loaded = load_calibration(save_calibration(calibration, tmp_path / "kernels.json"))
    assert loaded.points == calibration.points and set(loaded.classes) == set(calibration.classes)
    cost = calibration.first_touch_seconds_per_byte
    assert (loaded.fresh_results, loaded.first_touch_seconds_per_byte) == (False, cost)
    for point in calibration.points:
        model = calibration.classes.get(point.kernel_class)
        if model is not None:
            again = loaded.classes[point.kernel_class].seconds(point.compute_seconds, point.memory_seconds)
            assert again == model.seconds(point.compute_seconds, point.memory_seconds)
    program = next(iter(programs.values()))
    adapter = _adapter(framework)
    time_workload(adapter, program.fn, program.args, program.kwargs, warmup=0, repeats=1)
    estimate = estimate_trace(trace_workload(adapter, program.fn, program.args, program.kwargs))
    first = expected_time(estimate, calibration, 1e-5, machine={})
    assert expected_time(estimate, loaded, 1e-5, machine={}).to_dict() == first.to_dict()


# -- machine drift: the calibration's probes re-run --------------------------------------------


class _WallAdapter(FrameworkAdapter):
    """Wall-timed one-kernel programs: each program's function names its record and its time."""

    framework = "hand"
    kernel_timing = "wall"

    def __init__(self, programs: dict[str, tuple[Any, float]]) -> None:
        self.programs = programs  # name → (its one record, seconds per run now)
        self.functions = {name: (lambda: None) for name in programs}

    def microbenchmarks(self, quick: bool = False) -> list[MicroProgram]:
        return [MicroProgram(name, fn) for name, fn in self.functions.items()]

    def _program(self, model: Any) -> tuple[Any, float]:
        return next(self.programs[name] for name, fn in self.functions.items() if fn is model)

    def trace(self, model: Any, args: Any = (), kwargs: Any = None, **options: Any) -> Trace:
        ops = (self._program(model)[0],)
        moved = 3 * ops[0].output_bytes
        kernels = (Kernel(ops[0].name, (0,), traffic_bytes=moved, footprint_bytes=moved),)
        return Trace(ops, Coverage.full(ops), kernels=kernels, kernel_source="hand-written", framework="hand")

    def benchmark(self, model: Any, *args: Any, warmup: int = 10, repeats: int = 30, **options: Any) -> Measurement:
        return Measurement(samples_seconds=(self._program(model)[1],) * repeats)


def test_drift_probes_are_the_longest_quick_program_of_each_class_in_range_and_are_re_run():
    """The quick grid: mm 1 (matmul, 1 ms), mm 2 (matmul, 100 µs), add 1 (elementwise,
    500 µs), mm 3 (matmul, 10 ms: outside 50 µs–2 ms). The probes are the longest in range of each
    class (the short ones read the clock's noise): add 1 at 500 µs and mm 1 at 1 ms. Later the
    machine runs add 1 in 250 µs (0.5×) and mm 1 in 1.5 ms (1.5×): the drift is their median,
    1.0×. A calibration without probes gives None."""
    from dataclasses import replace

    from neural_cost.analysis.calibrate_kernels import probe_times
    from neural_cost.analysis.drift import machine_drift
    from neural_cost.hardware.kernel_model import KernelCalibration

    mm, add = OPS[0], OPS[1]
    at_calibration = {"mm 1": (mm, 1e-3), "mm 2": (mm, 100e-6), "add 1": (add, 500e-6), "mm 3": (mm, 10e-3)}
    probes = probe_times(_WallAdapter(at_calibration), SPEC)
    assert probes == {"add 1": ("elementwise", pytest.approx(500e-6)), "mm 1": ("matmul", pytest.approx(1e-3))}
    # families in their order, matmul first: one probe is a matmul, never the alphabet's first class
    assert list(probe_times(_WallAdapter(at_calibration), SPEC, count=1)) == ["mm 1"]
    calibration = KernelCalibration("hand", SPEC, {}, probes=probes)
    later = _WallAdapter({**at_calibration, "mm 1": (mm, 1.5e-3), "add 1": (add, 250e-6)})
    drift = machine_drift(later, calibration)
    assert drift is not None
    assert sorted((name, round(ratio, 12)) for name, ratio in drift.ratios) == [("add 1", 0.5), ("mm 1", 1.5)]
    assert drift.ratio == pytest.approx(1.0)
    assert "2 calibration probes re-run at 1.00× their time at calibration" in drift.note()
    # 1.5 ÷ 0.5 = 3 ≥ SPREAD_NAMED: the median hides them, so the note names the range and the probe
    # furthest from 1 (|ln 0.5| = 0.69 > |ln 1.5| = 0.41)
    assert "(median; by probe 0.50–1.50×, add 1 the furthest from 1 (0.50×); a shared machine's" in drift.note()
    assert not drift.calibration_slow and "slow spell moves the observed time" in drift.note()
    # add 1 at 250 µs and mm 1 at 700 µs: median (0.5 + 0.7) / 2 = 0.6 < 0.8, the calibration's own slow
    # spell; 0.7 ÷ 0.5 = 1.4 < SPREAD_NAMED: no probe named
    faster = machine_drift(_WallAdapter({**at_calibration, "mm 1": (mm, 700e-6), "add 1": (add, 250e-6)}), calibration)
    assert faster is not None and faster.ratio == pytest.approx(0.6) and faster.calibration_slow
    assert faster.note() == (
        "machine now: 2 calibration probes re-run at 0.60× their time at calibration (median): the calibration looks "
        "to have been measured in a slow spell and to expect this machine too slow; `neural-cost calibrate --kernels "
        "--framework hand` measures it again"
    )
    assert machine_drift(later, replace(calibration, probes={})) is None
    loaded = KernelCalibration.from_dict(calibration.to_dict())
    assert dict(loaded.probes) == {"add 1": ("elementwise", 500e-6), "mm 1": ("matmul", 1e-3)}


def test_a_probe_candidate_far_outside_the_range_is_not_timed_further():
    """The drift probes' range is 50 µs–2 ms; a first run under 25 µs (half its start: a run is
    never shorter than its kernel) or over 6 ms (thrice its end) ends the candidate: 'add 1' at
    10 µs and 'mm 3' at 10 ms get their first run only (warmup and one timed run: 2 calls), 'mm 1'
    at 1 ms two passes more: 2 + 2 × (2 warmups + 20 runs, 0.02 s ÷ 1 ms) = 46 calls."""
    from neural_cost.analysis.calibrate_kernels import probe_times

    mm, add = OPS[0], OPS[1]
    adapter = _CountingAdapter({"mm 1": (mm, 1e-3), "add 1": (add, 10e-6), "mm 3": (mm, 10e-3)})
    assert probe_times(adapter, SPEC) == {"mm 1": ("matmul", pytest.approx(1e-3))}
    assert adapter.calls == {"mm 1": 46, "add 1": 2, "mm 3": 2}


def test_an_earlier_calibration_s_probes_are_measured_again_and_alone():
    """With ``names`` (``probes_before``: an earlier calibration's probes, "mm 3" and "add 1"), only those programs
    are measured — 2 passes each, whatever their time now: "mm 3" at 10 ms (out of the 50 µs–2 ms range a choice
    reads) is kept, 2 + 2 × (2 warmups + 3 runs, the least a pass) = 12 calls; "add 1" at 10 µs, 2 + 2 × (2 + 400
    runs, the most) = 806 calls; "mm 1" is not run. Naming none of the grid's programs, the whole grid is measured
    to choose, as without names."""
    from neural_cost.analysis.calibrate_kernels import probe_times

    mm, add = OPS[0], OPS[1]
    times = {"mm 1": (mm, 1e-3), "add 1": (add, 10e-6), "mm 3": (mm, 10e-3)}
    adapter = _CountingAdapter(times)
    assert probe_times(adapter, SPEC, names=("mm 3", "add 1", "gone 9")) == {
        "add 1": ("elementwise", pytest.approx(10e-6)),
        "mm 3": ("matmul", pytest.approx(10e-3)),
    }
    assert adapter.calls == {"mm 1": 0, "add 1": 806, "mm 3": 12}
    adapter = _CountingAdapter(times)
    assert probe_times(adapter, SPEC, names=("gone 9",)) == {"mm 1": ("matmul", pytest.approx(1e-3))}
    assert adapter.calls == {"mm 1": 46, "add 1": 2, "mm 3": 2}


class _CountingAdapter(_WallAdapter):
    """``_WallAdapter`` counting each program's runs (warmups included)."""

    def __init__(self, programs: dict[str, tuple[Any, float]]) -> None:
        super().__init__(programs)
        self.calls: dict[str, int] = dict.fromkeys(programs, 0)

    def benchmark(self, model: Any, *args: Any, warmup: int = 10, repeats: int = 30, **options: Any) -> Measurement:
        name = next(name for name, fn in self.functions.items() if fn is model)
        self.calls[name] += warmup + repeats
        return super().benchmark(model, *args, warmup=warmup, repeats=repeats, **options)


def test_a_wall_timed_point_has_its_always_fresh_results_page_faults_taken_out(monkeypatch):
    """A program writing one 4,096 × 2,048 float32 result (33,554,432 B = 32 MiB: glibc maps it
    anew on every run) timed at 10 ms: at 1e-10 s per fresh byte its point is 10 − 3.3554432 =
    6.6445568 ms of kernel (a prediction adds the faults back for such results). At 1e-9 s per
    byte the faults (33.55 ms) would exceed the run: the point stops at the program's roofline
    bound, 100,663,296 B of traffic at SPEC's 100 GB/s DRAM = 1.00663296 ms."""

    from neural_cost import Operation
    from neural_cost.analysis.wall_points import wall_points as _wall_points

    glibc_defaults(monkeypatch)
    big = Operation("big", "elementwise", ((4096, 2048), (4096, 2048)), (4096, 2048), attrs={"op": "add"})
    adapter = _WallAdapter({"add 8M": (big, 10e-3)})
    (program,) = adapter.microbenchmarks()
    prepared = _prepare(adapter, SPEC, program)
    _time_once(adapter, prepared)
    (point,) = _wall_points(prepared, 1e-10)
    assert isinstance(point, Point) and point.measured_seconds == pytest.approx(6.6445568e-3)
    (clamped,) = _wall_points(prepared, 1e-9)
    assert isinstance(clamped, Point) and clamped.measured_seconds == pytest.approx(1.00663296e-3)
    (untouched,) = _wall_points(prepared, None)
    assert isinstance(untouched, Point) and untouched.measured_seconds == pytest.approx(10e-3)


class _WatchedAdapter(_HandAdapter):
    """Runs in 0.5 ms unwatched and 1 ms a run under the profiler (3 runs in 3 ms)."""

    def benchmark(self, model: Any, *args: Any, warmup: int = 10, repeats: int = 30, **options: Any) -> Measurement:
        return Measurement(samples_seconds=(0.5e-3,) * repeats)

    def profile(self, model: Any, args: Any = (), kwargs: Any = None, *, trace: Trace, runs: int = 3, **options: Any):
        return super().profile(model, args, kwargs, trace=trace, runs=3, **options)


def test_profiled_kernel_times_lose_the_profilers_own_slowdown():
    """fusion.0's events take 600 µs a run under the profiler, whose runs take 1 ms each against
    0.5 ms unwatched; the kernels fill 60% of the profiled runs, so the slowdown is theirs: the
    point is 600 × 0.5 / 1 = 300 µs."""
    (point,) = _points(_WatchedAdapter(KERNELS, {0: [(0.0, 600 * US)]}))
    assert isinstance(point, Point) and point.measured_seconds == pytest.approx(300e-6, rel=1e-12)


def test_a_dispatch_bound_programs_slowdown_does_not_scale_its_kernels():
    """fusion.0's events take 1.2 µs (median) a run in the same 1 ms profiled runs (0.5 ms
    unwatched): the kernels fill 0.12% of the run, so the halving is dispatch's under the
    profiler, not the kernel's — the point stays 1.2 µs (``Profile.unwatched_ratio``)."""
    (point,) = _points(_WatchedAdapter(KERNELS, {0: [(0.0, _stalled)]}))
    assert isinstance(point, Point) and point.measured_seconds == pytest.approx(1.2e-6, rel=1e-12)


class _TimedAdapter(_HandAdapter):
    """Runs in ``run`` seconds unwatched and twice that under the profiler, its kernels filling three quarters of the
    profiled runs (so a measured ratio, run ÷ 2·run = 0.5, scales them); counts its timed (unprofiled) calls."""

    def __init__(self, kernels: tuple[Kernel, ...], per_run: dict[int, list[tuple[float, Any]]], run: float) -> None:
        super().__init__(kernels, per_run)
        self.run, self.timed = run, 0

    def benchmark(self, model: Any, *args: Any, warmup: int = 10, repeats: int = 30, **options: Any) -> Measurement:
        self.timed += 1
        return Measurement(samples_seconds=(self.run,) * repeats)

    def profile(self, model: Any, args: Any = (), kwargs: Any = None, *, trace: Trace, runs: int = 3, **options: Any):
        profile = super().profile(model, args, kwargs, trace=trace, runs=3, **options)
        return replace(profile, wall_seconds=3 * 2 * self.run, kernel_seconds=3 * 1.5 * self.run)


@pytest.mark.parametrize(
    ("run", "loop_executions", "alone"),
    [
        (8e-3, 10, True),  # 12 events a run: 12 µs at 1 µs each ≤ 1% of 8 ms (80 µs), and 8 ms ≥ 2 ms
        (1.9e-3, 10, False),  # 12 µs ≤ 19 µs, but under 2 ms: its wall is timed
        (8e-3, 100, False),  # 102 events a run: 102 µs > 80 µs — the profiler could slow it past 1%
    ],
)
def test_a_long_program_with_few_kernel_events_is_profiled_without_an_unwatched_wall(run, loop_executions, alone):
    """A program of 2 ms a run or more whose kernel events (its kernels' executions a run) would cost the profiler at
    most 1% of a run at 1 µs each (``profiled_points.WATCHED_ALONE``) is profiled without an unwatched wall of its
    own: over two passes it is timed once only (``_prepare``'s first run), and fusion.0's point is its profiled
    median, 1.2 µs, unscaled. Otherwise each pass times its wall too (1 + 2 calls) and the profiler's doubling of
    the run is taken out: 1.2 µs × 0.5 = 0.6 µs."""
    kernels = (*KERNELS[:2], replace(KERNELS[2], executions=loop_executions))
    adapter = _TimedAdapter(kernels, {0: [(0.0, _stalled)]}, run)
    prepared = _prepare(adapter, SPEC, MicroProgram("hand", lambda: None))
    assert prepared.first_run == run and prepared.watched_alone is alone
    for _ in range(2):
        _time_once(adapter, prepared)
    (point,) = _profiled_points(prepared)
    assert isinstance(point, Point)
    assert adapter.timed == (1 if alone else 3) and len(prepared.unwatched) == (0 if alone else 2)
    assert point.measured_seconds == pytest.approx(1.2e-6 if alone else 0.6e-6, rel=1e-12)


def test_the_first_touch_cost_is_the_smallest_of_probes_apart():
    """Three probes reading 3, 1 and 2 × 10⁻¹⁰ s a byte (a slow spell slows page faults for
    seconds): the calibration keeps 10⁻¹⁰; an adapter without the cost gives None at once."""
    from neural_cost.analysis.calibrate_kernels import _first_touch

    readings = [3e-10, 1e-10, 2e-10]

    class Probed(_HandAdapter):
        def first_touch_seconds_per_byte(self):
            return readings.pop(0)

    assert _first_touch(Probed(KERNELS, {}), pause_seconds=0.0) == 1e-10 and not readings
    assert _first_touch(_HandAdapter(KERNELS, {}), pause_seconds=0.0) is None


def test_the_quick_grids_loop_probes_are_grid_programs():
    """The loop drift probes of JAX's and PyTorch's quick grids are programs of their full grids (a
    probe's ratio compares it with its own calibration point)."""
    from neural_cost.adapters._jax.microbench import _SCANS, PROBE_SCAN
    from neural_cost.adapters._torch.microbench import PROBE_CELL, RNN_CELLS

    assert PROBE_SCAN in _SCANS and PROBE_CELL in RNN_CELLS


class _LoopWallAdapter(_WallAdapter):
    """As ``_WallAdapter``, but a program named ``loop …`` runs its one kernel 10 times a run (a loop's)."""

    def trace(self, model: Any, args: Any = (), kwargs: Any = None, **options: Any) -> Trace:
        trace = super().trace(model, args, kwargs, **options)
        name = next(name for name, fn in self.functions.items() if fn is model)
        if not name.startswith("loop"):
            return trace
        return replace(trace, kernels=tuple(replace(kernel, executions=10) for kernel in trace.kernels))


def test_a_loop_probe_is_chosen_by_its_programs_time_and_read_apart_from_the_median():
    """The quick grid: mm 1 (matmul, 1 ms), add 1 (elementwise, 500 µs), and three loops of one
    matmul kernel run 10 times a run (``matmul:narrow@loop``, its result under 256 wide): loop 1 of
    400 µs a run (40 µs a step), loop 2 of 3 ms (past 2 ms), loop 3 of 100 µs. The probes: add 1, mm 1
    and beside them the longest
    loop in range, loop 1 (40 µs a step: under the range's 50 µs, which a loop's program is held
    to). Later loop 1 runs 160 µs (0.4×) and the others as before: the drift is the median of
    mm 1 and add 1, 1.0×; the loop, 0.4 ÷ 1.0 = 2.5× apart from it (≥ SPREAD_NAMED), is named."""
    from neural_cost.analysis.calibrate_kernels import probe_times
    from neural_cost.analysis.drift import machine_drift
    from neural_cost.hardware.kernel_model import KernelCalibration

    mm, add = OPS[0], OPS[1]
    at_calibration = {"mm 1": (mm, 1e-3), "add 1": (add, 500e-6), "loop 1": (mm, 400e-6), "loop 2": (mm, 3e-3),
                      "loop 3": (mm, 100e-6)}  # fmt: skip
    probes = probe_times(_LoopWallAdapter(at_calibration), SPEC)
    assert probes == {
        "add 1": ("elementwise", pytest.approx(500e-6)),
        "mm 1": ("matmul", pytest.approx(1e-3)),
        "loop 1": ("matmul:narrow@loop", pytest.approx(40e-6)),
    }
    calibration = KernelCalibration("hand", SPEC, {}, probes=probes)
    drift = machine_drift(_LoopWallAdapter({**at_calibration, "loop 1": (mm, 160e-6)}), calibration)
    assert drift is not None and drift.ratio == pytest.approx(1.0) and len(drift.ratios) == 2
    assert drift.loop is not None and drift.loop[0] == "loop 1" and drift.loop[1] == pytest.approx(0.4)
    assert drift.note().endswith(
        "; a loop of small kernels (loop 1) at 0.40× its time at calibration: loops of small kernels run at another "
        "speed now than the rest"
    )
    # at 1 ms (2.5×, slower): named, saying the expected time has loops at their calibrated speed
    slow = machine_drift(_LoopWallAdapter({**at_calibration, "loop 1": (mm, 1e-3)}), calibration)
    assert slow is not None and slow.loop is not None and slow.loop[1] == pytest.approx(2.5)
    assert slow.note().endswith(
        "at 2.50× its time at calibration: loops of small kernels run at another speed now than the rest; the "
        "expected time has them at their calibrated speed (an `expected with its loops as usual` line, where there is "
        "one, at the median of their calibration passes)"
    )
    # at 320 µs (0.8×, 1.25 apart from the median): not named
    steady = machine_drift(_LoopWallAdapter({**at_calibration, "loop 1": (mm, 320e-6)}), calibration)
    assert steady is not None and steady.loop is not None and "loop of small kernels" not in steady.note()


class _TwinLoopAdapter(_LoopWallAdapter):
    """As ``_LoopWallAdapter``, but each ``loop …`` program has a shorter twin: a compiled loop's, as the JAX and
    TensorFlow grids' scans are."""

    def microbenchmarks(self, quick: bool = False) -> list[MicroProgram]:
        return [
            MicroProgram(p.name, p.fn, trips=10, shorter=MicroProgram("", p.fn, trips=1)) if p.name.startswith("loop")
            else p
            for p in super().microbenchmarks(quick)
        ]  # fmt: skip


def test_a_compiled_loops_probe_is_read_against_the_point_its_curves_were_fitted_on():
    """loop 1 runs its kernel 10 times in 400 µs a run: its probe point is 40 µs at calibration. The
    calibration's own point of that program and class, the one its curve was fitted on, is 20 µs (its grid
    passes ran in a faster spell than the probe passes after them), beside a smaller point of the same
    program (5 µs) and a 90 µs point of another program. Later the loop runs 400 µs again: a loop with a
    shorter twin reads 40 ÷ 20 = 2.0× (its largest point of that class and program), not 40 ÷ 40 = 1.0×;
    the same program with no twin, as PyTorch's wall-timed LSTM probe, reads against its probe time: 1.0×."""
    from neural_cost.analysis.drift import machine_drift
    from neural_cost.hardware.kernel_model import KernelCalibration, Point

    mm, add = OPS[0], OPS[1]
    kind = "matmul:narrow@loop"
    programs = {"mm 1": (mm, 1e-3), "add 1": (add, 500e-6), "loop 1": (mm, 400e-6)}
    points = (Point(kind, 1e-6, 1e-6, 20e-6, "loop 1"), Point(kind, 1e-7, 1e-7, 5e-6, "loop 1"),
              Point(kind, 1e-6, 1e-6, 90e-6, "loop 9"))  # fmt: skip
    probes = {"mm 1": ("matmul", 1e-3), "add 1": ("elementwise", 500e-6), "loop 1": (kind, 40e-6)}
    calibration = KernelCalibration("hand", SPEC, {}, points=points, probes=probes)
    twin = machine_drift(_TwinLoopAdapter(programs), calibration)
    assert twin is not None and twin.loop is not None and twin.loop == ("loop 1", pytest.approx(2.0))
    assert twin.ratio == pytest.approx(1.0)
    plain = machine_drift(_LoopWallAdapter(programs), calibration)
    assert plain is not None and plain.loop == ("loop 1", pytest.approx(1.0))
    # a calibration with no point of that program and class: its probe time, 1.0×
    other = KernelCalibration("hand", SPEC, {}, points=points[2:], probes=probes)
    alone = machine_drift(_TwinLoopAdapter(programs), other)
    assert alone is not None and alone.loop == ("loop 1", pytest.approx(1.0))
