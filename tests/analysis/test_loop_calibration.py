"""A loop program's kernels are calibrated off its wall time, not their profiler events.

By hand, through an adapter on the kernels of ``test_kernel_bound.py`` (peak 1 TFLOP/s) made a
loop of 10 trips: fusion.0 runs records mm + add (class ``matmul:narrow@loop``, 64 wide), copy.2 runs none
(``copy@loop``), both 10 times a run; copy.1 runs none, once. Its profile: fusion.0's events
1.0 µs each, copy.2's 0.3 µs, copy.1's 0.5 µs. Its wall time: a launch of 5 µs, 0.9 µs a trip and
copy.1's 0.5 µs — 14.5 µs at 10 trips, 7.3 µs for its twin at 2 trips:

- the loop's own time per run: (14.5 − 7.3) / (10 − 2) × 10 = 9 µs;
- its own estimate of the profiler's cost: events 10 × 1.0 + 10 × 0.3 = 13 µs over 20 events,
  (13 − 9) / 20 = 0.2 µs an event; fusion.0 10 − 10 × 0.2 = 8 µs a run (0.8 µs an execution),
  copy.2 3 − 2 = 1 µs (0.1 µs), 9 µs together: the loop's;
- at a calibration's cost of 0.28 µs: fusion.0 10 − 2.8 = 7.2 µs, copy.2 max(3 − 2.8, 10% of 3) =
  0.3 µs, 7.5 µs scaled to 9: 8.64 µs and 0.36 µs;
- a loop kernel never reads above its events: at 30 µs for 10 trips the loop takes 28.375 µs, and
  each kernel its events' time.

Then JAX's and TensorFlow's loop programs: each twin compiles to the same kernels, run at its own
trip count.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from neural_cost import Coverage, Kernel, Trace
from neural_cost.adapters.base import FrameworkAdapter, MicroProgram
from neural_cost.analysis.calibrate_kernels import _prepare, _profiled_runs, _time_once
from neural_cost.analysis.profiled_points import _loop_times, _profiled_points, profiler_cost
from neural_cost.core.errors import NeuralCostError
from neural_cost.core.profile import MeasuredKernel, Profile, ProfileEvent, union_seconds
from neural_cost.hardware.kernel_model import Point
from neural_cost.measure.timing import Measurement
from tests.analysis.test_kernel_bound import OPS, SPEC

US = 1e-6
LOOP = (
    Kernel("fusion.0", (0, 1), traffic_bytes=49_152, footprint_bytes=49_152, executions=10, kind="fusion"),
    Kernel("copy.1", (), traffic_bytes=1_000, footprint_bytes=1_000, kind="copy"),
    Kernel("copy.2", (), traffic_bytes=1_000, footprint_bytes=1_000, executions=10, kind="copy"),
)


def _long() -> None: ...


def _short() -> None: ...


class _LoopAdapter(FrameworkAdapter):
    """Traces to ``kernels``; ``walls`` gives each program's wall time; each kernel's events a run
    are ``events[kernel]`` (a duration each), back to back."""

    framework = "hand"

    def __init__(self, kernels: tuple[Kernel, ...], events: dict[int, list[float]], walls: dict[Any, float]) -> None:
        self.kernels, self.events, self.walls = kernels, events, walls

    def trace(self, model: Any, args: Any = (), kwargs: Any = None, **options: Any) -> Trace:
        return Trace(OPS, Coverage.full(OPS), kernels=self.kernels, kernel_source="hand-written", framework="hand")

    def benchmark(self, model: Any, *args: Any, warmup: int = 10, repeats: int = 30, **options: Any) -> Measurement:
        return Measurement(samples_seconds=(self.walls[model],) * repeats)

    def profile(self, model: Any, args: Any = (), kwargs: Any = None, *, trace: Trace, runs: int = 3, **options: Any):
        found, at = [], 0.0
        for run in range(runs):
            for kernel, durations in self.events.items():
                for duration in durations:
                    found.append(ProfileEvent(kernel, run * 1e-3 + at, duration))
                    at += duration
        spans = {k: [(e.start_seconds, e.start_seconds + e.duration_seconds) for e in found if e.kernel == k]
                 for k in self.events}  # fmt: skip
        return Profile(
            runs=runs,
            wall_seconds=runs * 1e-3,  # kernels fill under half of it: no unwatched scaling
            kernels=tuple(MeasuredKernel(k, union_seconds(iv), len(iv)) for k, iv in spans.items()),
            kernel_seconds=union_seconds(iv for ivs in spans.values() for iv in ivs),
            source="hand",
            events=tuple(found),
        )


def _prepared(events: dict[int, list[float]] | None = None, walls: tuple[float, float] = (14.5 * US, 7.3 * US)):
    events = events or {0: [1.0 * US] * 10, 1: [0.5 * US], 2: [0.3 * US] * 10}
    adapter = _LoopAdapter(LOOP, events, {_long: walls[0], _short: walls[1]})
    program = MicroProgram("loop", _long, trips=10, shorter=MicroProgram("", _short, trips=2))
    prepared = _prepare(adapter, SPEC, program)
    for _ in range(2):
        _time_once(adapter, prepared)
    return prepared


def test_the_loop_takes_its_wall_time_and_its_kernels_share_it_less_the_profilers_cost():
    prepared = _prepared()
    assert prepared.walls == [14.5 * US] * 2 and prepared.short_walls == [7.3 * US] * 2
    own = _loop_times(prepared, None)  # its own cost: 0.2 µs an event
    assert own == pytest.approx({0: 8 * US, 2: 1 * US}, rel=1e-9)  # copy.1 runs once: read off its events
    given = _loop_times(prepared, 0.28 * US)
    assert given == pytest.approx({0: 8.64 * US, 2: 0.36 * US}, rel=1e-9)
    assert sum(given.values()) == pytest.approx(9 * US, rel=1e-9)  # the loop's own time, whatever the split


def test_loop_kernels_with_and_without_records_are_points_at_their_share_of_the_loop():
    points = _profiled_points(_prepared())
    assert all(isinstance(point, Point) for point in points)
    by_class = {point.kernel_class: point for point in points if isinstance(point, Point)}
    assert set(by_class) == {"matmul:narrow@loop", "copy@loop"}  # copy.1 runs once and no record: no point
    assert by_class["matmul:narrow@loop"].measured_seconds == pytest.approx(0.8 * US, rel=1e-9)  # 8 µs ÷ 10
    assert by_class["copy@loop"].measured_seconds == pytest.approx(0.1 * US, rel=1e-9)  # 1 µs ÷ 10
    assert by_class["copy@loop"].memory_seconds > 0  # its roofline: its compiled traffic


def test_record_less_loop_kernels_do_not_refuse_the_program_but_once_run_ones_still_do():
    # copy.2's events 3 µs each: 30 of 40 µs of kernel time run no record; it is the loop's, timed off the wall
    prepared = _prepared({0: [1.0 * US] * 10, 1: [0.5 * US], 2: [3.0 * US] * 10}, walls=(40 * US, 12 * US))
    assert {point.kernel_class for point in _profiled_points(prepared) if isinstance(point, Point)} == {
        "matmul:narrow@loop",
        "copy@loop",
    }
    # without a twin, the same profile is read off its events: record-less kernels took 30.5 / 40.5 = 75%
    events = {0: [1.0 * US] * 10, 1: [0.5 * US], 2: [3.0 * US] * 10}
    adapter = _LoopAdapter(LOOP, events, {_long: 40 * US})
    prepared = _prepare(adapter, SPEC, MicroProgram("loop", _long))
    _time_once(adapter, prepared)
    with pytest.raises(NeuralCostError, match=r"none of its records took 75% of its kernel time"):
        _profiled_points(prepared)


def test_a_loop_kernel_never_reads_slower_than_its_events():
    # 30 µs at 10 trips: the loop takes (30 − 7.3) / 8 × 10 = 28.375 µs, above its 13 µs of events:
    # no profiler cost shows (0), and scaled to the loop, fusion.0 would read 21.8 µs: its events' 10 µs
    assert _loop_times(_prepared(walls=(30 * US, 7.3 * US)), None) == pytest.approx({0: 10 * US, 2: 3 * US})


def test_loop_programs_get_their_further_passes_of_walls_only_halfway_through_the_grids(monkeypatch):
    """measure_points over a plain program, a loop program (one with a shorter twin) and another plain one, 3
    passes and 2 loop passes: the plain ones are timed 3 times, profiled, the loop one 3 + 2 = 5, its
    further passes of walls only (``-``) just after the grid's middle program (index 3 // 2 = 1) in the first two
    passes; 4 loop passes: the 4 − 3 = 1 left after the grid; none (the quick grid's calibration): 3 times each."""
    from neural_cost.analysis import calibrate_kernels

    timed: list[str] = []

    def time_once(adapter, item, *, profiled=True):
        timed.append(item.program.name + ("" if profiled else "-"))

    monkeypatch.setattr(calibrate_kernels, "LOOP_PAUSE", 0.0)
    monkeypatch.setattr(calibrate_kernels, "_prepare", lambda adapter, hardware, program: _Item(program))
    monkeypatch.setattr(calibrate_kernels, "_time_once", time_once)
    monkeypatch.setattr(calibrate_kernels, "profiler_cost", lambda items: None)
    monkeypatch.setattr(calibrate_kernels, "_points", lambda adapter, item, touch, cost: [item.program.name])
    plain, other = MicroProgram("plain", _long), MicroProgram("other", _long)
    loop = MicroProgram("loop", _long, trips=10, shorter=MicroProgram("", _short, trips=2))
    adapter = _LoopAdapter(LOOP, {}, {})
    grid = [plain, loop, other]
    points, notes = calibrate_kernels.measure_points(adapter, SPEC, grid, passes=3, loop_passes=2)
    assert (points, notes) == (["plain", "loop", "other"], [])
    assert timed == ["plain", "loop", "loop-", "other"] * 2 + ["plain", "loop", "other"]
    timed.clear()
    calibrate_kernels.measure_points(adapter, SPEC, grid, passes=3, loop_passes=4)
    assert timed == ["plain", "loop", "loop-", "other"] * 3 + ["loop-"]
    timed.clear()
    calibrate_kernels.measure_points(adapter, SPEC, grid, passes=3, loop_passes=0)
    assert timed == ["plain", "loop", "other"] * 3


def test_a_loop_programs_further_pass_times_its_walls_and_no_profile():
    """``_time_once(profiled=False)`` on a profiled loop program: a wake-up, its wall and its twin's, no profile (its
    kernels' times and the unwatched ratios stay the grid passes')."""
    prepared = _prepared()  # two profiled passes
    best, unwatched = dict(prepared.best), list(prepared.unwatched)
    adapter = _LoopAdapter(LOOP, {}, {_long: 20 * US, _short: 9 * US})  # no events: a profile would find none
    _time_once(adapter, prepared, profiled=False)
    assert prepared.walls == [14.5 * US] * 2 + [20 * US] and prepared.short_walls == [7.3 * US] * 2 + [9 * US]
    assert len(prepared.wakes) == 3 and (prepared.best, prepared.unwatched) == (best, unwatched)


class _Item:
    def __init__(self, program: MicroProgram) -> None:
        self.program = program
        self.scored = ()  # no kernel: a wall-timed program of no loop class


def test_a_twin_whose_wall_time_is_not_below_gives_no_loop_time():
    assert _loop_times(_prepared(walls=(7.3 * US, 7.3 * US)), None) == {}  # a stall: read off the events


def test_the_profilers_cost_is_the_median_of_the_loops_where_events_exceed_the_loop():
    first = _prepared()  # (13 − 9) / 20 = 0.2 µs
    second = _prepared({0: [1.0 * US] * 10, 1: [0.5 * US], 2: [0.5 * US] * 10})  # (15 − 9) / 20 = 0.3 µs
    third = _prepared({0: [0.5 * US] * 10, 1: [0.5 * US], 2: [0.1 * US] * 10})  # (6 − 9) / 20 < 0: a gap, no cost
    assert profiler_cost([first, second, third]) == pytest.approx(0.25 * US, rel=1e-9)  # 2 of 3 above
    assert profiler_cost([]) is None  # no loop program: each loop reads its own


def test_no_profiler_cost_when_most_loops_spend_time_between_their_events():
    # TensorFlow's executor runs a while body's ops with its own cost between their events: where
    # fewer than half the loops' events exceed the loop's own time, the cost is not in the events
    first, third = _prepared(), _prepared({0: [0.5 * US] * 10, 1: [0.5 * US], 2: [0.1 * US] * 10})
    assert profiler_cost([third]) == 0.0  # 0 of 1 above
    assert profiler_cost([first, third, third]) == 0.0  # 1 of 3
    assert profiler_cost([first, third]) == pytest.approx(0.2 * US, rel=1e-9)  # 1 of 2: half
    # at no cost, the loop's 9 µs is shared as the events are: fusion.0 10 × 9 / 13, copy.2 3 × 9 / 13
    assert _loop_times(first, 0.0) == pytest.approx({0: 90 / 13 * US, 2: 27 / 13 * US}, rel=1e-9)


def test_a_profile_gathers_at_most_four_thousand_events():
    prepared = _prepared()  # 21 events a run; repeats 400 (0.02 s ÷ 14.5 µs, capped)
    assert _profiled_runs(prepared) == 10  # _PROFILED_RUNS
    many = tuple(Kernel(k.name, k.operations, traffic_bytes=k.traffic_bytes, footprint_bytes=k.footprint_bytes,
                        executions=k.executions * 100, kind=k.kind) for k in LOOP)  # fmt: skip
    adapter = _LoopAdapter(many, {}, {_long: 14.5 * US})
    wide = _prepare(adapter, SPEC, MicroProgram("wide", _long))  # (10 + 1 + 10) × 100 = 2,100 a run
    assert _profiled_runs(wide) == 1  # 10 runs would gather 21,000: 4,000 // 2,100
    adapter = _LoopAdapter(LOOP[:1] + LOOP[2:], {}, {_long: 14.5 * US})  # without copy.1: 10 + 10 = 20 a run
    narrow = _prepare(adapter, SPEC, MicroProgram("narrow", _long))
    narrow.scored = tuple(replace(row, executions=row.executions * 10) for row in narrow.scored)  # 200 a run
    assert _profiled_runs(narrow) == 10  # 10 × 200 = 2,000, under 4,000
    narrow.scored = tuple(replace(row, executions=row.executions * 5 // 2) for row in narrow.scored)  # 500 a run
    assert _profiled_runs(narrow) == 8  # 10 × 500 = 5,000 over 4,000: 4,000 // 500


@pytest.mark.parametrize(
    ("framework", "kinds"),
    [("jax", ("scan", "fori_loop", "gates", "affine", "draws")), ("tensorflow", ("while cell", "while relu"))],
)
def test_loop_programs_and_their_twins_compile_to_the_same_kernels_at_their_own_trips(framework, kinds):
    pytest.importorskip(framework)
    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.workload import trace_workload

    adapter = adapter_for(framework)
    programs = [p for p in adapter.microbenchmarks() if p.shorter is not None]
    assert {kind for kind in kinds if any(p.name.startswith(kind) for p in programs)} == set(kinds)
    assert all(p.name.startswith(kinds) for p in programs)
    for program in [next(p for p in programs if p.name.startswith(kind)) for kind in kinds]:
        short = program.shorter
        assert short is not None and 0 < short.trips < program.trips
        kernels = []
        for each in (program, short):
            adapter.benchmark(each.fn, *each.args, warmup=1, repeats=1)  # compiles: the trace reads its kernels
            kernels.append(trace_workload(adapter, each.fn, each.args, each.kwargs, each.trace_options).kernels)
        long_kernels, short_kernels = kernels
        assert [k.name for k in long_kernels] == [k.name for k in short_kernels], program.name
        pairs = zip(long_kernels, short_kernels, strict=True)
        looped = [(k.executions, s.executions) for k, s in pairs if k.executions > 1]
        # in proportion to the trips (a draw's threefry loop: 5 a trip); a TensorFlow loop's condition
        # runs once more than its body (its last test)
        assert looped and all(n * short.trips == m * program.trips or (n - 1) * short.trips == (m - 1) * program.trips
                              for n, m in looped), (program.name, looped)  # fmt: skip
